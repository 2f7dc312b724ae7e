"""A memory-bound Triton RMSNorm, y = x · rsqrt(mean(x²) + eps) · w, with dx and dw backward.

`rmsnorm(x, w)` is the autograd entry point. Each row is one block (N up to a few thousand);
statistics are kept in fp32. Without a GPU the kernels run in Triton's interpreter.
"""

from __future__ import annotations

import os
from typing import Any

import torch

if not torch.cuda.is_available():
    # Read by @triton.jit when it decorates, so it must be set before the kernels below exist.
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton
import triton.language as tl

# --- tunables: a campaign round edits these lines (one `NAME = integer` per line) ---
BLOCK_M = 4
NUM_WARPS = 4
BWD_PROGRAMS_PER_SM = 4
# --- end of tunables ---

EPS = 1e-6


@triton.jit
def rmsnorm_fwd_kernel(x_ptr, w_ptr, y_ptr, rstd_ptr, M, N, stride_x, stride_y, eps,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(
        tl.float32
    )
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / N + eps)
    y = x * rstd[:, None] * w[None, :]
    tl.store(
        y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask
    )
    tl.store(rstd_ptr + rows, rstd, mask=rows < M)


@triton.jit
def rmsnorm_bwd_kernel(dy_ptr, x_ptr, w_ptr, rstd_ptr, dx_ptr, dw_part_ptr, M, N,
                       stride_dy, stride_x, stride_dx,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):  # fmt: skip
    # A fixed grid of programs strides over row blocks and keeps its share of dw in registers:
    # one partial row of dw per program instead of one per row block.
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < N
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    dw = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for block in range(pid, tl.cdiv(M, BLOCK_M), tl.num_programs(0)):
        rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < M) & col_ok[None, :]
        x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(
            tl.float32
        )
        dy = tl.load(dy_ptr + rows[:, None] * stride_dy + cols[None, :], mask=mask, other=0.0).to(
            tl.float32
        )
        rstd = tl.load(rstd_ptr + rows, mask=rows < M, other=0.0)
        x_hat = x * rstd[:, None]
        w_dy = w[None, :] * dy
        mean_term = tl.sum(x_hat * w_dy, axis=1) / N
        dx = (w_dy - x_hat * mean_term[:, None]) * rstd[:, None]
        tl.store(
            dx_ptr + rows[:, None] * stride_dx + cols[None, :],
            dx.to(dx_ptr.dtype.element_ty),
            mask=mask,
        )
        dw += tl.sum(dy * x_hat, axis=0)
    tl.store(dw_part_ptr + pid * N + cols, dw, mask=col_ok)


def _block_n(n: int) -> int:
    return triton.next_power_of_2(n)


def _bwd_programs(m: int, device: torch.device) -> int:
    blocks = triton.cdiv(m, BLOCK_M)
    if device.type != "cuda":
        return 1  # the interpreter pays per program: one program loops over every row block
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    return min(blocks, sms * BWD_PROGRAMS_PER_SM)


def rmsnorm_forward(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """y and the per-row rstd (fp32) that backward reuses."""
    m, n = x.shape
    y = torch.empty_like(x)
    rstd = torch.empty(m, dtype=torch.float32, device=x.device)
    grid = (triton.cdiv(m, BLOCK_M),)
    rmsnorm_fwd_kernel[grid](x, w, y, rstd, m, n, x.stride(0), y.stride(0), EPS,
                             BLOCK_M=BLOCK_M, BLOCK_N=_block_n(n), num_warps=NUM_WARPS)  # fmt: skip
    return y, rstd


def rmsnorm_backward(
    dy: torch.Tensor, x: torch.Tensor, w: torch.Tensor, rstd: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """dx and dw of `rmsnorm_forward`."""
    m, n = x.shape
    dy = dy.contiguous()
    dx = torch.empty_like(x)
    programs = _bwd_programs(m, x.device)
    dw_part = torch.empty(programs, n, dtype=torch.float32, device=x.device)
    rmsnorm_bwd_kernel[(programs,)](dy, x, w, rstd, dx, dw_part, m, n,
                                    dy.stride(0), x.stride(0), dx.stride(0),
                                    BLOCK_M=BLOCK_M, BLOCK_N=_block_n(n), num_warps=NUM_WARPS)  # fmt: skip
    return dx, dw_part.sum(dim=0).to(w.dtype)


class RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        if x.ndim != 2 or w.shape != (x.shape[1],):
            raise ValueError(
                f"rmsnorm needs x (M, N) and w (N,), got {tuple(x.shape)}, {tuple(w.shape)}"
            )
        x = x.contiguous()
        y, rstd = rmsnorm_forward(x, w)
        ctx.save_for_backward(x, w, rstd)
        return y

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w, rstd = ctx.saved_tensors
        return rmsnorm_backward(dy, x, w, rstd)


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Differentiable RMSNorm over the last dimension of a 2-D `x` through the Triton kernels."""
    return RMSNorm.apply(x, w)


def rmsnorm_reference(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The same op in plain torch, for tests and the harness's SNR."""
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS) * w
