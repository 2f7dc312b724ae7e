"""A Triton GEMM with forward and backward, the example kernel of a kgit campaign.

`matmul(a, b)` is the autograd entry point; `mm(a, b, out=None)` launches the kernel once.
Backward reuses the same kernel on transposed views (dA = dC·Bᵀ, dB = Aᵀ·dC): the kernel takes
strides, so no transpose is ever copied. Without a GPU the kernel runs in Triton's interpreter.
"""

from __future__ import annotations

import os
from typing import Any

import torch

if not torch.cuda.is_available():
    # Read by @triton.jit when it decorates, so it must be set before the kernel below exists.
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton
import triton.language as tl

# --- tunables: a campaign round edits these lines (one `NAME = integer` per line) ---
BLOCK_M = 64
BLOCK_N = 64
BLOCK_K = 32
GROUP_M = 8
NUM_WARPS = 4
NUM_STAGES = 3
# On a GPU the config above competes with these in Triton's autotuner; 0 turns that off.
AUTOTUNE = 1
# --- end of tunables ---

_GPU_CONFIGS = [
    (128, 256, 64, 8, 8, 3),
    (128, 128, 64, 8, 8, 4),
    (64, 256, 32, 8, 4, 4),
    (128, 128, 32, 8, 4, 4),
    (64, 64, 64, 8, 4, 4),
]


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # Programs walk C in groups of GROUP_M block-rows so that neighbours share A and B tiles in L2.
    pid = tl.program_id(0)
    blocks_m = tl.cdiv(M, BLOCK_M)
    blocks_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * blocks_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = min(blocks_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    # Masked rather than wrapped (row % M) edges: backward passes transposed views, where a
    # wrapped index would no longer be contiguous in memory along the dimension Triton vectorizes.
    row_ok = rows[:, None] < M
    col_ok = cols[None, :] < N

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - step * BLOCK_K
        a = tl.load(a_ptrs, mask=row_ok & (ks[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(ks[:, None] < k_left) & col_ok, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=row_ok & col_ok)


def _configs() -> list[triton.Config]:
    own = (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, NUM_WARPS, NUM_STAGES)
    candidates = [own] + ([c for c in _GPU_CONFIGS if c != own] if AUTOTUNE else [])
    return [
        triton.Config(
            {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": gm},
            num_warps=warps,
            num_stages=stages,
        )
        for bm, bn, bk, gm, warps, stages in candidates
    ]


_tuned_kernel: Any = None


def _launch(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
    global _tuned_kernel
    m, k = a.shape
    n = b.shape[1]
    args = (a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride())
    if not a.is_cuda:
        grid = (triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N),)
        matmul_kernel[grid](
            *args, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M
        )
        return
    if _tuned_kernel is None:
        _tuned_kernel = triton.autotune(configs=_configs(), key=["M", "N", "K"])(matmul_kernel)

    def grid(meta: dict[str, Any]) -> tuple[int]:
        return (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)

    _tuned_kernel[grid](*args)


def mm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """C = A·B for 2-D A (M×K) and B (K×N) of any strides; writes into `out` when given."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"mm needs (M, K) and (K, N), got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype != b.dtype or a.device != b.device:
        raise ValueError("mm needs A and B of one dtype on one device")
    c = (
        out
        if out is not None
        else torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
    )
    if c.shape != (a.shape[0], b.shape[1]):
        raise ValueError(f"out has shape {tuple(c.shape)}, expected {(a.shape[0], b.shape[1])}")
    _launch(a, b, c)
    return c


class MatMul(torch.autograd.Function):
    """C = A·B with a Triton backward: dA = dC·Bᵀ, dB = Aᵀ·dC, both through `mm`."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        return mm(a, b)

    @staticmethod
    def backward(ctx: Any, grad_c: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        a, b = ctx.saved_tensors
        grad_a = mm(grad_c, b.t()) if ctx.needs_input_grad[0] else None
        grad_b = mm(a.t(), grad_c) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Differentiable C = A·B through the Triton kernel."""
    return MatMul.apply(a, b)
