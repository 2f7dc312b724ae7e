"""kgit quick harness template: a memory-bound op (x, w) -> y, frozen memory schema.

The op shipped here is RMSNorm; for another op, change `op`, `reference` and `bytes_moved`.
Copy into the campaign, plug the kernel in where marked, run:

    python memory_harness.py --summary-csv out.csv [--shapes shapes.json] [--repeats N]

Shapes: a JSON list of {"label", "M", "N", optional "dtype": bf16|fp16|fp32}.
Exit 0 all PASS, 1 some FAIL (a shape that raises is a FAIL row of NaN), 2 cannot run here.
"""

from __future__ import annotations

import torch

from kgit.measure.harness import Settings, run_harness
from kgit.measure.memory import memory_row
from kgit.measure.report import Row
from kgit.measure.shapes import Shape
from kgit.records.schema import MEMORY_COLUMNS

EPS = 1e-6


def reference(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS) * w


# >>> plug in the kernel under optimization: a differentiable y = op(x, w), x: M×N, w: N. <<<
def op(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return reference(x, w)


def bytes_moved(m: int, n: int, size: int) -> tuple[int, int]:
    # The least the op must move. Forward: read x and w, write y. Backward: read x, dy and w,
    # write dx and dw. Bytes the kernel re-reads do not count: GB/s is against this floor.
    return (2 * m * n + n) * size, (3 * m * n + 2 * n) * size


def default_shapes(device: torch.device) -> list[Shape]:
    sizes = [(4096, 4096), (16384, 4096), (32768, 8192)] if device.type == "cuda" else [(64, 256)]
    return [{"label": f"x_{m}x{n}", "M": m, "N": n} for m, n in sizes]


def bench_one_shape(shape: Shape, settings: Settings) -> Row:
    return memory_row(shape, settings, op, reference=reference, bytes_moved=bytes_moved)


if __name__ == "__main__":
    raise SystemExit(run_harness(bench_one_shape, MEMORY_COLUMNS, default_shapes=default_shapes))
