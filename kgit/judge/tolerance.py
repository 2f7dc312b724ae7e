"""Is a surviving mutant below the gate's tolerance, or a hole in the gate?

A mutant the gate passes may change the kernel's results by less than any gate should care
about (`+ eps` -> `- eps` with eps = 1e-6: a relative change near 1e-6). The harness's own
reference check on the target shapes tells: the mutant is below tolerance when every shape still
PASSes and, for every SNR the harness reports (`*_snr`, dB against its reference), the change the
mutant adds to the unmutated kernel's error (read from both SNRs, as relative errors) is at most
FLOOR (1e-5, stricter than any fp32 gate tolerance) or ten times the kernel's own error (a bf16
kernel's rounding hides smaller changes). A PASS alone is not enough: a harness's SNR threshold
(fp32: 50 dB) lets through an off-by-one read that moves a row's mean by 0.2%, which a good gate
catches.
Pure: two CSVs in, a judgement out.
"""

from __future__ import annotations

import csv
import io
import math

FLOOR, FACTOR = 1e-5, 10.0


def _snrs(table: bytes) -> dict[str, dict[str, float]] | None:
    """label -> {snr column: value}; None when the CSV has no Check or SNR column."""
    rows = list(csv.DictReader(io.StringIO(table.decode(errors="replace"))))
    if not rows or "Check" not in rows[0] or not any(c.endswith("_snr") for c in rows[0]):
        return None
    found = {}
    for row in rows:
        if row.get("Check") != "PASS":
            return {}
        values = {}
        for column, text in row.items():
            if column and column.endswith("_snr"):
                try:
                    values[column] = float(text)
                except (TypeError, ValueError):
                    values[column] = math.nan
        found[row.get("label", "")] = values
    return found


def below_tolerance(mutant: bytes, reference: bytes | None) -> bool | None:
    """True: the mutant's change is within tolerance on every shape and SNR of REFERENCE (the
    unmutated kernel's CSV); False: some shape FAILs or changes more; None: nothing to compare."""
    got = _snrs(mutant)
    if got == {}:
        return False  # a shape FAILed
    want = _snrs(reference) if reference else None
    if got is None or not want:
        return None
    compared = 0
    for label, values in got.items():
        for column, value in values.items():
            base = want.get(label, {}).get(column)
            if base is None or math.isnan(base):
                continue
            if not within(value, base):
                return False
            compared += 1
    return True if compared else None


def within(snr_db: float, base_db: float) -> bool:
    """Whether an output at SNR_DB differs from one at BASE_DB by at most the tolerance."""
    if math.isnan(snr_db):
        return False
    own, now = _relative_error(base_db), _relative_error(snr_db)
    change = math.sqrt(max(now * now - own * own, 0.0))  # independent errors add in power
    return change <= max(FLOOR, FACTOR * own)


def _relative_error(snr_db: float) -> float:
    return 0.0 if math.isinf(snr_db) and snr_db > 0 else 10 ** (-snr_db / 20)
