"""Quick harness of the two-path RMSNorm: the memory template with this kernel."""

import torch
import two_paths  # before anything jit-decorates: it selects the interpreter on CPU

from kgit.measure.harness import Settings, run_harness
from kgit.measure.memory import memory_row
from kgit.measure.report import Row
from kgit.measure.shapes import Shape
from kgit.records.schema import MEMORY_COLUMNS


def bytes_moved(m: int, n: int, size: int) -> tuple[int, int]:
    return (2 * m * n + n) * size, (3 * m * n + 2 * n) * size


def default_shapes(device: torch.device) -> list[Shape]:
    return [{"label": "r4x300", "M": 4, "N": 300}]


def bench_one_shape(shape: Shape, settings: Settings) -> Row:
    return memory_row(
        shape,
        settings,
        two_paths.rms_norm,
        reference=two_paths.rms_norm_reference,
        bytes_moved=bytes_moved,
    )


if __name__ == "__main__":
    raise SystemExit(run_harness(bench_one_shape, MEMORY_COLUMNS, default_shapes=default_shapes))
