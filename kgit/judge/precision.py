"""A precision lower than the campaign's: a shape whose SNR falls far under the baseline's own.

The SNR threshold of a dtype is a floor for any kernel of that dtype (30 dB for bf16), and sits
well under what the dtype gives (about 52 dB for a bf16 GEMM): a kernel that computes in a
lower precision than the manifest asks (fp8 inside a "bf16" GEMM reads about 26-32 dB) can pass
it and be faster for that reason alone. What the baseline measured is the campaign's own
standard: an honest change of algorithm (tiling, split-K, the order of a reduction) moves a
shape's SNR by a few dB; a shape more than MARGIN_DB under the baseline's, and under what a
16-bit output gives anyway, FAILs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

MARGIN_DB = 12.0
# At or above this SNR an output is as exact as a 16-bit type holds: no drop under it matters
# (a float32 baseline reads 130+ dB against float64, and TF32 65 dB).
PLENTY_DB = 60.0

Snrs = Mapping[str, Mapping[str, float]]  # shape label -> SNR column -> dB


def snr_columns(header: tuple[str, ...] | list[str]) -> list[str]:
    return [column for column in header if column.endswith("_snr")]


def precision_drops(baseline: Snrs, now: Snrs, margin_db: float = MARGIN_DB) -> list[str]:
    """The shapes of NOW whose SNR fell more than MARGIN_DB under BASELINE's, in words."""
    found = []
    for label, columns in now.items():
        before = baseline.get(label, {})
        for column, value in columns.items():
            old = before.get(column)
            if old is None or not (math.isfinite(value) and math.isfinite(old)):
                continue
            if value < old - margin_db and value < PLENTY_DB:
                found.append(
                    f"shape {label}: {column} {value:.1f} dB, {old - value:.1f} dB under the "
                    f"baseline's {old:.1f} dB (a lower precision than the baseline's)"
                )
    return found
