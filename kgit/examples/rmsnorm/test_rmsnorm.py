"""Tests of the example RMSNorm: y, dx and dw against float64, ragged edges, no unwritten
element. On CPU they run in Triton's interpreter with fp32; on a GPU also with bf16."""

from __future__ import annotations

import pytest
import rmsnorm_kernel
import torch

on_gpu = torch.cuda.is_available()
DEVICE = "cuda" if on_gpu else "cpu"


def _inputs(m: int, n: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator(device="cpu").manual_seed(m * 7 + n)
    x = torch.randn(m, n, generator=gen)
    w = 1.0 + 0.1 * torch.randn(n, generator=gen)
    return x.to(DEVICE, dtype), w.to(DEVICE, dtype)


def _check(m: int, n: int, dtype: torch.dtype, tol: float) -> None:
    x, w = _inputs(m, n, dtype)
    dy = torch.randn(m, n, device=DEVICE).to(dtype)
    x_k, w_k = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
    y = rmsnorm_kernel.rmsnorm(x_k, w_k)
    y.backward(dy)
    x_r, w_r = x.double().requires_grad_(True), w.double().requires_grad_(True)
    y_r = rmsnorm_kernel.rmsnorm_reference(x_r, w_r)
    y_r.backward(dy.double())
    assert x_k.grad is not None and w_k.grad is not None
    assert x_r.grad is not None and w_r.grad is not None
    torch.testing.assert_close(y.double(), y_r, rtol=tol, atol=tol)
    torch.testing.assert_close(x_k.grad.double(), x_r.grad, rtol=tol, atol=tol)
    # dw sums M rows: its error grows with M, so compare it relative to its own scale.
    scale = float(w_r.grad.abs().max())
    torch.testing.assert_close(w_k.grad.double() / scale, w_r.grad / scale, rtol=tol, atol=tol)


@pytest.mark.parametrize(("m", "n"), [(8, 64), (13, 100), (1, 7)])
def test_fp32_matches_float64(m: int, n: int) -> None:
    _check(m, n, torch.float32, 1e-4)


def test_every_output_element_is_written() -> None:
    x, w = _inputs(10, 48, torch.float32)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True  # type: ignore[attr-defined]
    try:  # torch.empty now returns NaN: an element the kernel skips stays NaN
        y, rstd = rmsnorm_kernel.rmsnorm_forward(x, w)
    finally:
        torch.use_deterministic_algorithms(False)
    assert torch.isfinite(y).all() and torch.isfinite(rstd).all()


def test_rejects_bad_weight() -> None:
    x, w = _inputs(4, 16, torch.float32)
    with pytest.raises(ValueError, match="rmsnorm needs"):
        rmsnorm_kernel.rmsnorm(x, w[:8])


@pytest.mark.skipif(not on_gpu, reason="needs a CUDA GPU")
@pytest.mark.parametrize(("m", "n"), [(4096, 4096), (1000, 1000)])
def test_bf16_on_gpu(m: int, n: int) -> None:
    _check(m, n, torch.bfloat16, 2e-2)
