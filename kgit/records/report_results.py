"""What `kgit report --json` prints (docs/json.md; kgit/records/results.py turns it into JSON).
The report's sections are typed at this level; inside them, the rows the views build (a round's
summary, the trend, the termination check) are mappings of their own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgit.records.results import Result, view_only


@dataclass(frozen=True, slots=True)
class TargetCheck:
    """Rule 10's performance target against the best line's aggregate."""

    target: float | str | None
    best_aggregate: float | None
    reached: bool
    checkable: bool  # a numeric target; one in words (or none) is never reported reached


@dataclass(frozen=True, slots=True, kw_only=True)
class EfficiencyCheck:
    """Rule 10's "acceptable hardware efficiency": shown, never reached (the user's call)."""

    reached: bool = False
    measured: bool
    device: str | None
    pct_of_peak: dict[str, float]  # shape -> % of the device's peak


@dataclass(frozen=True, slots=True)
class IterationsCheck:
    used: int
    max: int
    reached: bool


@dataclass(frozen=True, slots=True)
class StopCheck:
    reached: bool  # the campaign is marked finished


@dataclass(frozen=True, slots=True)
class Termination:
    """Each of rule 10's conditions, with what it was judged on (kgit/judge/termination.py)."""

    target: TargetCheck
    hardware_efficiency: EfficiencyCheck
    max_iterations: IterationsCheck
    user_stop: StopCheck


@dataclass(frozen=True, slots=True)
class Applicability:
    """The static training-shortcut check of the best line's change (rule 11)."""

    diff: str  # base..best
    files: tuple[str, ...]
    added_lines: int
    patterns: tuple[str, ...]
    findings: tuple[dict[str, Any], ...]  # kgit/judge/rule11.py: Finding.to_dict
    training_step_measured: bool


@dataclass(frozen=True, slots=True)
class ReportBest:
    round: int | None
    commit: str
    hypothesis: str | None
    aggregate: float | None
    vs_baseline: dict[str, Any] | None  # its change (kgit/judge/figures.py)
    vs_baseline_pct: float | None


@dataclass(frozen=True, slots=True)
class RolledBack:
    round: int
    hypothesis: str
    reason: str | None


@dataclass(frozen=True, slots=True)
class CampaignReport(Result):
    campaign: str
    target: dict[str, Any]  # the manifest's target, shapes and thresholds as the record holds them
    baseline: dict[str, Any] | None  # round-1's summary (kgit/views/summary.py)
    rounds: tuple[dict[str, Any], ...]  # every other round's summary
    best: ReportBest
    did_not_work: tuple[RolledBack, ...]
    memory_bound: bool
    trend: tuple[dict[str, Any], ...]  # kgit/views/trend.py's rows
    rule9: dict[str, Any]
    best_vs_baseline: tuple[dict[str, Any], ...]
    termination: Termination
    applicability: Applicability
    gate_audit: dict[str, Any] | None
    plots: tuple[str, ...] = ()
    gate_audit_background: dict[str, Any] | None = None
    # For the text and the plots only: the rounds as the views read them, the policy in words.
    views: tuple[Any, ...] = view_only(())
    policy_words: str = view_only("")
