"""What `kgit log` returns, and the lineage's rows that `kgit status` reads too (the `--json`
document, docs/json.md; kgit/records/results.py turns it into JSON). Apart from status's own
results, so that `kgit log` creates none of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kgit.records.results import Result

# The bases of a change (kgit/judge/figures.py defines the changes): what a row's `vs_baseline`
# and `vs_best` say they rest on. Here, where the views that print them reach them without the
# figures' arithmetic.
PAIRED = "paired"
FIRST_PASS = "first pass"


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
