"""What the round commands return: `kgit round start`, `validate`, `accept` and `rollback` (their
`--json` documents, docs/json.md; kgit/records/results.py turns them into JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgit.records.notes import ShapeResult
from kgit.records.results import OMITTED_WHEN_NONE, Result


@dataclass(frozen=True, slots=True)
class RoundStarted(Result):
    campaign: str
    round: int
    branch: str  # full ref of the round branch
    worktree: str  # the work tree it is checked out in
    parent: str  # the best tip it starts from
    hypothesis: str
    gate_installed: bool
    commit: str  # how to commit the change here, in words


@dataclass(frozen=True, slots=True)
class RoundVerdict(Result):
    """The verdict `kgit round validate` recorded in the round's note."""

    campaign: str
    round: int
    commit: str
    status: str
    decision: str | None
    cause: str | None
    reasons: tuple[str, ...]
    # Rule 11's findings, as the note records them (kgit/judge/rule11.py: Finding.to_dict).
    findings: tuple[dict[str, Any], ...]
    aggregate: float | None
    delta_vs_best_pct: float | None
    delta_vs_baseline_pct: float | None
    shapes: tuple[ShapeResult, ...]
    runs: int | None  # the candidate's plain passes in the evidence
    pairs: int | None  # interleaved: A/B pairs in the evidence
    validations: int | None
    mode: str | None
    tree: str | None
    # Seconds per phase of the command (kgit/progress.py), set by `kgit round validate` once it
    # ended; absent from the verdict a worker's round line carries (it times no phases).
    phases: dict[str, float] | None = field(default=None, metadata=OMITTED_WHEN_NONE)


@dataclass(frozen=True, slots=True)
class TreeFollowed:
    """Another work tree with the best line checked out, after the best line moved."""

    path: str
    followed: bool  # its index and files were brought to the new tip
    files_at: str  # the commit whose files it holds, local changes aside


@dataclass(frozen=True, slots=True)
class RoundAccepted(Result):
    campaign: str
    round: int
    status: str  # the accepting decision
    best: str  # the best line's new tip
    commit: str
    kept_at: str
    work_trees: tuple[TreeFollowed, ...]


@dataclass(frozen=True, slots=True)
class RoundRolledBack(Result):
    campaign: str
    round: int
    status: str
    commit: str | None  # the round's last commit, None when it had none
    kept_at: str | None  # the ref keeping it
