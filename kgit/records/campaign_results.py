"""What the campaign's lifecycle commands return: `kgit init`, `baseline` and `doctor` (their
`--json` documents, docs/json.md; kgit/records/results.py turns them into JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgit.records.results import OMITTED_WHEN_NONE, Result


@dataclass(frozen=True, slots=True)
class CampaignCreated(Result):
    campaign: str
    base: str  # the commit the campaign starts from
    best: str  # the best line's ref
    hooks: tuple[str, ...]  # the hooks installed


@dataclass(frozen=True, slots=True)
class BaselineRecorded(Result):
    campaign: str
    round: int  # always 1
    commit: str
    aggregate: float | None
    metric: str
    shapes: dict[str, float | None]  # label -> value, None where not measured
    representative_shapes: tuple[str, ...]
    inactive_shapes: tuple[str, ...]
    frozen_header: tuple[str, ...]
    noise_floors_pct: dict[str, float]
    fingerprint: dict[str, Any]  # the harness's fingerprint lines, as it printed them
    protected: dict[str, str | None]  # path -> sha
    gate_unseen: tuple[str, ...]
    # The gate audit's summary as the record stores it (kgit/records/gate_audit.py), when it
    # ran inline; else the background audit's mark (kgit/engine/guards/audit_background.py).
    gate_audit: dict[str, Any] | None
    gate_audit_background: dict[str, Any] | None
    # Seconds per phase of the command (kgit/progress.py), set by `kgit baseline` once it ended.
    phases: dict[str, float] | None = field(default=None, metadata=OMITTED_WHEN_NONE)


@dataclass(frozen=True, slots=True)
class DoctorFinding:
    """One inconsistency `kgit doctor` found: what it is, in words, and the command that
    repairs it."""

    kind: str  # a stable key for agents, e.g. "stale_branch"
    subject: str  # the branch, round, commit or file it is about
    problem: str
    repair: str  # the one command that repairs it
    safe: bool  # `kgit doctor --fix` applies it: nothing is lost and nothing is decided


@dataclass(frozen=True, slots=True)
class DoctorReport(Result):
    campaign: str
    clean: bool
    problems: tuple[DoctorFinding, ...]
    fixed: tuple[DoctorFinding, ...]
