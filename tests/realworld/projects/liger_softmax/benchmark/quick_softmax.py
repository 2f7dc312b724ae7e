"""kgit quick harness for Liger's softmax (kgit's addition, not upstream's): y = softmax(x, -1).

    python benchmark/quick_softmax.py --summary-csv out.csv [--shapes shapes.json] [--repeats N]

Shapes: {"label", "M", "N", optional "dtype"}: M rows of N columns. Rows up to 65536 wide take
the single-block kernels, wider ones the multi-block kernels. The CSV keeps the memory schema's
conventions with the op's own correctness columns (no weight, so no dw_snr). Exit 0 all PASS,
1 some FAIL, 2 cannot run here.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

if not torch.cuda.is_available():  # before liger_kernel decorates its kernels
    os.environ.setdefault("TRITON_INTERPRET", "1")
# The project is not installed in the campaign's work trees: import it from its src/ folder.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from liger_kernel.transformers.functional import liger_softmax

from kgit.measure.correctness import snr_threshold_db
from kgit.measure.flops import gbps
from kgit.measure.fwdbwd import (
    forward_backward_snr,
    rate,
    time_backward,
    time_forward,
    wrong_after_timing,
)
from kgit.measure.harness import Settings, run_harness
from kgit.measure.report import Row, fail_row
from kgit.measure.shapes import Shape, dtype_of
from kgit.records.schema import PASS

COLUMNS = (
    "label",
    "M",
    "N",
    "Check",
    "Forward GB/s",
    "Forward GB/s_stddev",
    "Backward GB/s",
    "Backward GB/s_stddev",
    "Forward Time (ms)",
    "Backward Time (ms)",
    "out_snr",
    "dx_snr",
)


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def bytes_moved(m: int, n: int, size: int) -> tuple[int, int]:
    # Forward reads x, writes y; backward reads dy and y, writes dx.
    return 2 * m * n * size, 3 * m * n * size


def default_shapes(device: torch.device) -> list[Shape]:
    if device.type == "cuda":  # LLM logits: hidden-size rows and vocabulary rows (multi-block)
        sizes = [(4096, 4096), (16384, 8192), (4096, 32768), (2048, 131072)]
    else:
        sizes = [(8, 1000), (16, 4096), (2, 70000)]
    return [{"label": f"softmax_{m}x{n}", "M": m, "N": n} for m, n in sizes]


def bench_one_shape(shape: Shape, settings: Settings) -> Row:
    m, n = int(shape["M"]), int(shape["N"])
    on_gpu = settings.device.type == "cuda"
    dtype = dtype_of(shape, torch.bfloat16 if on_gpu else torch.float32)
    repeats = settings.repeats or (100 if on_gpu else 3)
    warmup_ms = 250.0 if on_gpu else 0.0

    def make_inputs() -> list[torch.Tensor]:
        return [torch.randn(m, n, device=settings.device, dtype=dtype)]

    snrs = forward_backward_snr(liger_softmax, reference, make_inputs())
    row: dict[str, object] = {"label": shape["label"], "M": m, "N": n}
    row.update(out_snr=snrs[0], dx_snr=snrs[1])
    if min(snrs) < snr_threshold_db(dtype):
        return {**fail_row(COLUMNS, shape), **row}
    fwd_bytes, bwd_bytes = bytes_moved(m, n, dtype.itemsize)
    fwd = time_forward(liger_softmax, make_inputs, repeats=repeats, warmup_ms=warmup_ms)
    bwd = time_backward(liger_softmax, make_inputs, repeats=repeats, warmup_ms=warmup_ms)
    late = wrong_after_timing(liger_softmax, reference, make_inputs(), snr_threshold_db(dtype))
    if late is not None:
        return {**fail_row(COLUMNS, shape), **row, "out_snr": late}
    fwd_rate, bwd_rate = rate(fwd_bytes, fwd, gbps), rate(bwd_bytes, bwd, gbps)
    row.update({"Check": PASS, "Forward GB/s": fwd_rate.value, "Forward GB/s_stddev": fwd_rate.std})
    row.update({"Backward GB/s": bwd_rate.value, "Backward GB/s_stddev": bwd_rate.std})
    row.update({"Forward Time (ms)": fwd.median_ms, "Backward Time (ms)": bwd.median_ms})
    return row


if __name__ == "__main__":
    raise SystemExit(run_harness(bench_one_shape, COLUMNS, default_shapes=default_shapes))
