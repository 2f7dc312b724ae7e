from __future__ import annotations

import pytest

from kgit.judge.scoring import Score
from kgit.judge.verdict import REMEASURE, protected_verdict, scope_verdict, seed_verdict
from kgit.records.manifest import Thresholds
from kgit.records.notes import ACCEPTED, ACCEPTED_TRADEOFF, ROLLED_BACK

BEST = {"small": 100.0, "mid": 200.0, "large": 400.0}
LIMITS = Thresholds()


def run(scale: dict[str, float] | float, failing: list[str] | None = None) -> Score:
    factors = scale if isinstance(scale, dict) else dict.fromkeys(BEST, scale)
    values = {k: v * factors.get(k, 1.0) for k, v in BEST.items() if k not in (failing or [])}
    return Score(values, failing or [], 0.0 if failing else 1.0)


def test_clear_gain_everywhere_is_accepted() -> None:
    verdict = seed_verdict([run(1.10)], BEST, LIMITS)
    assert verdict.decision == ACCEPTED
    assert verdict.gain_pct == pytest.approx(10.0)
    assert verdict.accepts


def test_gain_with_a_small_shape_loss_is_a_trade_off() -> None:
    verdict = seed_verdict([run({"small": 0.97, "mid": 1.1, "large": 1.1})], BEST, LIMITS)
    assert verdict.decision == ACCEPTED_TRADEOFF
    assert any("small -3.000%" in r for r in verdict.reasons)


def test_core_shape_down_five_percent_rolls_back_despite_the_aggregate() -> None:
    verdict = seed_verdict([run({"small": 0.95, "mid": 1.2, "large": 1.2})], BEST, LIMITS)
    assert verdict.decision == ROLLED_BACK
    assert verdict.gain_pct > 0
    assert any("core shape down" in r for r in verdict.reasons)


def test_no_gain_rolls_back() -> None:
    assert seed_verdict([run(0.99)], BEST, LIMITS).decision == ROLLED_BACK


def test_any_failing_shape_rolls_back() -> None:
    verdict = seed_verdict([run(1.5, failing=["mid"])], BEST, LIMITS)
    assert verdict.decision == ROLLED_BACK
    assert "mid" in verdict.reasons[0]


def test_small_gain_asks_for_re_measures_then_holds() -> None:
    first = seed_verdict([run(1.015)], BEST, LIMITS)
    assert first.decision == REMEASURE
    assert seed_verdict([run(1.015), run(1.016)], BEST, LIMITS).decision == REMEASURE
    verdict = seed_verdict([run(1.015), run(1.016), run(1.014)], BEST, LIMITS)
    assert verdict.decision == ACCEPTED
    assert any("holds under re-measure" in r for r in verdict.reasons)


def test_small_gain_under_one_percent_mean_rolls_back() -> None:
    verdict = seed_verdict([run(1.012), run(1.002), run(1.006)], BEST, LIMITS)
    assert verdict.decision == ROLLED_BACK
    assert "within noise" in verdict.reasons[0]


def test_small_gain_with_a_wide_spread_rolls_back() -> None:
    verdict = seed_verdict([run(1.019), run(1.001), run(1.030)], BEST, LIMITS)
    assert verdict.decision == ROLLED_BACK
    assert "stddev" in verdict.reasons[0]


def test_thresholds_come_from_the_manifest() -> None:
    strict = Thresholds(core_regression_pct=2.0)
    verdict = seed_verdict([run({"small": 0.97, "mid": 1.1, "large": 1.1})], BEST, strict)
    assert verdict.decision == ROLLED_BACK


def test_a_changed_test_file_is_not_told_to_join_kernel_source() -> None:
    verdict = scope_verdict(["tests/utils.py", "conftest.py", "notes.txt"], ["kern/k.py"])
    assert verdict.decision == ROLLED_BACK
    plain, tests = verdict.reasons
    assert "notes.txt" in plain and "declare them in kernel_source" in plain
    assert "tests/utils.py, conftest.py" in tests
    assert "kernel_source if" not in tests
    assert "new campaign" in tests and "kgit init NEW -m FILE" in tests


def test_only_a_test_file_gives_only_the_test_reason() -> None:
    (reason,) = scope_verdict(["test/test_ln.py"], ["kern/k.py"]).reasons
    assert "belong to the gate" in reason


def test_a_protected_change_names_the_way_to_new_tests() -> None:
    (reason,) = protected_verdict(["tests/utils.py"]).reasons
    assert "kgit init NEW -m FILE" in reason
