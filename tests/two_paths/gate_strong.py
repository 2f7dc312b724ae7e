"""The strong gate: the kernel against an independent float64 reference, on wide rows with
ragged edges, and nothing written past the output."""

import torch
import two_paths


def _inputs(m, n):
    gen = torch.Generator().manual_seed(m * 31 + n)
    return torch.randn(m, n, generator=gen), 1.0 + 0.1 * torch.randn(n, generator=gen)


def test_matches_float64_reference():
    for m, n in [(3, 300), (2, 1000)]:
        x, w = _inputs(m, n)
        y = two_paths.rms_norm(x, w)
        ref = x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()
        torch.testing.assert_close(y.double(), ref, rtol=1e-5, atol=1e-5)


def test_writes_nothing_past_the_output():
    x, w = _inputs(3, 300)
    buffer = torch.full((4 * 300,), 7.0)
    two_paths.rms_norm_forward(x, w, out=buffer[: 3 * 300].view(3, 300))
    assert (buffer[3 * 300 :] == 7.0).all()
