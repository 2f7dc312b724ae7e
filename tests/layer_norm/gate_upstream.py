"""LayerNorm tests as upstream projects often write them: torch's layer_norm as the reference,
ragged widths, and the module's default parameters: zero bias, unit weight."""

import layer_norm
import pytest
import torch


@pytest.mark.parametrize("m,n", [(3, 300), (2, 100)])
def test_matches_torch(m, n):
    x = torch.randn(m, n, generator=torch.Generator().manual_seed(n))
    w, b = torch.ones(n), torch.zeros(n)
    y = layer_norm.layer_norm(x, w, b)
    ref = torch.nn.functional.layer_norm(x, (n,), w, b, layer_norm.EPS)
    torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-5)
