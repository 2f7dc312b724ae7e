"""A lower precision than the baseline's (kgit/judge/precision.py): fp8 inside a bf16 GEMM reads
about 26-32 dB, over the bf16 threshold of 30 dB but far under the baseline's ~52 dB."""

from __future__ import annotations

import math

from kgit.judge.precision import precision_drops, snr_columns


def test_a_shape_far_under_the_baselines_snr_is_named() -> None:
    baseline = {"s4096": {"out_snr": 52.1, "da_snr": 51.0}, "s256": {"out_snr": 53.0}}
    now = {"s4096": {"out_snr": 31.0, "da_snr": 50.2}, "s256": {"out_snr": 49.5}}
    (drop,) = precision_drops(baseline, now)
    assert drop.startswith("shape s4096: out_snr 31.0 dB, 21.1 dB under the baseline's 52.1")


def test_an_honest_change_of_a_few_db_and_plenty_of_precision_pass() -> None:
    baseline = {"s": {"out_snr": 140.0, "da_snr": 52.0}}
    # float32 through another reduction order (still far past any 16-bit output), a split-K
    assert precision_drops(baseline, {"s": {"out_snr": 121.0, "da_snr": 47.0}}) == []
    assert precision_drops(baseline, {"s": {"out_snr": math.nan, "da_snr": 52.0}}) == []
    assert precision_drops({}, {"s": {"out_snr": 20.0}}) == []  # no baseline: no standard


def test_the_snr_columns_of_a_schema() -> None:
    assert snr_columns(("label", "Check", "out_snr", "dx_snr", "Forward GB/s")) == [
        "out_snr",
        "dx_snr",
    ]
