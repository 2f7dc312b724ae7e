"""What the commands that look after a campaign return: `kgit init --from-template`, `trust`,
`gate audit`, `manifest edit`, `campaign delete` and `gc` (their `--json` documents,
docs/json.md; kgit/records/results.py turns them into JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgit.records.results import OMITTED_WHEN_NONE, SPREAD, Result


@dataclass(frozen=True, slots=True)
class TemplateWritten(Result):
    template: str
    harness: str
    manifest: str
    missing: tuple[str, ...]  # the manifest's fields still to fill in
    shapes_for: str  # "gpu" or "cpu"
    cpu_shapes_note: str | None


@dataclass(frozen=True, slots=True)
class CampaignTrust(Result):
    campaign: str
    manifest_sha256: str
    record: str
    trusted: bool
    previously_approved: str | None
    changed_since_approved: tuple[str, ...] | None
    commands: dict[str, str]  # manifest field -> the command kgit runs for it
    config_key: str
    was_trusted: bool | None = field(
        default=None, metadata=OMITTED_WHEN_NONE
    )  # set once `kgit trust` ran


@dataclass(frozen=True, slots=True)
class GateAuditShown(Result):
    """`kgit gate audit`: the stored audit (kgit/records/gate_audit.py, its keys as stored) and
    its counts."""

    audit: dict[str, Any] = field(default_factory=dict, metadata=SPREAD)
    tried: int = 0
    caught: int = 0
    timed_out: int = 0
    survived: int = 0
    unreached: int = 0
    equivalent: int = 0
    weak: bool = False
    drawn: int | None = None


@dataclass(frozen=True, slots=True)
class ManifestRevised(Result):
    campaign: str
    changed: dict[str, dict[str, Any]]  # field -> {from, to}
    warnings: tuple[str, ...]
    revision: int
    recorded: bool
    needs_trust: bool
    record: str | None = field(
        default=None, metadata=OMITTED_WHEN_NONE
    )  # the record's commit, when a revision was recorded


@dataclass(frozen=True, slots=True)
class CampaignDeleted(Result):
    campaign: str
    deleted_refs: tuple[str, ...]
    work_trees: tuple[str, ...]
    detached_head: bool
    audit_stopped: bool


@dataclass(frozen=True, slots=True)
class TreeInUse:
    """A tree `kgit gc` left because another running kgit measures in it."""

    tree: str
    pid: int


@dataclass(frozen=True, slots=True)
class TreesFolder:
    """A folder of measuring trees `kgit gc` removes."""

    path: str
    campaign: str
    reason: str
    trees: tuple[str, ...]
    in_use: tuple[TreeInUse, ...]
    mb: float


@dataclass(frozen=True, slots=True)
class Collected(Result):
    dry_run: bool
    leftovers: tuple[TreesFolder, ...]
    trees: int
    freed_mb: float
    kept_mb: float
    git_worktrees_before: int
    git_worktrees_after: int
