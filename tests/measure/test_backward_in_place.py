"""time_backward on a kernel whose backward writes the gradients into its saved inputs and
returns them, as Liger-Kernel's SwiGLU does: every shape FAILed at baseline ("A view was
created in no_grad mode and its base ... has been modified inplace") while its checks passed."""

from __future__ import annotations

import math

import torch

from kgit.measure.fwdbwd import time_backward


class _GatedProduct(torch.autograd.Function):
    """c = a * b, whose backward overwrites the saved a and b with the gradients."""

    @staticmethod
    def forward(ctx, a, b):  # type: ignore[no-untyped-def]
        shape = a.shape
        a, b = a.view(-1, shape[-1]), b.view(-1, shape[-1])  # as Liger's kernels flatten
        ctx.save_for_backward(a, b)
        return (a * b).view(*shape)

    @staticmethod
    def backward(ctx, grad):  # type: ignore[no-untyped-def]
        a, b = ctx.saved_tensors
        grad = grad.reshape(a.shape)
        da = grad * b
        # Through .data, as a Triton kernel writes memory: autograd's version counters see
        # nothing, as they see nothing of Liger's in-place stores.
        b.data.copy_(grad * a)
        a.data.copy_(da)
        return a.view(*grad.shape), b.view(*grad.shape)


def gated_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _GatedProduct.apply(a, b)


def test_a_backward_that_returns_its_saved_inputs_is_timed() -> None:
    def make_inputs() -> list[torch.Tensor]:
        return [torch.randn(64, 64), torch.randn(64, 64)]

    timing = time_backward(gated_product, make_inputs, repeats=3, warmup_ms=5.0)
    assert timing.samples and all(math.isfinite(ms) and ms > 0 for ms in timing.samples)
