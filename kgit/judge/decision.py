"""A round's verdict from its evidence: `decide`, the one function that turns measurements into
a decision under a policy's rule (the shipped policies' rules: kgit/judge/rules.py).

Every verdict over measurements is `decide`'s: a validation's stopping rule asks it whether the
evidence is settled, and a round's judgement (kgit/judge/judgement.py: `judge`, which validate
records, accept replays and finish reports) calls it once. The order of the checks over the
evidence lives here: a FAIL first (Check is a hard gate), then evidence that holds no
measurement, then the policy's rule, overridden by a rate past the device's peak. A policy
brings its rule (kgit/engine/measuring/policies/policy.py); `decide` never asks a policy's name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from kgit.judge.stats import ABJudgement
from kgit.judge.verdict import (
    NOT_MEASURED,
    Verdict,
    correctness_verdict,
    fail_reasons,
    impossible_verdict,
)
from kgit.records.evidence import Evidence
from kgit.records.manifest import Thresholds
from kgit.records.notes import ROLLED_BACK


@dataclass(frozen=True)
class Standard:
    """What evidence is judged against: the reference's stored per-shape values on the evidence's
    shapes, the campaign's thresholds, the noise floors the policy calibrated, how the reasons
    name the reference ("best"; kgit finish judges against the "baseline"), and the policy's own
    SETTINGS, which only its rule reads (None for a policy with none). It never says which
    policy measured: a rule takes from it what it needs."""

    reference: dict[str, float]
    thresholds: Thresholds
    floors: dict[str, float] = field(default_factory=dict)
    versus: str = "best"
    settings: object = None


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
