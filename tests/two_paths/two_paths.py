"""An RMSNorm with two launch paths chosen by shape, as real ones have: a row kernel (one program
a row) for wide rows, a block kernel (BLOCK_M rows a program) for narrow ones. The gate audit's
test data (tests/test_gate_audit_two_paths.py): its tests and target shapes use wide rows only,
so nothing ever launches the block kernel. Forward in Triton; backward in torch."""

from __future__ import annotations

import os
from typing import Any

import torch

if not torch.cuda.is_available():
    # Read by @triton.jit when it decorates, so it must be set before the kernels below exist.
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton
import triton.language as tl

EPS = 1e-6
WIDE = 256  # rows at least this wide take the row kernel
BLOCK_M = 4


@triton.jit
def _row_rms_norm_forward_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    offs = row * N + cols
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + offs, x * rstd * w, mask=mask)


@triton.jit
def _block_rms_norm_forward_kernel(x_ptr, w_ptr, y_ptr, M, N, eps,
                                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / N + eps)
    tl.store(y_ptr + offs, x * rstd[:, None] * w[None, :], mask=mask)


def rms_norm_forward(
    x: torch.Tensor, w: torch.Tensor, out: torch.Tensor | None = None
) -> torch.Tensor:
    """y = x * rsqrt(mean(x^2) + eps) * w over the rows of a contiguous 2-D x, into OUT."""
    m, n = x.shape
    y = torch.empty_like(x) if out is None else out
    block_n = triton.next_power_of_2(n)
    if n >= WIDE:
        _row_rms_norm_forward_kernel[(m,)](x, w, y, n, EPS, BLOCK_N=block_n)
    else:
        grid = (triton.cdiv(m, BLOCK_M),)
        _block_rms_norm_forward_kernel[grid](x, w, y, m, n, EPS, BLOCK_M=BLOCK_M, BLOCK_N=block_n)
    return y


def rms_norm_reference(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS) * w


class _RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return rms_norm_forward(x.contiguous(), w)

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        with torch.enable_grad():
            x_, w_ = x.detach().requires_grad_(True), w.detach().requires_grad_(True)
            dx, dw = torch.autograd.grad(rms_norm_reference(x_, w_), (x_, w_), dy)
        return dx, dw


def rms_norm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The autograd entry point."""
    return _RMSNorm.apply(x, w)


class RMSNorm(torch.nn.Module):
    """The module entry point: the same kernels through `rms_norm`."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight)
