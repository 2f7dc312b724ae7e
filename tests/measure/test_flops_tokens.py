from __future__ import annotations

import math

import pytest
import torch

from kgit.measure.flops import bytes_of, gbps, gemm_backward_flops, gemm_flops, tflops
from kgit.measure.tokens import DISTRIBUTIONS, group_sizes


def test_gemm_counts() -> None:
    assert gemm_flops(2, 3, 4) == 48
    assert gemm_flops(2, 3, 4, batch=5) == 240
    assert gemm_backward_flops(2, 3, 4) == 96
    # 4096³ in 0.2 ms: 687.19 TFLOP/s
    assert tflops(gemm_flops(4096, 4096, 4096), 0.2) == pytest.approx(687.194767, rel=1e-6)
    assert math.isnan(tflops(1.0, 0.0))


def test_bandwidth() -> None:
    x = torch.zeros(1024, 256, dtype=torch.float16)
    assert bytes_of(x, torch.zeros(256, dtype=torch.float16)) == 1024 * 256 * 2 + 512
    assert gbps(2e9, 1000.0) == pytest.approx(2.0)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_group_sizes_are_deterministic_and_bounded(distribution: str) -> None:
    sizes = group_sizes(distribution, 8, 128, "shape-a")
    assert sizes == group_sizes(distribution, 8, 128, "shape-a")
    assert len(sizes) == 8 and all(s >= 0 for s in sizes)
    assert sum(sizes) <= 8 * 128


def test_uniform_and_skewed_groups() -> None:
    assert group_sizes("uniform", 4, 10, "x") == [10, 10, 10, 10]
    skewed = group_sizes("skewed", 8, 100, "x")
    assert sum(skewed) == 800 and max(skewed) >= 400 and 0 in skewed


def test_routed_groups_respect_capacity_and_vary() -> None:
    sizes = group_sizes("top1_cf1.25", 8, 1000, "x")
    assert max(sizes) <= math.ceil(1.25 * 1000)
    assert len(set(sizes)) > 1  # not the uniform shortcut
    assert max(group_sizes("top2_cf1.0", 8, 1000, "x")) <= 1000


def test_unknown_distribution() -> None:
    with pytest.raises(ValueError, match="unknown distribution"):
        group_sizes("zipf", 4, 10, "x")
