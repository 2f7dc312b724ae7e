"""`decide`: the order of a verdict's checks, and the two rules it applies, on synthetic evidence
(a recorded round's evidence gives its note's verdict back: tests/engine/test_policies.py)."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

from kgit.judge.decision import Judged, Standard, decide
from kgit.judge.rules import pairs_rule, seed_rule
from kgit.judge.verdict import (
    CORRECTNESS,
    IMPOSSIBLE,
    IMPROVED,
    NEEDS_RUNS,
    NOT_MEASURED,
    REMEASURE,
    Verdict,
)
from kgit.records.evidence import Evidence
from kgit.records.manifest import Interleaved, Thresholds
from kgit.records.notes import ACCEPTED, ROLLED_BACK
from kgit.records.policies import POLICIES

LABELS = ["small", "large"]
BEST = {"small": 100.0, "large": 400.0}
FLOORS = {"small": 0.01, "large": 0.01}


def standard(versus: str = "best") -> Standard:
    return Standard(BEST, Thresholds(), FLOORS, versus, Interleaved())


def seed_evidence(*scales: float) -> Evidence:
    runs = [{label: BEST[label] * scale for label in LABELS} for scale in scales]
    return Evidence("seed", "pass", "tree", "best", list(LABELS), runs=runs)


def paired_evidence(gain: float, pairs: int = 6) -> Evidence:
    """PAIRS quads in which the candidate (b) reads GAIN over a reference that drifts."""
    recorded = []
    for index in range(pairs):
        drift = 1.0 + 0.002 * (index % 3)
        a = {"small": 90.0 * drift, "large": 380.0 * drift}
        b = {label: value * gain * (1.0 + 0.0005 * (index % 2)) for label, value in a.items()}
        recorded.append({"a": a, "b": b})
    return Evidence("interleaved", "worker", "tree", "best", list(LABELS), pairs=recorded)


def accepting_rule(evidence: Evidence, standard: Standard) -> Judged:
    return Judged(Verdict(ACCEPTED, IMPROVED, ["a rule that accepts"], {"small": 1.0}, BEST))


def test_a_fail_is_decided_before_the_rule_and_the_physical_floor() -> None:
    evidence = seed_evidence(1.2)
    evidence.failed = ["large"]
    judged = decide(
        evidence, standard(), accepting_rule, over=["large: 9 TFLOPS"], failed_where=" in a block"
    )
    assert judged.verdict.decision == ROLLED_BACK and judged.verdict.cause == CORRECTNESS
    assert judged.verdict.reasons == ["correctness gate: shape large: Check FAIL in a block"]
    assert judged.judgement is None


def test_a_rate_past_the_peak_overrides_the_rule_and_keeps_its_means() -> None:
    judged = decide(seed_evidence(1.2), standard(), accepting_rule, over=["large: 9 TFLOPS"])
    assert judged.verdict.cause == IMPOSSIBLE
    assert judged.verdict.reasons == ["physical floor: large: 9 TFLOPS"]
    assert judged.verdict.candidate == {"small": 1.0} and judged.verdict.reference == BEST
    assert decide(seed_evidence(1.2), standard(), accepting_rule).verdict.decision == ACCEPTED


def test_evidence_without_measurements_is_not_handed_to_the_rule() -> None:
    empty = Evidence("seed", "pass", "tree", "best", list(LABELS))
    judged = decide(empty, standard(), accepting_rule)
    assert (judged.verdict.decision, judged.verdict.cause) == (ROLLED_BACK, NOT_MEASURED)


def test_the_seed_rule_asks_for_runs_until_the_noise_rule_holds() -> None:
    first = decide(seed_evidence(1.015), standard(), seed_rule)
    assert not first.settled
    assert (first.verdict.decision, first.verdict.cause) == (REMEASURE, NEEDS_RUNS)
    held = decide(seed_evidence(1.015, 1.016, 1.014), standard(), seed_rule)
    assert held.settled and held.verdict.decision == ACCEPTED
    assert held.verdict.reference == BEST


def test_the_pairs_rule_keeps_both_sides_means_and_names_the_reference() -> None:
    """Accept's recomputation once lost the sides' means and named every reference "best":
    the rule is one function now, whoever calls it."""
    judged = decide(paired_evidence(1.10), standard("baseline"), pairs_rule)
    verdict = judged.verdict
    assert judged.settled and judged.judgement is not None
    assert verdict.decision == ACCEPTED
    assert verdict.reasons[0].startswith("aggregate +10.0")
    assert " vs baseline, better (CI " in verdict.reasons[0]
    assert verdict.reference["large"] == pytest.approx(380.0 * 1.002, rel=1e-3)
    assert verdict.candidate["large"] == pytest.approx(380.0 * 1.002 * 1.10, rel=1e-3)
    assert verdict.gain_pct == pytest.approx(judged.judgement.aggregate.change_pct)


def test_the_pairs_rule_rolls_back_a_loss() -> None:
    judged = decide(paired_evidence(0.90), standard(), pairs_rule)
    assert judged.verdict.decision == ROLLED_BACK
    assert "the candidate is slower" in judged.verdict.reasons


def test_the_standard_names_no_policy_and_the_pairs_rule_reads_its_own_settings() -> None:
    """No field of Standard bears a policy's name: the pairs' rule finds its settings under the
    neutral `settings`, judges with them, and refuses a standard that carries none."""
    assert not {f.name for f in fields(Standard)} & set(POLICIES)
    evidence = paired_evidence(1.003, pairs=4)
    strict = replace(standard(), settings=Interleaved(min_effect_pct=5.0))
    assert (
        decide(evidence, standard(), pairs_rule).judgement
        != decide(evidence, strict, pairs_rule).judgement
    )
    with pytest.raises(TypeError, match="Interleaved settings"):
        pairs_rule(evidence, replace(standard(), settings=None))
