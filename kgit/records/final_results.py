"""What `kgit finish` returns: the final acceptance's facts, then what it recorded (its
`--json` document, docs/json.md; kgit/records/results.py turns it into JSON)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from kgit.records.results import Result
from kgit.records.status_results import CampaignTarget


@dataclass(frozen=True, slots=True)
class FinalSuite:
    command: str | None
    passed: bool


@dataclass(frozen=True, slots=True)
class FinalAccepted:
    """An accepted round, in the order the best line took it."""

    round: int
    status: str
    hypothesis: str
    commit: str


@dataclass(frozen=True, slots=True)
class DidNotWork:
    round: int
    hypothesis: str
    why: str


@dataclass(frozen=True, slots=True)
class FinalRound:
    """One commit of the final branch."""

    round: int
    source: str
    squashed: int


@dataclass(frozen=True, slots=True)
class FinalFacts:
    """The final acceptance's facts, checked and not recorded yet (its report is rendered
    from them)."""

    campaign: str
    target: CampaignTarget
    base: str
    best: str
    aggregate: float | None
    baseline_aggregate: float | None
    gain_pct: float | None
    vs_baseline: dict[str, Any] | None  # gain_pct as kgit/judge/figures.py spells it
    # Per shape: label, baseline, final, delta_pct, vs_baseline, pct_of_peak.
    shapes: tuple[dict[str, Any], ...]
    verdict: tuple[str, ...]
    independent_of_notes: str
    suite: FinalSuite
    suite_seconds: float | None
    changed: tuple[str, ...]
    allowed_outside_kernel_source: tuple[str, ...]
    accepted: tuple[FinalAccepted, ...]
    did_not_work: tuple[DidNotWork, ...]
    lessons: tuple[dict[str, Any], ...]  # the campaign's tips, as recorded (records/tips.py)
    final_branch: str
    final_notes: str
    final_rounds: tuple[FinalRound, ...]


@dataclass(frozen=True, slots=True)
class CampaignFinished(FinalFacts, Result):
    """FinalFacts, and what `kgit finish` recorded."""

    final_commit: str
    report: str
    trees_removed: int
    bytes_freed: int

    @classmethod
    def of(cls, facts: FinalFacts, **recorded: Any) -> CampaignFinished:
        return cls(**{f.name: getattr(facts, f.name) for f in fields(facts)}, **recorded)
