"""What the commands that read a campaign back return: `kgit show`, `tips`, `tips add`,
`export`, `import` and `csv parse` (their `--json` documents, docs/json.md;
kgit/records/results.py turns them into JSON)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kgit.records.notes import RoundNote
from kgit.records.results import Result
from kgit.records.tips import Tip


@dataclass(frozen=True, slots=True)
class RoundShown(Result):
    commit: str | None
    note: RoundNote | None  # the round's note, as kgit recorded it
    csv: str | None
    summary: dict[str, Any]  # the round's summary (kgit/views/summary.py)


@dataclass(frozen=True, slots=True)
class Tips(Result):
    """`kgit tips --json`: the tips, as a list."""

    json_root: ClassVar[str | None] = "tips"
    tips: tuple[Tip, ...]


@dataclass(frozen=True, slots=True)
class TipRecorded(Result):
    """`kgit tips add --json`: the tip recorded, its fields at the top."""

    json_root: ClassVar[str | None] = "tip"
    tip: Tip


@dataclass(frozen=True, slots=True)
class CampaignExported(Result):
    campaign: str
    folder: str
    rounds: int
    files: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CampaignImported(Result):
    campaign: str
    base: str
    best: str  # the best line's ref
    best_commit: str
    rounds: int


@dataclass(frozen=True, slots=True)
class CsvRow:
    label: str
    check: str
    metric: float | None
    values: dict[str, float | None]  # column -> value (None: not finite)


@dataclass(frozen=True, slots=True)
class CsvParsed(Result):
    file: str
    metric: str
    header: tuple[str, ...]
    rows: tuple[CsvRow, ...]
    all_pass: bool
    failing: tuple[str, ...]
    aggregate: float
