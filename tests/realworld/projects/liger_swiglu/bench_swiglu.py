"""kgit quick harness for Liger's SwiGLU (kgit's addition, not upstream's): c = silu(a) * b.

    python bench_swiglu.py --summary-csv out.csv [--shapes shapes.json] [--repeats N]

Shapes: {"label", "M", "N", optional "dtype"}: a and b are M rows of N columns (the gate and up
projections of an MLP). The CSV keeps the memory schema's conventions with the op's own
correctness columns. Exit 0 all PASS, 1 some FAIL, 2 cannot run here.
"""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():  # before liger_kernel decorates its kernels
    os.environ.setdefault("TRITON_INTERPRET", "1")

from liger_kernel.transformers.functional import liger_swiglu

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
    "da_snr",
    "db_snr",
)


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.silu(a) * b


def bytes_moved(m: int, n: int, size: int) -> tuple[int, int]:
    # Forward reads a and b, writes c; backward reads dc, a and b, writes da and db.
    return 3 * m * n * size, 5 * m * n * size


def default_shapes(device: torch.device) -> list[Shape]:
    if device.type == "cuda":  # tokens x intermediate size of Llama-class MLPs
        sizes = [(4096, 11008), (8192, 14336), (16384, 14336), (4096, 28672)]
    else:
        sizes = [(4, 512), (8, 2000), (16, 8192)]
    return [{"label": f"swiglu_{m}x{n}", "M": m, "N": n} for m, n in sizes]


def bench_one_shape(shape: Shape, settings: Settings) -> Row:
    m, n = int(shape["M"]), int(shape["N"])
    on_gpu = settings.device.type == "cuda"
    dtype = dtype_of(shape, torch.bfloat16 if on_gpu else torch.float32)
    repeats = settings.repeats or (100 if on_gpu else 3)
    warmup_ms = 250.0 if on_gpu else 0.0

    def make_inputs() -> list[torch.Tensor]:
        return [torch.randn(m, n, device=settings.device, dtype=dtype) for _ in range(2)]

    snrs = forward_backward_snr(liger_swiglu, reference, make_inputs())
    row: dict[str, object] = {"label": shape["label"], "M": m, "N": n}
    row.update(out_snr=snrs[0], da_snr=snrs[1], db_snr=snrs[2])
    if min(snrs) < snr_threshold_db(dtype):
        return {**fail_row(COLUMNS, shape), **row}
    fwd_bytes, bwd_bytes = bytes_moved(m, n, dtype.itemsize)
    fwd = time_forward(liger_swiglu, make_inputs, repeats=repeats, warmup_ms=warmup_ms)
    bwd = time_backward(liger_swiglu, make_inputs, repeats=repeats, warmup_ms=warmup_ms)
    late = wrong_after_timing(liger_swiglu, reference, make_inputs(), snr_threshold_db(dtype))
    if late is not None:
        return {**fail_row(COLUMNS, shape), **row, "out_snr": late}
    fwd_rate, bwd_rate = rate(fwd_bytes, fwd, gbps), rate(bwd_bytes, bwd, gbps)
    row.update({"Check": PASS, "Forward GB/s": fwd_rate.value, "Forward GB/s_stddev": fwd_rate.std})
    row.update({"Backward GB/s": bwd_rate.value, "Backward GB/s_stddev": bwd_rate.std})
    row.update({"Forward Time (ms)": fwd.median_ms, "Backward Time (ms)": bwd.median_ms})
    return row


if __name__ == "__main__":
    raise SystemExit(run_harness(bench_one_shape, COLUMNS, default_shapes=default_shapes))
