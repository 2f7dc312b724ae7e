"""How every view writes a figure: one spelling for the log, the report, the round summary and
the final note, so that the same number reads the same everywhere. A missing figure is `-`."""

from __future__ import annotations


def num(value: float | None) -> str:
    """A metric's value, four significant digits: 2214, 0.01234."""
    return "-" if value is None else f"{value:.4g}"


def signed(value: float | None) -> str:
    """A change in percent, signed, three decimals: +9.350%."""
    return "-" if value is None else f"{value:+.3f}%"


def percent(value: float | None) -> str:
    """A share in percent, one decimal (of a device's peak): 97.0%."""
    return "-" if value is None else f"{value:.1f}%"
