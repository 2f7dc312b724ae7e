"""One shape of a memory-bound op (x, w) -> y measured for the frozen memory schema.

The op takes an activation `x` (M×N) and a weight `w` (N), like a normalization; the row carries
forward/backward GB/s over the bytes the op must move at least once, and out/dx/dw SNR.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from kgit.measure.correctness import snr_threshold_db
from kgit.measure.flops import gbps
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
from kgit.records.schema import MEMORY_COLUMNS, PASS

GPU_REPEATS = 100
CPU_REPEATS = 3
GPU_WARMUP_MS = 250.0

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
    repeats = settings.repeats or (GPU_REPEATS if on_gpu else CPU_REPEATS)
    warmup_ms = GPU_WARMUP_MS if on_gpu else 0.0

    def make_inputs() -> list[torch.Tensor]:
        x = torch.randn(m, n, device=settings.device, dtype=dtype)
        w = 1.0 + 0.1 * torch.randn(n, device=settings.device, dtype=dtype)
        return [x, w]

    snrs = forward_backward_snr(op, reference, make_inputs())
    row: dict[str, object] = {"label": shape["label"], "M": m, "N": n}
    row.update(out_snr=snrs[0], dx_snr=snrs[1], dw_snr=snrs[2])
    if min(snrs) < snr_threshold_db(dtype):
        return {**fail_row(MEMORY_COLUMNS, shape), **row}
    fwd_bytes, bwd_bytes = bytes_moved(m, n, dtype.itemsize)
    fwd = time_forward(op, make_inputs, repeats=repeats, warmup_ms=warmup_ms)
    bwd = time_backward(op, make_inputs, repeats=repeats, warmup_ms=warmup_ms)
    late = wrong_when_timed(fwd, reference, snr_threshold_db(dtype))
    if late is None:
        late = wrong_after_timing(op, reference, make_inputs(), snr_threshold_db(dtype))
    if late is not None:
        return {**fail_row(MEMORY_COLUMNS, shape), **row, "out_snr": late}
    fwd_rate, bwd_rate = rate(fwd_bytes, fwd, gbps), rate(bwd_bytes, bwd, gbps)
    row.update({"Check": PASS, "Forward GB/s": fwd_rate.value, "Forward GB/s_stddev": fwd_rate.std})
    row.update({"Backward GB/s": bwd_rate.value, "Backward GB/s_stddev": bwd_rate.std})
    row.update({"Forward Time (ms)": fwd.median_ms, "Backward Time (ms)": bwd.median_ms})
    return row
