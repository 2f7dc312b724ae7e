"""Iteration rule 9, judged over bench tables alone: accepted rounds never lose more than 1%
of the rule's value, each compared with the previous one on the shapes both measured."""

from __future__ import annotations

import pytest

from kgit.judge.monotonic import compared, monotonic_check, rule_value
from kgit.records.schema import BenchRow, BenchTable
from tests.judge.test_scoring import gemm_row, table

GBS = ("Shape", "Check", "Forward GB/s", "Backward GB/s")


def speeds(*shapes: tuple[str, float]) -> BenchTable:
    return table([gemm_row(label, value, value / 2) for label, value in shapes])


def gbs(value: float) -> BenchTable:
    row = BenchRow("s", "PASS", {"Forward GB/s": value, "Backward GB/s": value / 2})
    return BenchTable(GBS, (row,))


def test_the_rule_watches_combined_step_or_a_memory_bound_primary_metric() -> None:
    assert rule_value("Combined Step TFLOPS") == ("combined_step", "Combined Step TFLOPS")
    assert rule_value("Forward TFLOPS") == ("combined_step", "Combined Step TFLOPS")
    assert rule_value("Forward GB/s") == ("primary", "Forward GB/s")


def test_a_dip_within_the_noise_passes_and_one_past_it_is_named() -> None:
    rounds = [
        (2, speeds(("a", 300.0), ("b", 300.0))),
        (3, speeds(("a", 298.0), ("b", 298.0))),  # -0.67%: noise
        (5, speeds(("a", 290.0), ("b", 290.0))),  # -2.7% after round 3
    ]
    check = monotonic_check(rounds, "Combined Step TFLOPS")
    assert check["ok"] is False and check["offending_rounds"] == [5]
    assert [(s["round"], s["after"]) for s in check["steps"]] == [(3, 2), (5, 3)]
    assert check["steps"][0]["change_pct"] == pytest.approx(-2 / 3, abs=1e-6)
    assert check["value"] == "Combined Step TFLOPS" and check["noise_pct"] == 1.0


def test_rounds_compare_on_the_shapes_both_measured() -> None:
    # Round 3 measured the representative shape only, as fast as round 2 on it: no drop, though
    # round 2's aggregate over both shapes was higher.
    rounds = [(2, speeds(("a", 300.0), ("b", 400.0))), (3, speeds(("a", 300.0)))]
    check = monotonic_check(rounds, "Combined Step TFLOPS")
    assert check["ok"] is True and check["steps"][0]["change_pct"] == pytest.approx(0.0)


def test_a_round_without_a_comparable_table_is_unchecked_not_failed() -> None:
    rounds = [(2, speeds(("a", 300.0))), (3, None), (4, speeds(("b", 100.0)))]
    check = monotonic_check(rounds, "Combined Step TFLOPS")
    assert check["ok"] is True and check["unchecked_rounds"] == [3, 4] and check["steps"] == []
    assert compared(speeds(("a", 1.0)), None, "Forward TFLOPS") is None


def test_a_memory_bound_campaign_is_judged_on_its_primary_metric() -> None:
    check = monotonic_check([(2, gbs(1000.0)), (3, gbs(950.0))], "Forward GB/s")
    assert check["offending_rounds"] == [3] and check["value"] == "Forward GB/s"
    assert check["steps"][0]["change_pct"] == pytest.approx(-5.0)


def test_fewer_than_two_accepted_rounds_have_nothing_to_judge() -> None:
    for rounds in ([], [(2, speeds(("a", 1.0)))]):
        check = monotonic_check(rounds, "Combined Step TFLOPS")
        assert check["ok"] is True and check["steps"] == check["unchecked_rounds"] == []


def test_a_paired_change_is_the_step_where_the_rule_watches_the_primary_metric() -> None:
    """A CPU demo's accepted round read -4.499% on first passes (blocks against the baseline's
    plain pass) where its pairs read +261.888%: the pairs are the step, and say so."""
    rounds = [(1, speeds(("a", 300.0))), (2, speeds(("a", 287.0)))]
    check = monotonic_check(rounds, "Combined Step TFLOPS", {2: 261.888})
    assert check["ok"] is True
    assert check["steps"] == [{"round": 2, "after": 1, "change_pct": 261.888, "basis": "paired"}]
    # Rule 9 of a Forward TFLOPS campaign watches Combined Step TFLOPS: no pair measured it.
    other = monotonic_check(rounds, "Forward TFLOPS", {2: 261.888})
    assert other["ok"] is False and other["steps"][0]["basis"] == "first pass"
