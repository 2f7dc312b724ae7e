"""kgit's measuring library: what a campaign's harness imports to time, check and report a kernel.

Nothing in kgit's CLI imports this package; it needs torch (and triton for the examples).
"""

from __future__ import annotations

from kgit.measure.correctness import (
    allclose,
    check_written,
    poisoned_like,
    reference_dtype,
    snr_db,
    snr_threshold_db,
    tolerances,
)
from kgit.measure.flops import bytes_of, gbps, gemm_backward_flops, gemm_flops, tflops
from kgit.measure.harness import CannotRun, run_harness
from kgit.measure.report import fail_row, format_value, write_summary_csv
from kgit.measure.shapes import dtype_of, load_shapes
from kgit.measure.timing import Timing, time_fn

__all__ = [
    "CannotRun",
    "Timing",
    "allclose",
    "bytes_of",
    "check_written",
    "dtype_of",
    "fail_row",
    "format_value",
    "gbps",
    "gemm_backward_flops",
    "gemm_flops",
    "load_shapes",
    "poisoned_like",
    "reference_dtype",
    "run_harness",
    "snr_db",
    "snr_threshold_db",
    "tflops",
    "time_fn",
    "tolerances",
    "write_summary_csv",
]
