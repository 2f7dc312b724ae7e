"""Iteration rule 10: when a campaign may end, judged from its figures alone."""

from __future__ import annotations

from typing import Any

from kgit.judge.termination import target_reached, termination
from kgit.records.report_results import EfficiencyCheck, Termination
from kgit.records.results import to_json


def ended(**overrides: Any) -> Termination:
    facts: dict[str, Any] = {
        "target": 200.0,
        "best_aggregate": 150.0,
        "efficiency": EfficiencyCheck(measured=False, device=None, pct_of_peak={}),
        "rounds_used": 3,
        "max_iterations": 10,
        "finished": False,
    }
    return termination(**{**facts, **overrides})


def test_a_numeric_target_is_reached_at_or_above_it() -> None:
    assert target_reached(200.0, 199.9).reached is False
    assert target_reached(200, 200.0).reached is True
    assert to_json(target_reached(200.0, None)) == {
        "target": 200.0, "best_aggregate": None, "reached": False, "checkable": True,
    }  # fmt: skip


def test_a_target_in_words_or_none_cannot_be_checked() -> None:
    for target in ("20% faster than cuBLAS", None, True):
        judged = target_reached(target, 1e9)
        assert judged.checkable is False and judged.reached is False


def test_nothing_ends_a_campaign_midway() -> None:
    judged = to_json(ended())
    assert [judged[k]["reached"] for k in judged] == [False, False, False, False]
    assert list(judged) == ["target", "hardware_efficiency", "max_iterations", "user_stop"]


def test_max_iterations_used_up_and_the_user_stop() -> None:
    assert to_json(ended(rounds_used=9).max_iterations) == {"used": 9, "max": 10, "reached": False}
    assert ended(rounds_used=10).max_iterations.reached is True
    assert to_json(ended(finished=True).user_stop) == {"reached": True}


def test_hardware_efficiency_is_shown_but_left_to_the_user() -> None:
    measured = EfficiencyCheck(measured=True, device="H200", pct_of_peak={"s": 97.0})
    judged = to_json(ended(efficiency=measured).hardware_efficiency)
    assert judged == {
        "reached": False,
        "measured": True,
        "device": "H200",
        "pct_of_peak": {"s": 97.0},
    }
    assert next(iter(judged)) == "reached"
