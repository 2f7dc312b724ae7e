"""One GEMM shape measured for the frozen GEMM schema: SNR of out/dA/dB, forward and backward.

Shared by the GEMM templates and the bundled example so that all write identical rows; a
harness passes its own `matmul` (the kernel under optimization).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from kgit.measure.correctness import snr_threshold_db
from kgit.measure.flops import gemm_flops, tflops
from kgit.measure.fwdbwd import (
    Op,
    forward_backward_snr,
    rate,
    time_backward,
    time_forward,
    wrong_after_timing,
    wrong_when_timed,
)
from kgit.measure.harness import Settings
from kgit.measure.report import Row, fail_row
from kgit.measure.shapes import Shape, dtype_of
from kgit.records.schema import GEMM_COLUMNS, PASS

GPU_REPEATS = 100
CPU_REPEATS = 3
GPU_WARMUP_MS = 250.0


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
    on_gpu = settings.device.type == "cuda"
    dtype = shape_dtype(shape, settings)
    repeats = settings.repeats or (GPU_REPEATS if on_gpu else CPU_REPEATS)
    warmup_ms = GPU_WARMUP_MS if on_gpu else 0.0
    make = make_inputs or (lambda: gemm_operands(batch, m, n, k, dtype, settings.device))
    work = flop if flop is not None else gemm_flops(m, n, k, batch)

    snrs = forward_backward_snr(matmul, reference, make())
    row: dict[str, object] = {"label": shape["label"], "B": batch, "M": m, "N": n, "K": k}
    row.update(out_snr=snrs[0], da_snr=snrs[1], db_snr=snrs[2])
    if min(snrs) < snr_threshold_db(dtype):
        return {**fail_row(GEMM_COLUMNS, shape), **row}
    fwd = time_forward(matmul, make, repeats=repeats, warmup_ms=warmup_ms)
    bwd = time_backward(matmul, make, repeats=repeats, warmup_ms=warmup_ms)
    late = wrong_when_timed(fwd, reference, snr_threshold_db(dtype))
    if late is None:
        late = wrong_after_timing(matmul, reference, make(), snr_threshold_db(dtype))
    if late is not None:
        return {**fail_row(GEMM_COLUMNS, shape), **row, "out_snr": late}
    fwd_rate, bwd_rate = rate(work, fwd, tflops), rate(2 * work, bwd, tflops)
    row.update(
        {"Check": PASS, "Forward TFLOPS": fwd_rate.value, "Forward TFLOPS_stddev": fwd_rate.std}
    )
    row.update({"Backward TFLOPS": bwd_rate.value, "Backward TFLOPS_stddev": bwd_rate.std})
    row.update({"Forward Time (ms)": fwd.median_ms, "Backward Time (ms)": bwd.median_ms})
    return row
