"""Quick harness for the example RMSNorm: the memory template with this folder's kernel.

    python bench_rmsnorm.py --summary-csv out.csv [--shapes shapes.json] [--repeats N]

Writes the frozen memory schema; exit 0 all PASS, 1 some FAIL, 2 cannot run here.
"""

from __future__ import annotations

import rmsnorm_kernel  # imported before anything jit-decorates: it selects the interpreter on CPU
import torch

from kgit.measure.harness import Settings, run_harness
from kgit.measure.memory import memory_row
from kgit.measure.report import Row
from kgit.measure.shapes import Shape
from kgit.records.schema import MEMORY_COLUMNS


def bytes_moved(m: int, n: int, size: int) -> tuple[int, int]:
    # Forward reads x and w, writes y; backward reads x, dy and w, writes dx and dw.
    return (2 * m * n + n) * size, (3 * m * n + 2 * n) * size


def default_shapes(device: torch.device) -> list[Shape]:
    if device.type == "cuda":
        sizes = [(1024, 1024), (4096, 4096), (16384, 4096), (32768, 8192)]
    else:
        sizes = [(16, 64), (64, 256), (128, 512)]
    return [{"label": f"rmsnorm_{m}x{n}", "M": m, "N": n} for m, n in sizes]


def bench_one_shape(shape: Shape, settings: Settings) -> Row:
    return memory_row(
        shape,
        settings,
        rmsnorm_kernel.rmsnorm,
        reference=rmsnorm_kernel.rmsnorm_reference,
        bytes_moved=bytes_moved,
    )


if __name__ == "__main__":
    raise SystemExit(run_harness(bench_one_shape, MEMORY_COLUMNS, default_shapes=default_shapes))
