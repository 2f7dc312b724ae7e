"""A LayerNorm forward in Triton (backward in torch), for the gate audit's test data
(tests/test_gate_audit_lines.py). Its tests (gate_upstream.py) are written as upstream LayerNorm
tests often are: zero bias and unit weight, so a kernel that subtracts the bias, or ignores the
weight, passes them."""

from __future__ import annotations

import os
from typing import Any

import torch

if not torch.cuda.is_available():
    # Read by @triton.jit when it decorates, so it must be set before the kernel below exists.
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton
import triton.language as tl

EPS = 1e-5


@triton.jit
def _layer_norm_forward_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    centered = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centered * centered, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * N + cols, centered * rstd * w + b, mask=mask)


def layer_norm_forward(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    y = torch.empty_like(x)
    _layer_norm_forward_kernel[(m,)](x, w, b, y, n, EPS, BLOCK_N=triton.next_power_of_2(n))
    return y


class _LayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w, b)
        return layer_norm_forward(x.contiguous(), w, b)

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x, w, b = ctx.saved_tensors
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_(True) for t in (x, w, b)]
            y = torch.nn.functional.layer_norm(leaves[0], (x.shape[-1],), *leaves[1:], EPS)
            return torch.autograd.grad(y, leaves, dy)


def layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _LayerNorm.apply(x, w, b)
