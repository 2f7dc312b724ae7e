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

MAX_LINES = 8


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
    return f"worst shape {label}: {_pct(delta)} vs best"


def log_summary(note: RoundNote) -> str:
    """NOTE in at most MAX_LINES short lines, for `git log`."""
    level = f" ({note.level}, {len(note.shapes)} shapes)" if note.shapes else ""
    lines = [f"kgit {note.campaign} round-{note.round}: {note.status}"]
    if note.aggregate is not None:
        versus = (
            "the baseline"
            if note.status == BASELINE
            else f"{_pct(note.delta_vs_best_pct)} vs best, "
            f"{_pct(note.delta_vs_baseline_pct)} vs baseline"
        )
        lines.append(f"{note.metric} {_num(note.aggregate)}{level}: {versus}")
    worst = _worst(note)
    if worst:
        lines.append(worst)
    if note.reasons and note.status != BASELINE:
        more = f" (+{len(note.reasons) - 1} more)" if len(note.reasons) > 1 else ""
        lines.append(f"why: {note.reasons[0]}{more}")
    if note.status == ROLLED_BACK and note.rollback_reason:
        lines.append(f"rolled back: {note.rollback_reason}")
    lines += [f"attribution: {note.attribution}"] if note.attribution else []
    lines += [f"lesson: {note.lesson}"] if note.lesson else []
    lines = [line if len(line) <= 100 else line[:97] + "..." for line in lines[: MAX_LINES - 1]]
    lines.append(f"full record: git log --notes=kgit/{note.campaign}/rounds")
    return "\n".join(lines) + "\n"
