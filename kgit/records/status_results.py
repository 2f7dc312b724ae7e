"""What `kgit status` returns (its `--json` document, docs/json.md; kgit/records/results.py
turns it into JSON). The lineage's rows, which status counts and `kgit log` lists, are
kgit/records/lineage_results.py's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kgit.records.results import Result


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
