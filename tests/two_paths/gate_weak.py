"""The weak gate: two entry points of the same kernel compared with each other, and the output's
shape and dtype. Any wrong kernel agrees with itself."""

import torch
import two_paths


def test_the_module_agrees_with_the_function():
    x, w = torch.randn(3, 300), torch.ones(300)
    y = two_paths.rms_norm(x, w)
    assert y.shape == x.shape and y.dtype == x.dtype
    torch.testing.assert_close(two_paths.RMSNorm(w)(x), y)
