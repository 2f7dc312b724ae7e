"""The one spelling of a figure that the log, report, round summary and final note share."""

from __future__ import annotations

from kgit.views.numbers import num, percent, signed


def test_each_figure_has_one_spelling_and_a_missing_one_is_a_dash() -> None:
    assert [num(2214.4), num(0.012345), num(1e6)] == ["2214", "0.01235", "1e+06"]
    assert [signed(9.35), signed(-0.0004), signed(0.0)] == ["+9.350%", "-0.000%", "+0.000%"]
    assert percent(97.04) == "97.0%"
    assert num(None) == signed(None) == percent(None) == "-"
