"""Tests of the example GEMM: forward, backward through transposed views, edges, no unwritten
element. On CPU they run in Triton's interpreter with fp32; on a GPU also with bf16."""

from __future__ import annotations

import gemm_kernel
import pytest
import torch

on_gpu = torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(not on_gpu, reason="needs a CUDA GPU")
DEVICE = "cuda" if on_gpu else "cpu"
# On a GPU, fp32 tl.dot runs on TF32 tensor cores: compare at TF32's precision there.
FP32_TOL = 2e-2 if on_gpu else 1e-4


def _pair(m: int, n: int, k: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator(device="cpu").manual_seed(m * 131 + n * 17 + k)
    a = torch.randn(m, k, generator=gen) / k**0.5
    b = torch.randn(k, n, generator=gen)
    return a.to(DEVICE, dtype), b.to(DEVICE, dtype)


@pytest.mark.parametrize(("m", "n", "k"), [(64, 64, 64), (96, 80, 72), (1, 130, 33)])
def test_forward_matches_float64(m: int, n: int, k: int) -> None:
    a, b = _pair(m, n, k, torch.float32)
    out = torch.full((m, n), float("nan"), device=DEVICE)
    gemm_kernel.mm(a, b, out=out)
    ref = a.double() @ b.double()
    assert torch.isfinite(out).all(), "kernel left an element of C unwritten"
    torch.testing.assert_close(out.double(), ref, rtol=FP32_TOL, atol=FP32_TOL)


def test_backward_matches_float64() -> None:
    a, b = _pair(96, 80, 72, torch.float32)
    a.requires_grad_(True)
    b.requires_grad_(True)
    grad_c = torch.randn(96, 80, device=DEVICE)
    gemm_kernel.matmul(a, b).backward(grad_c)
    ref_a = grad_c.double() @ b.detach().double().t()
    ref_b = a.detach().double().t() @ grad_c.double()
    assert a.grad is not None and b.grad is not None
    torch.testing.assert_close(a.grad.double(), ref_a, rtol=FP32_TOL, atol=FP32_TOL)
    torch.testing.assert_close(b.grad.double(), ref_b, rtol=FP32_TOL, atol=FP32_TOL)


def test_strided_views_need_no_copy() -> None:
    a, b = _pair(64, 48, 80, torch.float32)
    a_t = a.t().contiguous().t()  # same values, column-major storage
    out = gemm_kernel.mm(a_t, b)
    torch.testing.assert_close(out.double(), a.double() @ b.double(), rtol=FP32_TOL, atol=FP32_TOL)


def test_rejects_mismatched_shapes() -> None:
    a, b = _pair(8, 8, 8, torch.float32)
    with pytest.raises(ValueError, match="mm needs"):
        gemm_kernel.mm(a, b[:4])


@needs_gpu
@pytest.mark.parametrize(("m", "n", "k"), [(512, 384, 256), (1000, 1000, 1000)])
def test_bf16_forward_backward_on_gpu(m: int, n: int, k: int) -> None:
    a, b = _pair(m, n, k, torch.bfloat16)
    a.requires_grad_(True)
    b.requires_grad_(True)
    grad_c = torch.randn(m, n, device=DEVICE, dtype=torch.bfloat16)
    out = gemm_kernel.matmul(a, b)
    out.backward(grad_c)
    a32, b32, g32 = a.detach().float(), b.detach().float(), grad_c.float()
    torch.testing.assert_close(out.float(), a32 @ b32, rtol=1e-2, atol=1e-2)
    assert a.grad is not None and b.grad is not None
    torch.testing.assert_close(a.grad.float(), g32 @ b32.t(), rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(b.grad.float(), a32.t() @ g32, rtol=1e-2, atol=5e-2)
