"""One shape of a memory-bound op (x, w) -> y measured for the frozen memory schema.

The op takes an activation `x` (M×N) and a weight `w` (N), like a normalization; the row carries
forward/backward GB/s over the bytes the op must move at least once, and out/dx/dw SNR.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from kgit.measure.flops import gbps
from kgit.measure.fwdbwd import Op
from kgit.measure.fwdbwd_row import RowSchema, fwdbwd_row
from kgit.measure.harness import Settings
from kgit.measure.report import Row
from kgit.measure.shapes import Shape, dtype_of
from kgit.records.schema import MEMORY_COLUMNS

MEMORY_ROW = RowSchema(MEMORY_COLUMNS, ("out_snr", "dx_snr", "dw_snr"), "GB/s", gbps)

# (M, N, element size) -> bytes moved by the forward, and by the backward.
BytesModel = Callable[[int, int, int], tuple[int, int]]


def memory_row(
    shape: Shape,
    settings: Settings,
    op: Op,
    *,
    reference: Op,
    bytes_moved: BytesModel,
    default_dtype: torch.dtype | None = None,
) -> Row:
    """Check then time `op(x, w)` forward and backward at one (M, N) shape; a memory-schema row."""
    m, n = int(shape["M"]), int(shape["N"])
    on_gpu = settings.device.type == "cuda"
    dtype = dtype_of(shape, default_dtype or (torch.bfloat16 if on_gpu else torch.float32))

    def make_inputs() -> list[torch.Tensor]:
        x = torch.randn(m, n, device=settings.device, dtype=dtype)
        w = 1.0 + 0.1 * torch.randn(n, device=settings.device, dtype=dtype)
        return [x, w]

    sizes = {"M": m, "N": n}
    return fwdbwd_row(
        MEMORY_ROW,
        shape,
        settings,
        op,
        reference,
        make_inputs,
        dtype=dtype,
        sizes=sizes,
        work=bytes_moved(m, n, dtype.itemsize),
    )
