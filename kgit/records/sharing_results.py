"""What `kgit push` and `kgit pull` return (their `--json` documents, docs/json.md;
kgit/records/results.py turns them into JSON)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgit.records.results import Result


@dataclass(frozen=True, slots=True)
class RefPushed:
    ref: str
    new: str | None  # None: the ref is deleted there
    old: str | None


@dataclass(frozen=True, slots=True)
class Pushed(Result):
    remote: str
    campaigns: tuple[dict[str, Any], ...]  # per campaign: campaign, result, record
    pushed: tuple[RefPushed, ...]
    tips: tuple[str, ...]  # the tips refs pushed


@dataclass(frozen=True, slots=True)
class Pulled(Result):
    remote: str
    # Per campaign, what the pull did (kgit/engine/sharing/pull.py: result, record, moved, ...).
    campaigns: tuple[dict[str, Any], ...]
    tips: dict[str, Any]  # {updated, clashes}
