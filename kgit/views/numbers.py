"""How every view writes a figure: one spelling for the log, the report, the round summary and
the final note, so that the same number reads the same everywhere. A missing figure is `-`."""

from __future__ import annotations

from typing import Any

from kgit.records.lineage_results import PAIRED


def num(value: float | None) -> str:
    """A metric's value, four significant digits: 2214, 0.01234."""
    return "-" if value is None else f"{value:.4g}"


def signed(value: float | None) -> str:
    """A change in percent, signed, three decimals: +9.350%."""
    return "-" if value is None else f"{value:+.3f}%"


def percent(value: float | None) -> str:
    """A share in percent, one decimal (of a device's peak): 97.0%."""
    return "-" if value is None else f"{value:.1f}%"


def change(figure: dict[str, Any] | None) -> str:
    """A round's change as kgit/judge/figures.py defines it, spelled the same in every view:
    `+261.888% (CI +156.400%..+410.770%)` from pairs, `, chained` when multiplied along the best
    line, `+7.696% (first pass)` without pairs."""
    if figure is None:
        return "-"
    text = signed(figure["pct"])
    if figure["basis"] != PAIRED:
        return f"{text} ({figure['basis']})"
    if figure["low"] is None:
        return text  # the baseline against itself
    chained = ", chained" if len(figure["chain"]) > 1 else ""
    return f"{text} (CI {signed(figure['low'])}..{signed(figure['high'])}{chained})"
