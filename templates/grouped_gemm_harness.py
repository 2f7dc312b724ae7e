"""kgit quick harness template: grouped GEMM (MoE experts), forward + backward, GEMM schema.

out[rows of group g] = x[rows of group g] · w[g], with x: (T, K), w: (G, K, N), T = Σ sizes.
In the row, B = number of groups and M = nominal tokens per group; TFLOPS use the real rows
(2·T·N·K forward). Each shape names a token distribution (kgit.measure.tokens): uniform,
top2_cf1.0, top1_cf1.25, skewed (one expert ≥50%, an empty group). Copy, plug in, run:

    python bench/quick_test_bench.py --summary-csv out.csv [--shapes shapes.json] [--repeats N]

Shapes: a JSON list of {"label", "B", "M", "N", "K", "distribution", optional "dtype"}.
Exit 0 all PASS, 1 some FAIL (a shape that raises is a FAIL row of NaN), 2 cannot run here.
"""

from __future__ import annotations

import math

import torch

from kgit.measure.flops import gemm_flops
from kgit.measure.gemm import gemm_row, shape_dtype
from kgit.measure.harness import Settings, run_harness
from kgit.measure.report import Row
from kgit.measure.shapes import Shape
from kgit.measure.tokens import DISTRIBUTIONS, group_sizes
from kgit.records.schema import GEMM_COLUMNS


def reference(x: torch.Tensor, w: torch.Tensor, sizes: list[int]) -> torch.Tensor:
    return torch.cat([part @ w[g] for g, part in enumerate(x.split(sizes))])


# >>> plug in the kernel under optimization: a differentiable grouped GEMM. It must handle any
# >>> sizes, empty groups included; `sizes` may also be passed to it as a device tensor.
def grouped_mm(x: torch.Tensor, w: torch.Tensor, sizes: list[int]) -> torch.Tensor:
    return reference(x, w, sizes)


def default_shapes(device: torch.device) -> list[Shape]:
    groups, per_group, n, k = (8, 2048, 4096, 4096) if device.type == "cuda" else (4, 32, 64, 64)
    return [
        {"label": f"grouped_{d}", "B": groups, "M": per_group, "N": n, "K": k, "distribution": d}
        for d in DISTRIBUTIONS
    ]


def bench_one_shape(shape: Shape, settings: Settings) -> Row:
    groups, n, k = int(shape["B"]), int(shape["N"]), int(shape["K"])
    sizes = group_sizes(str(shape["distribution"]), groups, int(shape["M"]), str(shape["label"]))
    dtype = shape_dtype(shape, settings)

    def make_inputs() -> list[torch.Tensor]:
        x = torch.randn(sum(sizes), k, device=settings.device) / math.sqrt(k)
        w = torch.randn(groups, k, n, device=settings.device)
        return [x.to(dtype), w.to(dtype)]

    return gemm_row(
        shape,
        settings,
        lambda x, w: grouped_mm(x, w, sizes),
        reference=lambda x, w: reference(x, w, sizes),
        make_inputs=make_inputs,
        flop=gemm_flops(sum(sizes), n, k),
    )


if __name__ == "__main__":
    raise SystemExit(run_harness(bench_one_shape, GEMM_COLUMNS, default_shapes=default_shapes))
