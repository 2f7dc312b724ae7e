"""The gate audit's words (kgit/views/audit_text.py, commands.py): a verdict that says what it
covered, and drawn mutants counted once."""

from __future__ import annotations

from typing import Any

from kgit.views.audit_text import counts_line, verdict
from kgit.views.commands import audit_line


def _data(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "caught": 1, "tried": 1, "timed_out": 0, "survived": 0, "unreached": 0, "equivalent": 0,
        "not_run": 5, "drawn": 6, "unexercised": [],
        "coverage": {"of": "the target shapes run", "lines": 1, "lines_of": 24,
                     "kinds": ["sign"], "kinds_of": ["sign", "denominator", "arith"]},
    }  # fmt: skip
    return {**data, **changes}


def test_a_pass_over_one_mutant_says_how_little_it_covered() -> None:
    text = verdict(_data())
    assert "caught all 1 mutant(s) it was given, on 1 of 24 lines and 1 of 3 kinds" in text
    assert "5 drawn not run" in text and "the rest is not judged" in text
    assert "caught every mutant" not in text


def test_a_pass_over_everything_the_shapes_run_says_so() -> None:
    whole = {"of": "the target shapes run", "lines": 3, "lines_of": 3, "kinds": ["arith"],
             "kinds_of": ["arith"]}  # fmt: skip
    text = verdict(_data(caught=3, tried=3, not_run=0, drawn=3, coverage=whole))
    assert text.endswith(
        "on 3 of 3 lines and 1 of 1 kinds of mutation site in the target shapes run."
    )


def test_drawn_not_run_is_counted_against_what_was_drawn() -> None:
    line = counts_line(_data())
    assert "5 of 6 drawn not run" in line and "covered 1 of 24 lines" in line
    assert "5 of 6 drawn not run" in audit_line(_data())
    assert "covered" not in counts_line(_data(coverage={}))  # an audit stored before version 3
