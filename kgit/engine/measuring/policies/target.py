"""What a validation compares (`Target`) and what it returns (`Outcome`), the evidence it adds to,
and what a round's note records of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgit.engine.measuring.harness.passes import Measurement
from kgit.engine.measuring.harness.physical_floor import measured_rates
from kgit.judge.decision import Rule, Standard
from kgit.judge.floor import Rates
from kgit.judge.judgement import Judgement, Measured
from kgit.judge.stats import ABJudgement, Estimate
from kgit.judge.verdict import Verdict
from kgit.records.evidence import RESIDENT_MODE, Evidence
from kgit.records.manifest import Manifest
from kgit.records.notes import RoundNote


@dataclass
class Calibrated:
    """The baseline's first pass, and the A/A floors measured right after it."""

    first: Measurement
    floors: dict[str, float]
    statistics: dict[str, Any]


# Which shapes the calibration measures: the representative ones of the first pass.
Pick = Callable[[Measurement], list[str]]


@dataclass(frozen=True)
class Target:
    """What a validation compares: the candidate commit (its tree names the evidence) and the
    reference commit with its stored per-shape values, on LABELS. Each is measured from a work
    tree of kgit's own holding that commit's files only (kgit/engine/measuring/sides/side_trees.py)."""

    candidate: str
    candidate_tree: str
    reference: str
    reference_values: dict[str, float]
    labels: list[str]
    versus: str  # how the reasons name the reference: "best" or "baseline"
    # The baseline's calibration ran resident harnesses (the harness is frozen since): the
    # reference side may start, held, beside the candidate's first pass.
    resident: bool = False


@dataclass
class Outcome:
    """What a validation measured (the evidence, the harness's plain passes) and what it is
    judged against; `judge` gives it its verdict."""

    evidence: Evidence
    standard: Standard
    passes: list[Measurement] = field(default_factory=list)  # the candidate's plain passes
    reference_passes: list[Measurement] = field(default_factory=list)
    failed_where: str = ""  # where the evidence's FAIL was seen, as its reasons say it
    verdict: Verdict = field(default_factory=lambda: Verdict("", "", []))
    judgement: ABJudgement | None = None

    @property
    def fingerprint(self) -> dict[str, str] | None:
        """The environment the candidate's first plain pass reported."""
        return self.passes[0].fingerprint if self.passes else None

    def rates(self, metric: str) -> Rates:
        """The rates of everything the candidate showed: its plain passes (every rate column),
        and the METRIC's values of its runs and of its side of each pair."""
        values = [*self.evidence.runs, *(pair["b"] for pair in self.evidence.pairs)]
        return measured_rates(self.passes, values, metric)

    def measured(
        self, rule: Rule, over: Sequence[str] = (), devices: Sequence[str] = ()
    ) -> Measured:
        """What the judgement weighs of this outcome under the policy's RULE (OVER: the physical
        floor's reasons; DEVICES: the device's)."""
        return Measured(
            self.evidence, self.standard, rule, tuple(over), tuple(devices), self.failed_where
        )

    def take(self, judgement: Judgement) -> None:
        """Keep JUDGEMENT's verdict and estimates (kgit/judge/judgement.py judged it)."""
        self.verdict, self.judgement = judgement.verdict, judgement.estimates


def standard_for(
    manifest: Manifest,
    labels: list[str],
    values: dict[str, float],
    versus: str,
    floors: dict[str, float] | None = None,
) -> Standard:
    """What a validation of LABELS is judged against: the reference's stored VALUES on them,
    the campaign's thresholds and its policy's settings, the policy's FLOORS; VERSUS names the
    reference."""
    reference = {label: values[label] for label in labels if label in values}
    return Standard(reference, manifest.thresholds, floors or {}, versus, manifest.policy_settings)


def ran_resident(baseline: RoundNote | None) -> bool:
    """Whether the baseline's A/A calibration ran resident harnesses (Target.resident)."""
    return baseline is not None and baseline.statistics.get("mode") == RESIDENT_MODE


def evidence_for(target: Target, policy: str, mode: str, prior: Evidence | None) -> Evidence:
    evidence = prior or Evidence(
        policy, mode, target.candidate_tree, target.reference, list(target.labels)
    )
    evidence.validations += 1
    return evidence


def estimate_dict(e: Estimate) -> dict[str, Any]:
    """An estimate as the note records it, with the smallest change it could have called."""
    return {
        "ratio": e.ratio,
        "ci": [e.low, e.high],
        "call": e.call,
        "floor_pct": e.floor * 100,
        "detectable_pct": None if math.isinf(e.detectable_pct) else e.detectable_pct,
    }


def statistics_dict(outcome: Outcome, policy_figures: dict[str, Any]) -> dict[str, Any]:
    """What the note shows of the judged evidence, with the figures its policy adds."""
    evidence, judged = outcome.evidence, outcome.judgement
    data: dict[str, Any] = {
        "policy": evidence.policy,
        "mode": evidence.mode,
        # Where the harness ran: kgit's work trees, each holding one commit's files only.
        "ran_in": ".git/kgit/worktrees/<campaign>/{candidate,reference}",
        "validations": evidence.validations,
        "seconds": evidence.seconds,
        "runs": len(evidence.runs),
    }
    data.update(policy_figures)
    if judged is not None:
        data["aggregate"] = estimate_dict(judged.aggregate)
        data["shapes"] = {label: estimate_dict(e) for label, e in judged.shapes.items()}
    return data
