"""Work counts and rates: GEMM FLOPs, bytes moved, TFLOPS and GB/s from a time in milliseconds."""

from __future__ import annotations

import torch


def gemm_flops(m: int, n: int, k: int, batch: int = 1) -> int:
    """Forward FLOPs of `batch` (M×K)·(K×N) products: one multiply and one add per MAC."""
    return 2 * batch * m * n * k


def gemm_backward_flops(m: int, n: int, k: int, batch: int = 1) -> int:
    """Backward FLOPs: dA = dC·Bᵀ and dB = Aᵀ·dC, two GEMMs of the forward's size."""
    return 2 * gemm_flops(m, n, k, batch)


def tflops(flop: float, ms: float) -> float:
    """TFLOP/s for `flop` operations done in `ms` milliseconds (NaN when the time is not positive)."""
    return flop / (ms * 1e-3) / 1e12 if ms > 0 else float("nan")


def gbps(nbytes: float, ms: float) -> float:
    """GB/s (10⁹ bytes per second) for `nbytes` moved in `ms` milliseconds."""
    return nbytes / (ms * 1e-3) / 1e9 if ms > 0 else float("nan")


def bytes_of(*tensors: torch.Tensor) -> int:
    """Bytes a memory-bound op must read or write at least once: the sum of its tensors' sizes."""
    return sum(t.numel() * t.element_size() for t in tensors)
