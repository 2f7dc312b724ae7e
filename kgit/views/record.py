"""Everything a review needs about a campaign's rounds, read from git in a few batched calls.

`kgit report` and `kgit export` walk every round: its note, its bench CSV, its diffstat and the
notes its author left in the commit message. One git process per round would cost ~3 ms each
(3 s at 1,000 rounds); here each kind of object is read for all rounds at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgit.errors import KgitError
from kgit.judge.figures import Figures
from kgit.records.message import recorded_fields
from kgit.records.notes import BASELINE, ROLLED_BACK, RoundNote
from kgit.records.reader import RecordReader
from kgit.records.schema import BenchTable, parse_bench_csv


@dataclass
class RoundView:
    """One round as a review sees it. `note` is None for a round rolled back before any commit
    (the campaign state keeps its hypothesis and reason)."""

    number: int
    status: str
    hypothesis: str
    commit: str | None = None
    note: RoundNote | None = None
    csv: bytes | None = None
    table: BenchTable | None = None
    diffstat: str = ""
    recorded: dict[str, str] = field(default_factory=dict)
    rollback_reason: str | None = None
    decided_at: str | None = None
    warnings: list[str] = field(default_factory=list)  # its notes refs differ from the record

    @property
    def accepted(self) -> bool:
        return self.note is not None and self.note.accepted

    @property
    def is_baseline(self) -> bool:
        return self.status == BASELINE


def _table(csv: bytes | None, note: RoundNote, frozen: tuple[str, ...] | None) -> BenchTable | None:
    if not csv:
        return None
    try:
        return parse_bench_csv(csv, note.metric, frozen)
    except KgitError:  # an unreadable CSV leaves the round without SNR and side columns
        return None


def load_rounds(
    campaign: RecordReader, diff_paths: tuple[str, ...] = (), only: int | None = None
) -> list[RoundView]:
    """Every round of CAMPAIGN in round order, abandoned ones included (ONLY: that round).
    DIFF_PATHS limits the diffstats to those paths (the export limits them to the kernel)."""
    rounds = [(c, n) for c, n in campaign.all_rounds() if only in (None, n.round)]
    commits = [c for c, _ in rounds]
    bench_blobs = campaign.recorded("bench")
    drifted = campaign.note_problems(("rounds", "bench"))
    wanted = {c: bench_blobs[c] for c in commits if c in bench_blobs}
    blobs = campaign.read_blobs(list(dict.fromkeys(wanted.values())))
    pairs = [(n.parent, c) for c, n in rounds if n.parent]
    stats = campaign.diffstats(pairs, diff_paths)
    messages = campaign.commit_messages(commits)
    frozen = tuple(campaign.state.frozen_header or ()) or None
    views = []
    for commit, note in rounds:
        csv = blobs[wanted[commit]] if commit in wanted else None
        views.append(
            RoundView(
                number=note.round,
                status=note.status,
                hypothesis=note.hypothesis,
                commit=commit,
                note=note,
                csv=csv,
                table=_table(csv, note, frozen),
                diffstat=stats.get(commit, ""),
                recorded={**recorded_fields(messages.get(commit, "")), **_said(note)},
                rollback_reason=note.rollback_reason,
                decided_at=note.decided_at,
                warnings=drifted.get(commit, []),
            )
        )
    for lost in campaign.state.abandoned:
        if only not in (None, lost["round"]):
            continue
        views.append(
            RoundView(
                number=lost["round"],
                status=ROLLED_BACK,
                hypothesis=lost["hypothesis"],
                rollback_reason=lost.get("reason"),
                decided_at=lost.get("at"),
                recorded={"lesson": lost["lesson"]} if lost.get("lesson") else {},
            )
        )
    return sorted(views, key=lambda view: view.number)


def _said(note: RoundNote) -> dict[str, str]:
    """What the user said of the round when closing it (kgit round accept --attribution and
    --lesson, rollback --lesson): it wins over a `Key:` line of the commit message."""
    said = {"attribution": note.attribution, "lesson": note.lesson}
    return {key: text for key, text in said.items() if text}


def load_round(campaign: RecordReader, number: int) -> RoundView | None:
    found = load_rounds(campaign, only=number)
    return found[0] if found else None


def figures_of(views: list[RoundView]) -> Figures:
    """The changes of VIEWS' rounds (kgit/judge/figures.py), chained over their own notes."""
    return Figures((view.commit, view.note) for view in views if view.commit and view.note)
