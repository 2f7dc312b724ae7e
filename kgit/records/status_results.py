"""What `kgit status` and `kgit log` return (their `--json` documents, docs/json.md;
kgit/records/results.py turns them into JSON)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kgit.records.results import Result


@dataclass(frozen=True, slots=True)
class LineageRow:
    """One round in the lineage, as kgit recorded it (`kgit log`)."""

    round: int
    status: str
    hypothesis: str
    aggregate: float | None
    # The changes as kgit/judge/figures.py defines them: {pct, low, high, basis, chain}.
    vs_baseline: dict[str, Any] | None
    delta_vs_baseline_pct: float | None
    baseline_aggregate: float | None
    vs_best: dict[str, Any] | None
    delta_vs_best_pct: float | None
    level: str | None
    commit: str | None
    decided_at: str | None
    decision: str | None
    reason: str | None
    attribution: str | None
    lesson: str | None
    note: str | None  # how the round's note on the notes ref differs from the record


@dataclass(frozen=True, slots=True)
class Lineage(Result):
    """`kgit log --json`: the rows, as a list."""

    json_root: ClassVar[str | None] = "rows"
    rows: tuple[LineageRow, ...]


@dataclass(frozen=True, slots=True)
class CampaignNames(Result):
    """`kgit status --all --json`: the campaigns' names, as a list."""

    json_root: ClassVar[str | None] = "names"
    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CampaignTarget:
    op: str
    backend: str
    gpu: str | None
    metric: str


@dataclass(frozen=True, slots=True)
class BestLine:
    ref: str
    commit: str
    round: int | None
    aggregate: float | None  # the best round's first pass
    vs_baseline: dict[str, Any] | None  # its change (kgit/judge/figures.py)


@dataclass(frozen=True, slots=True)
class OpenRoundState:
    """This work tree's round, else the oldest in flight."""

    round: int
    tip: str | None
    hypothesis: str
    branch: str
    has_commit: bool
    branch_missing: bool
    verdict: str | None
    gate: str | None  # "passed", "failed", or None when never gated (--no-verify)
    interrupted: str | None  # "accept" or "rollback" when one was killed half-way


@dataclass(frozen=True, slots=True)
class BestMoved:
    """The best line moved outside kgit: where it is, where the record puts it, the fix."""

    tip: str
    recorded: str
    round: int | None
    restore: str


@dataclass(frozen=True, slots=True)
class CampaignStatus(Result):
    campaign: str
    target: CampaignTarget
    branch: str | None
    baselined: bool
    finished: bool
    best: BestLine
    baseline_aggregate: float | None
    rounds_recorded: int
    accepted: int
    rolled_back: int
    next_round: int
    max_iterations: int
    representative_shapes: tuple[str, ...]
    open_round: OpenRoundState | None
    rounds_in_flight: tuple[int, ...]
    consecutive_rollbacks: int
    stagnation_review_due: bool
    escalation: str | None
    closed_round_checked_out: int | None
    stray_branches: tuple[str, ...]
    saved_patches: tuple[str, ...]
    trusted: bool
    gate_installed: bool
    notes_changed: tuple[int, ...]
    # The latest gate audit's summary as the record stores it (kgit/records/gate_audit.py).
    gate_audit: dict[str, Any] | None
    # The baseline's audit in the background (kgit/engine/guards/audit_background.py).
    gate_audit_background: dict[str, Any] | None
    best_moved: BestMoved | None
    next_step: str = ""
