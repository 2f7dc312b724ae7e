"""A campaign's lineage as `kgit log` and `kgit status` read it: one row per round, rejected
rounds included, as kgit recorded it; cached under .git/kgit/cache/ (the views only render the
rows)."""

from __future__ import annotations

import json
from typing import Any

from kgit.engine.campaign import Campaign
from kgit.engine.note_cache import write_cache
from kgit.records.lineage_results import FIRST_PASS, LineageRow
from kgit.records.notes import BASELINE, ROLLED_BACK, UNRECORDED, RoundNote, type_problems
from kgit.records.results import to_json

# 2: each row says the baseline figure its "vs baseline" is against; 3: the changes as
# kgit/judge/figures.py defines them (paired where pairs exist, with their interval)
ROWS_VERSION = 3


def log_rows(campaign: Campaign, rounds: list[tuple[str, RoundNote]]) -> list[LineageRow]:
    """The whole lineage, rejected rounds included, as kgit recorded it; `note` says when the
    round's note on the notes ref differs from that record (changed or missing)."""
    # Here, not at the top: a listing read from the cache (`lineage`) computes no figure and
    # compares no notes ref, and `kgit status` and `kgit log` load neither module then.
    from kgit.engine.guards.seal import drifts
    from kgit.judge.figures import Figure, Figures, figure_dict
    from kgit.judge.scoring import pct

    baseline = rounds[0][1] if rounds and rounds[0][1].status == BASELINE else None
    drifted = {d.target: d.how for d in drifts(campaign, ["rounds"]) if d.how != UNRECORDED}
    figures = Figures(rounds)
    rows = []
    for commit, note in rounds:
        vs_best, vs_base = figures.vs_best(note), figures.vs_baseline(note)
        # Older notes carry no delta: derived from the aggregates only over the same shapes.
        base = baseline.aggregate if baseline and note.level == baseline.level else None
        if vs_base is None and note.aggregate and base:
            vs_base = Figure(pct(note.aggregate, base), FIRST_PASS)
        rows.append(
            LineageRow(
                round=note.round,
                status=note.status,
                hypothesis=note.hypothesis,
                aggregate=note.aggregate,
                vs_baseline=figure_dict(vs_base),
                delta_vs_baseline_pct=vs_base.pct if vs_base else None,
                baseline_aggregate=note.baseline_aggregate,
                vs_best=figure_dict(vs_best),
                delta_vs_best_pct=vs_best.pct if vs_best else None,
                level=note.level,
                commit=commit,
                decided_at=note.decided_at,
                decision=note.decision,
                reason=note.rollback_reason,
                attribution=note.attribution,
                lesson=note.lesson,
                note=drifted.get(commit),
            )
        )
    rows += [_abandoned(lost) for lost in campaign.state.abandoned]
    return sorted(rows, key=lambda row: row.round)


def _abandoned(lost: dict[str, Any]) -> LineageRow:
    """The row of a round rolled back before any commit: no note holds it, the state does."""
    return LineageRow(
        round=lost["round"],
        status=ROLLED_BACK,
        hypothesis=lost["hypothesis"],
        aggregate=None,
        vs_baseline=None,
        delta_vs_baseline_pct=None,
        baseline_aggregate=None,
        vs_best=None,
        delta_vs_best_pct=None,
        level=None,
        commit=None,
        decided_at=lost["at"],
        decision=ROLLED_BACK,
        reason=lost.get("reason"),
        attribution=None,
        lesson=lost.get("lesson"),
        note=None,
    )


def lineage(campaign: Campaign) -> list[LineageRow]:
    """`log_rows` of every round, cached in .git/kgit/cache/ under the commits of the notes ref
    and the campaign record it was computed from: any new note or state moves one of them.
    At 1,000 rounds this saves listing, loading and building every note (~70 ms of 0.3 s)."""
    key = [campaign.notes_at_load, campaign.record_sha, ROWS_VERSION]
    path = campaign.repo.kgit_dir() / "cache" / f"lineage-{campaign.name}.json"
    try:
        cached = json.loads(path.read_bytes())
        if cached.get("key") == key and key[0] and not any(map(_malformed, cached["rows"])):
            return [LineageRow(**row) for row in cached["rows"]]
    except (OSError, ValueError, AttributeError, TypeError):
        pass
    rows = log_rows(campaign, campaign.all_rounds(with_shapes=False))
    if key[0]:
        write_cache(path, {"key": key, "rows": to_json(rows)})
    return rows


def _malformed(row: object) -> bool:
    """A cached row a hand (or a tool) rewrote with values of the wrong types: read as no cache,
    or every view that renders it crashed."""
    return not isinstance(row, dict) or bool(type_problems(LineageRow, row))
