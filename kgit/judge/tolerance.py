"""Is a surviving mutant below the gate's tolerance, or a hole in the gate?

A mutant the gate passes may change the kernel's results by less than any gate should care
about (`+ eps` -> `- eps` with eps = 1e-6: a relative change near 1e-6). The harness's own
reference check on the target shapes tells: the mutant is below tolerance when every shape still
PASSes and every SNR the harness reports (`*_snr`, dB against its reference) stays within
MARGIN_DB of the unmutated kernel's on that shape (its error at most ten times the kernel's own).
A pass alone is not enough: a harness's SNR threshold (fp32: tens of dB) lets through an
off-by-one read that moves a row's mean by a tenth of a percent, which a good gate catches.
Pure: two CSVs in, a judgement out.
"""

from __future__ import annotations

import csv
import io
import math

MARGIN_DB = 20.0


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
    """True: within MARGIN_DB of the REFERENCE run (the unmutated kernel's CSV) on every shape
    and SNR; False: some shape FAILs or loses more; None: nothing to compare with."""
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
            if math.isnan(value) or value < base - MARGIN_DB:
                return False
            compared += 1
    return True if compared else None
