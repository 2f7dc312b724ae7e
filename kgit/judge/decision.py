"""A round's verdict from its evidence: `decide`, the one function that turns measurements into
a decision, and the two rules it applies (the seed's over whole passes, the interleaved policy's
over A/B pairs).

Every verdict over measurements is `decide`'s: a validation's stopping rule asks it whether the
evidence is settled, the validation's verdict is its answer, accept recomputes it from the
recorded evidence, and finish judges the best line against the baseline with it. The order of
the checks lives here: a FAIL first (Check is a hard gate), then evidence that holds no
measurement, then the policy's rule, overridden by a rate past the device's peak. A policy
brings its rule (kgit/engine/measuring/policy.py); `decide` never asks a policy's name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from kgit.judge.scoring import Score, geomean
from kgit.judge.stats import ABJudgement, judge_pairs, pairs_of, side_means
from kgit.judge.verdict import (
    NOT_MEASURED,
    REMEASURE,
    Verdict,
    correctness_verdict,
    fail_reasons,
    impossible_verdict,
    interleaved_verdict,
    seed_verdict,
)
from kgit.records.evidence import Evidence
from kgit.records.manifest import Interleaved, Thresholds
from kgit.records.notes import ROLLED_BACK


@dataclass(frozen=True)
class Standard:
    """What evidence is judged against: the reference's stored per-shape values on the evidence's
    shapes (the seed's rule compares with them), the campaign's thresholds and interleaved
    settings, the noise floors the baseline calibrated (the pairs' rule), and how the reasons
    name the reference ("best"; kgit finish judges against the "baseline")."""

    reference: dict[str, float]
    thresholds: Thresholds
    interleaved: Interleaved
    floors: dict[str, float] = field(default_factory=dict)
    versus: str = "best"


@dataclass(frozen=True)
class Judged:
    """A verdict, whether more measurement could change it (the stopping rule's question), and
    the pairs' estimates it rests on, for the note (None under a rule without pairs); RULED: the
    rule's own verdict when the physical floor overrode it (its gains, for kgit finish's report)."""

    verdict: Verdict
    settled: bool = True
    judgement: ABJudgement | None = None
    ruled: Verdict | None = None


# A policy's decision rule: pure, over the evidence and the standard.
Rule = Callable[[Evidence, Standard], Judged]


def decide(
    evidence: Evidence,
    standard: Standard,
    rule: Rule,
    *,
    over: Sequence[str] = (),
    failed_where: str = "",
) -> Judged:
    """The verdict on EVIDENCE under RULE. OVER: the physical floor's reasons (a rate past the
    device's peak), which roll back whatever the rule says, but never hide a FAIL. FAILED_WHERE:
    where the evidence's FAIL was seen, as its reasons say it."""
    if evidence.failed:
        return Judged(
            correctness_verdict(fail_reasons(evidence.failed, failed_where), standard.reference)
        )
    if not evidence.labels or not (evidence.runs or evidence.pairs):
        return Judged(Verdict(ROLLED_BACK, NOT_MEASURED, ["the evidence holds no measurements"]))
    judged = rule(evidence, standard)
    if over:
        overridden = impossible_verdict(list(over), judged.verdict)
        return replace(judged, verdict=overridden, ruled=judged.verdict)
    return judged


def seed_rule(evidence: Evidence, standard: Standard) -> Judged:
    """The seed's rule over the candidate's plain passes, against the reference's stored values:
    settled unless the noise rule asks for another run."""
    labels = evidence.labels
    runs = [Score(dict(run), [], geomean(run[label] for label in labels)) for run in evidence.runs]
    verdict = seed_verdict(runs, standard.reference, standard.thresholds, standard.versus)
    return Judged(verdict, verdict.decision != REMEASURE)


def pairs_rule(evidence: Evidence, standard: Standard) -> Judged:
    """Rule 3 on the A/B pairs' statistically called changes, with both sides' means kept."""
    pairs = pairs_of(evidence.pairs)
    labels = evidence.labels
    judgement = judge_pairs(
        pairs, labels, standard.floors, standard.interleaved, standard.thresholds
    )
    reference, candidate = side_means(pairs, labels)
    verdict = interleaved_verdict(
        judgement, standard.thresholds, standard.versus, candidate, reference
    )
    return Judged(verdict, judgement.settled, judgement)
