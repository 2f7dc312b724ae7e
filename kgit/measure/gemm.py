"""One GEMM shape measured for the frozen GEMM schema: SNR of out/dA/dB, forward and backward.

Shared by the GEMM templates and the bundled example so that all write identical rows; a
harness passes its own `matmul` (the kernel under optimization).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from kgit.measure.flops import gemm_flops, tflops
from kgit.measure.fwdbwd import Op
from kgit.measure.fwdbwd_row import RowSchema, fwdbwd_row
from kgit.measure.harness import Settings
from kgit.measure.report import Row
from kgit.measure.shapes import Shape, dtype_of
from kgit.records.schema import GEMM_COLUMNS

GEMM_ROW = RowSchema(GEMM_COLUMNS, ("out_snr", "da_snr", "db_snr"), "TFLOPS", tflops)


def gemm_operands(
    batch: int, m: int, n: int, k: int, dtype: torch.dtype, device: torch.device
) -> list[torch.Tensor]:
    """A (M×K) and B (K×N), batched when `batch` > 1, scaled so C has unit variance."""
    lead = (batch,) if batch > 1 else ()
    if dtype.itemsize < 2:  # no randn in 8-bit types: drawn in float32, then cast
        a = torch.randn(*lead, m, k, device=device) / math.sqrt(k)
        return [a.to(dtype), torch.randn(*lead, k, n, device=device).to(dtype)]
    # Drawn in their own type, scaled in place: float32 draws freed between the kept operands
    # of an input pool fragmented the allocator's cache, and the example GEMM's plain pass on an
    # H100 held 24.6 GiB for 19.8 GiB of tensors.
    a = torch.randn(*lead, m, k, device=device, dtype=dtype).div_(math.sqrt(k))
    return [a, torch.randn(*lead, k, n, device=device, dtype=dtype)]


def shape_dtype(shape: Shape, settings: Settings) -> torch.dtype:
    """The shape's dtype; by default bf16 on a GPU and fp32 in the CPU interpreter."""
    return dtype_of(shape, torch.bfloat16 if settings.device.type == "cuda" else torch.float32)


def gemm_row(
    shape: Shape,
    settings: Settings,
    matmul: Op,
    *,
    reference: Op = torch.matmul,
    make_inputs: Callable[[], list[torch.Tensor]] | None = None,
    flop: int | None = None,
) -> Row:
    """Check then time `matmul(a, b)` forward and backward at one shape; a GEMM-schema row.

    By default the operands are A (M×K), B (K×N) and the work 2·B·M·N·K; a grouped or otherwise
    unusual GEMM passes its own `make_inputs` and `flop` (forward FLOPs; backward counts 2×).
    """
    batch, m, n, k = int(shape.get("B", 1)), int(shape["M"]), int(shape["N"]), int(shape["K"])
    dtype = shape_dtype(shape, settings)
    make = make_inputs or (lambda: gemm_operands(batch, m, n, k, dtype, settings.device))
    work = flop if flop is not None else gemm_flops(m, n, k, batch)
    sizes = {"B": batch, "M": m, "N": n, "K": k}
    return fwdbwd_row(
        GEMM_ROW,
        shape,
        settings,
        matmul,
        reference,
        make,
        dtype=dtype,
        sizes=sizes,
        work=(work, 2 * work),
    )
