"""The note `git log` shows under a round's commit: a few lines a person reads like a lab notebook.

`kgit init` points `notes.displayRef` at `refs/notes/kgit/*/log`, so plain `git log` shows this
summary (status, the metric against the best line and the baseline, the worst shape, why, what
the user said of the round). The full round note stays on `refs/notes/kgit/<campaign>/rounds`,
where tools read it (`git log --notes=kgit/<campaign>/rounds`). The summary is derived from the
round note every time kgit writes one (kgit/engine/campaign.py), in the same transaction, so the
two never disagree; the hypothesis is not repeated (the commit message has it).
"""

from __future__ import annotations

from kgit.records.notes import BASELINE, ROLLED_BACK, RoundNote

# Plain `git log -1` of a round commit is 11 lines before the note (header, subject, the
# Hypothesis: line and kgit's two trailers, git's "Notes" line): 4 more keep it within 15.
MAX_LINES = 4
WIDTH = 100


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}%"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _worst(note: RoundNote) -> str | None:
    failing = [s.label for s in note.shapes if s.check != "PASS"]
    if failing:
        shown = ", ".join(failing[:3]) + (" ..." if len(failing) > 3 else "")
        return f"Check FAIL on {shown}"
    deltas = [(s.delta_pct, s.label) for s in note.shapes if s.delta_pct is not None]
    if not deltas or note.status == BASELINE:
        return None
    delta, label = min(deltas)
    return f"worst {label} {_pct(delta)}"


def _figures(note: RoundNote, changes: tuple[float | None, float | None] | None) -> str | None:
    """The metric against the best line and the baseline (CHANGES: the round's changes vs best
    and vs baseline as every view shows them, else the note's own), and the worst shape; the
    level and shape count give way first when the line is too long."""
    worst = _worst(note)
    if note.aggregate is None:
        return worst
    head = f"{note.metric} {_num(note.aggregate)}"
    if note.status == BASELINE:
        versus = "the baseline"
    else:
        vs_best, vs_base = changes or (note.delta_vs_best_pct, note.delta_vs_baseline_pct)
        versus = f"{_pct(vs_best)} vs best, {_pct(vs_base)} vs baseline"
        versus += f"; {worst}" if worst else ""
    level = f" ({note.level}, {len(note.shapes)} shapes)" if note.shapes else ""
    full = f"{head}{level}: {versus}"
    return full if len(full) <= WIDTH else f"{head}: {versus}"


def _said(note: RoundNote) -> str | None:
    """What the user said of the round: why it was rolled back, what it is owed to, the lesson."""
    said = []
    if note.status == ROLLED_BACK and note.rollback_reason:
        said.append(f"rolled back: {note.rollback_reason}")
    said += [f"attribution: {note.attribution}"] if note.attribution else []
    said += [f"lesson: {note.lesson}"] if note.lesson else []
    return "; ".join(said) or None


def log_summary(note: RoundNote, changes: tuple[float | None, float | None] | None = None) -> str:
    """NOTE in at most MAX_LINES lines of at most WIDTH characters, for `git log`; CHANGES: its
    changes vs best and vs baseline in percent (kgit/judge/figures.py), computed by the caller
    from the whole record (a chained vs baseline needs the earlier rounds)."""
    lines = [
        f"kgit {note.campaign} round-{note.round}: {note.status} "
        f"(full record: git log --notes=kgit/{note.campaign}/rounds)"
    ]
    lines += [figures] if (figures := _figures(note, changes)) else []
    if note.reasons and note.status != BASELINE:
        more = f" (+{len(note.reasons) - 1} more)" if len(note.reasons) > 1 else ""
        lines.append(f"why: {note.reasons[0]}{more}")
    lines += [said] if (said := _said(note)) else []
    return "".join(
        (line if len(line) <= WIDTH else line[: WIDTH - 3] + "...") + "\n"
        for line in lines[:MAX_LINES]
    )
