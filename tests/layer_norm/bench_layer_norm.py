"""Quick harness of the LayerNorm: the memory template, with a bias of the harness's own (random,
fixed per width) and torch's layer_norm as the reference."""

import layer_norm  # before anything jit-decorates: it selects the interpreter on CPU
import torch

from kgit.measure.harness import Settings, run_harness
from kgit.measure.memory import memory_row
from kgit.measure.report import Row
from kgit.measure.shapes import Shape
from kgit.records.schema import MEMORY_COLUMNS


def _bias(n: int, like: torch.Tensor) -> torch.Tensor:
    gen = torch.Generator().manual_seed(n)
    return torch.randn(n, generator=gen).to(like.device, like.dtype)


def op(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return layer_norm.layer_norm(x, w, _bias(x.shape[-1], x))


def reference(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    n = x.shape[-1]
    return torch.nn.functional.layer_norm(x, (n,), w, _bias(n, x), layer_norm.EPS)


def bytes_moved(m: int, n: int, size: int) -> tuple[int, int]:
    return (2 * m * n + 2 * n) * size, (3 * m * n + 3 * n) * size


def default_shapes(device: torch.device) -> list[Shape]:
    return [{"label": "r5x300", "M": 5, "N": 300}]


def bench_one_shape(shape: Shape, settings: Settings) -> Row:
    return memory_row(shape, settings, op, reference=reference, bytes_moved=bytes_moved)


if __name__ == "__main__":
    raise SystemExit(run_harness(bench_one_shape, MEMORY_COLUMNS, default_shapes=default_shapes))
