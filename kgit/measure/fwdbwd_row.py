"""One shape of a differentiable op checked, then timed forward and backward, as a row of a
frozen schema: what the GEMM rows (gemm.py) and the memory-bound rows (memory.py) share. Each of
them supplies its operands, the work a pass does and its schema's names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch

from kgit.measure.correctness import snr_threshold_db
from kgit.measure.fwdbwd import (
    MakeInputs,
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
from kgit.measure.shapes import Shape
from kgit.records.schema import PASS

GPU_REPEATS = 100
CPU_REPEATS = 3
GPU_WARMUP_MS = 250.0


@dataclass(frozen=True)
class RowSchema:
    """A frozen schema's names: its columns, the SNR columns (the output's first, then each
    input's gradient), and the unit of its rates with the function that computes one from the
    work and the milliseconds (`tflops`, `gbps`)."""

    columns: Sequence[str]
    snr_columns: tuple[str, str, str]
    unit: str
    per_ms: Callable[[float, float], float]


def fwdbwd_row(
    schema: RowSchema,
    shape: Shape,
    settings: Settings,
    op: Op,
    reference: Op,
    make_inputs: MakeInputs,
    *,
    dtype: torch.dtype,
    sizes: Mapping[str, object],
    work: tuple[float, float],
) -> Row:
    """Check `op` against `reference` on one set of inputs, then time its forward and backward
    on fresh ones; the row carries the shape's SIZES, the SNRs and the rates of WORK (forward,
    backward). A FAIL row when the check fails, or when a timed call's output or a call's after
    timing does where the first call passed."""
    threshold = snr_threshold_db(dtype)
    snrs = forward_backward_snr(
        op, reference, make_inputs(), threshold_db=threshold, names=schema.snr_columns
    )
    # An op of more than two inputs (a grouped GEMM's) has its further SNRs checked, not written.
    row: dict[str, object] = {"label": shape["label"], **sizes}
    row.update(zip(schema.snr_columns, snrs, strict=False))
    if min(snrs) < threshold:
        return {**fail_row(schema.columns, shape), **row}
    on_gpu = settings.device.type == "cuda"
    repeats = settings.repeats or (GPU_REPEATS if on_gpu else CPU_REPEATS)
    warmup_ms = GPU_WARMUP_MS if on_gpu else 0.0
    fwd = time_forward(op, make_inputs, repeats=repeats, warmup_ms=warmup_ms)
    bwd = time_backward(op, make_inputs, repeats=repeats, warmup_ms=warmup_ms)
    late = wrong_when_timed(fwd, reference, threshold)
    if late is None:
        late = wrong_after_timing(op, reference, make_inputs(), threshold)
    if late is not None:
        return {**fail_row(schema.columns, shape), **row, schema.snr_columns[0]: late}
    unit = schema.unit
    fwd_rate, bwd_rate = rate(work[0], fwd, schema.per_ms), rate(work[1], bwd, schema.per_ms)
    row.update({"Check": PASS, f"Forward {unit}": fwd_rate.value})
    row.update({f"Forward {unit}_stddev": fwd_rate.std, f"Backward {unit}": bwd_rate.value})
    row.update({f"Backward {unit}_stddev": bwd_rate.std, "Forward Time (ms)": fwd.median_ms})
    row.update({"Backward Time (ms)": bwd.median_ms})
    return row
