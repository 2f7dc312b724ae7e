"""The reference gate: the kernel's output and gradients against an independent float64
reference, on wide rows with ragged widths."""

import torch
import two_paths_py


def _inputs(m, n):
    gen = torch.Generator().manual_seed(m * 31 + n)
    return torch.randn(m, n, generator=gen), 1.0 + 0.1 * torch.randn(n, generator=gen)


def _reference(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def test_forward_and_backward_match_float64():
    for m, n in [(3, 300), (2, 1000)]:
        x, w = _inputs(m, n)
        x64, w64 = x.double().requires_grad_(), w.double().requires_grad_()
        x32, w32 = x.clone().requires_grad_(), w.clone().requires_grad_()
        y, ref = two_paths_py.rms_norm(x32, w32), _reference(x64, w64)
        torch.testing.assert_close(y.double(), ref, rtol=1e-5, atol=1e-5)
        dy = torch.randn(m, n, generator=torch.Generator().manual_seed(n))
        y.backward(dy)
        ref.backward(dy.double())
        torch.testing.assert_close(x32.grad.double(), x64.grad, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(w32.grad.double(), w64.grad, rtol=1e-4, atol=1e-4)
