"""What `kgit worker --json` prints: one line per round as it ends, then the summary
(docs/json.md; kgit/records/results.py turns each into JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgit.records.results import OMITTED_WHEN_NONE, Result


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerRound(Result):
    event: str = "round"
    round: int
    hypothesis: str
    line: int  # the queue's line it came from
    rebases: int
    status: str
    commit: str | None
    reason: str | None = field(default=None, metadata=OMITTED_WHEN_NONE)  # why it was rolled back
    # The verdict of a round rolled back on it: `kgit round validate --json`'s document.
    verdict: dict[str, Any] | None = field(default=None, metadata=OMITTED_WHEN_NONE)
    closed_elsewhere: bool | None = field(
        default=None, metadata=OMITTED_WHEN_NONE
    )  # another clone closed it
    worker: str
    device: str


@dataclass(frozen=True, slots=True)
class WorkerClaims:
    """A shared queue's lines, as this clone's worker met them."""

    clone: str
    lost: int  # lines another worker claimed first
    taken_back: tuple[int, ...]  # rounds rolled back as their workers ended


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerSummary(Result):
    event: str = "done"
    campaign: str
    worker: str
    device: str
    worktree: str
    rounds: int
    accepted: int
    rolled_back: int
    seconds: float
    rounds_per_hour: float | None
    sharing: dict[str, Any]  # {remote, ...counts, conflicts} (kgit/engine/sharing/publish.py)
    claims: WorkerClaims | None
