"""Quick harness of the plain-torch two-path RMSNorm: the memory template with this kernel and
an independent reference."""

import torch
import two_paths_py

from kgit.measure.harness import Settings, run_harness
from kgit.measure.memory import memory_row
from kgit.measure.report import Row
from kgit.measure.shapes import Shape
from kgit.records.schema import MEMORY_COLUMNS


def reference(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * w


def bytes_moved(m: int, n: int, size: int) -> tuple[int, int]:
    return (2 * m * n + n) * size, (3 * m * n + 2 * n) * size


def default_shapes(device: torch.device) -> list[Shape]:
    return [{"label": "r5x300", "M": 5, "N": 300}]


def bench_one_shape(shape: Shape, settings: Settings) -> Row:
    return memory_row(
        shape, settings, two_paths_py.rms_norm, reference=reference, bytes_moved=bytes_moved
    )


if __name__ == "__main__":
    raise SystemExit(run_harness(bench_one_shape, MEMORY_COLUMNS, default_shapes=default_shapes))
