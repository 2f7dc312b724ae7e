"""One shape of a memory-bound op (x, w) -> y measured for the frozen memory schema.

The op takes an activation `x` (M×N), a weight `w` (N) and the kernel's other operands, if any
(LayerNorm's bias), like a normalization; the row carries forward/backward GB/s over the bytes the
op must move at least once, and out/dx/dw SNR (the other operands' gradients are checked too).
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

# (M, N, dtype, device) -> the operands after x and w, made fresh for every call like them.
OtherOperands = Callable[[int, int, torch.dtype, torch.device], list[torch.Tensor]]


def memory_row(
    shape: Shape,
    settings: Settings,
    op: Op,
    *,
    reference: Op,
    bytes_moved: BytesModel,
    default_dtype: torch.dtype | None = None,
    other_operands: OtherOperands | None = None,
) -> Row:
    """Check then time `op(x, w, *others)` forward and backward at one (M, N) shape, OTHERS from
    OTHER_OPERANDS (none by default); a memory-schema row."""
    m, n = int(shape["M"]), int(shape["N"])
    on_gpu = settings.device.type == "cuda"
    dtype = dtype_of(shape, default_dtype or (torch.bfloat16 if on_gpu else torch.float32))

    def make_inputs() -> list[torch.Tensor]:
        x = torch.randn(m, n, device=settings.device, dtype=dtype)
        w = 1.0 + 0.1 * torch.randn(n, device=settings.device, dtype=dtype)
        others = other_operands(m, n, dtype, settings.device) if other_operands else []
        return [x, w, *others]

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
