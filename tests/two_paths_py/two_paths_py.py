"""An RMSNorm in plain torch with two code paths chosen by size inside one function, as real
kernels have: whole rows at once for wide rows, blocks of BLOCK_M rows for narrow ones. The gate
audit's test data (tests/test_gate_audit_lines.py): its tests and target shapes use wide rows
only, so no line of the block path ever runs. No Triton function: what runs is known line by
line. The backward is torch's autograd through the same operations."""

from __future__ import annotations

import torch

EPS = 1e-6
WIDE = 256  # rows at least this wide are normalized whole
BLOCK_M = 4


def rms_norm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """y = x * rsqrt(mean(x^2) + eps) * w over the rows of a 2-D x."""
    m, n = x.shape
    if n >= WIDE:
        mean_square = (x * x).sum(dim=1, keepdim=True) / n
        return x * torch.rsqrt(mean_square + EPS) * w
    blocks = []
    for start in range(0, m, BLOCK_M):
        rows = x[start : start + BLOCK_M]
        mean_square = (rows * rows).sum(dim=1, keepdim=True) / n
        blocks.append(rows * torch.rsqrt(mean_square + EPS) * w)
    return torch.cat(blocks)
