"""kgit quick harness template: GEMM, forward + backward, frozen GEMM schema.

Copy into the campaign (e.g. as quick_test_bench.py), plug the kernel in where marked, run:

    python bench/quick_test_bench.py --summary-csv out.csv [--shapes shapes.json] [--repeats N]

Shapes: a JSON list of {"label", "M", "N", "K", optional "B", optional "dtype": bf16|fp16|fp32}.
Exit 0 all PASS, 1 some FAIL (a shape that raises is a FAIL row of NaN), 2 cannot run here.
"""

from __future__ import annotations

import torch

from kgit.measure.gemm import gemm_row
from kgit.measure.harness import Settings, run_harness
from kgit.measure.report import Row
from kgit.measure.shapes import Shape
from kgit.records.schema import GEMM_COLUMNS


# >>> plug in the kernel under optimization: a differentiable C = A·B (A: M×K, B: K×N). <<<
def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(a, b)


def default_shapes(device: torch.device) -> list[Shape]:
    if device.type == "cuda":
        sizes = [(256, 256, 256), (1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192)]
    else:
        sizes = [(64, 64, 64), (128, 128, 128)]
    return [{"label": f"gemm_{m}x{n}x{k}", "M": m, "N": n, "K": k} for m, n, k in sizes]


def bench_one_shape(shape: Shape, settings: Settings) -> Row:
    return gemm_row(shape, settings, matmul)


if __name__ == "__main__":
    raise SystemExit(run_harness(bench_one_shape, GEMM_COLUMNS, default_shapes=default_shapes))
