"""What a validation compares (`Target`) and what it returns (`Outcome`), the evidence it adds to,
and what a round's note records of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kgit.engine.passes import Measurement
from kgit.judge.scoring import Score, geomean
from kgit.judge.stats import ABJudgement, Estimate
from kgit.judge.verdict import Verdict
from kgit.records.evidence import Evidence
from kgit.records.notes import RoundNote


@dataclass(frozen=True)
class Target:
    """What a validation compares: the candidate commit (its tree names the evidence) and the
    reference commit with its stored per-shape values, on LABELS. Each is measured from a work
    tree of kgit's own holding that commit's files only (kgit/engine/worktree.py)."""

    candidate: str
    candidate_tree: str
    reference: str
    reference_values: dict[str, float]
    labels: list[str]
    versus: str  # how the reasons name the reference: "best" or "baseline"
    # The baseline's calibration ran measuring workers (the harness is frozen since): the
    # reference side may start, held, beside the candidate's first pass.
    workers: bool = False


@dataclass
class Outcome:
    verdict: Verdict
    evidence: Evidence
    passes: list[Measurement] = field(default_factory=list)  # the candidate's plain passes
    reference_passes: list[Measurement] = field(default_factory=list)
    judgement: ABJudgement | None = None


def ran_workers(baseline: RoundNote | None) -> bool:
    """Whether the baseline's A/A calibration ran measuring workers (Target.workers)."""
    return baseline is not None and baseline.statistics.get("mode") == "worker"


def evidence_for(target: Target, policy: str, mode: str, prior: Evidence | None) -> Evidence:
    evidence = prior or Evidence(
        policy, mode, target.candidate_tree, target.reference, list(target.labels)
    )
    evidence.validations += 1
    return evidence


def scores_of(runs: list[dict[str, float]], labels: list[str]) -> list[Score]:
    return [Score(dict(run), [], geomean(run[label] for label in labels)) for run in runs]


def estimate_dict(e: Estimate) -> dict[str, Any]:
    """An estimate as the note records it, with the smallest change it could have called."""
    return {
        "ratio": e.ratio,
        "ci": [e.low, e.high],
        "call": e.call,
        "floor_pct": e.floor * 100,
        "detectable_pct": None if math.isinf(e.detectable_pct) else e.detectable_pct,
    }


def statistics_dict(outcome: Outcome) -> dict[str, Any]:
    """What the note shows of the judged evidence."""
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
    if evidence.policy == "interleaved":
        data["pairs"] = len(evidence.pairs)
        if evidence.block_ms:
            data["block_ms"] = evidence.block_ms
    if judged is not None:
        data["aggregate"] = estimate_dict(judged.aggregate)
        data["shapes"] = {label: estimate_dict(e) for label, e in judged.shapes.items()}
    return data
