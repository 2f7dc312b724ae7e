"""The one definition of a round's changes: vs best and vs baseline, of its aggregate and of each
shape. Every view (`kgit log`, `show`, `status`, `report`, their `--json`) reads them from here.

A round judged in A/B pairs carries the pairs' estimate and its interval: that is the change.
Its first pass is another measurement, taken at another moment (in blocks, with resident
harnesses), and on a loaded CPU it read +7.7% vs baseline where the pairs read +262% and `kgit
finish`, measuring the baseline commit again, +310%. So where pairs exist they are the figure:

- vs best: the round's own pairs against the best line it started from.
- vs baseline: the pairs chained along the best line, the round's estimate times that of each
  accepted round back to the baseline (each was paired against the line before it). Log-ratios
  add and, the chain's pairs being independent measurements, their intervals' half-widths add in
  quadrature (a normal approximation, stated where the figure is shown).

Where a link has no pairs (the seed policy, notes written before pairs), the figure is the
first pass's ratio on the shapes both measured, and says so (`basis: first pass`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kgit.records.lineage_results import FIRST_PASS, PAIRED
from kgit.records.notes import BASELINE, RoundNote


@dataclass(frozen=True)
class Figure:
    """A change in percent; LOW..HIGH its interval when paired; CHAIN the rounds whose pairs it
    multiplies (one for a round against its own reference, none for a measurement outside a
    round's note)."""

    pct: float
    basis: str
    low: float | None = None
    high: float | None = None
    chain: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "pct": self.pct,
            "low": self.low,
            "high": self.high,
            "basis": self.basis,
            "chain": list(self.chain),
        }


ZERO = Figure(0.0, PAIRED)  # the baseline against itself: exact, no interval


@dataclass(frozen=True)
class _Log:
    """An estimate in log space: the log-ratio and the interval's half-widths below and above."""

    mid: float
    down: float
    up: float
    chain: tuple[int, ...]

    def then(self, other: _Log) -> _Log:
        return _Log(
            self.mid + other.mid,
            math.hypot(self.down, other.down),
            math.hypot(self.up, other.up),
            self.chain + other.chain,
        )

    def figure(self) -> Figure:
        def change(log_ratio: float) -> float:
            return round(math.expm1(log_ratio) * 100.0, 4)

        return Figure(
            change(self.mid),
            PAIRED,
            change(self.mid - self.down),
            change(self.mid + self.up),
            self.chain,
        )


_IDENTITY = _Log(0.0, 0.0, 0.0, ())


def _estimate(note: RoundNote, shape: str | None = None) -> _Log | None:
    """The note's paired estimate of its aggregate (SHAPE None) or of one shape, if any: the
    verdict's change (recorded to 4 decimals) within the interval of the note's statistics."""
    stats = note.statistics
    if shape is None:
        found, change = stats.get("aggregate"), note.delta_vs_best_pct
    else:
        found = (stats.get("shapes") or {}).get(shape)
        change = next((s.delta_pct for s in note.shapes if s.label == shape), None)
    if not isinstance(found, dict) or change is None or not found.get("ci"):
        return None
    low, high = found["ci"]
    if not low or low <= 0 or not high or math.isinf(high) or change <= -100:
        return None
    mid = math.log1p(change / 100.0)
    down, up = max(mid - math.log(low), 0.0), max(math.log(high) - mid, 0.0)
    return _Log(mid, down, up, (note.round,))


class Figures:
    """The figures of every round of one campaign, from its notes (commit, note) in any order."""

    def __init__(self, rounds: Iterable[tuple[str, RoundNote]]) -> None:
        self._by_commit = {commit: note for commit, note in rounds}
        self._baseline = next((c for c, n in self._by_commit.items() if n.status == BASELINE), None)

    def _line(self, commit: str | None, shape: str | None, seen: int = 0) -> _Log | None:
        """The best line at COMMIT against the baseline, chained over accepted rounds' pairs;
        None where a link has no pairs (or the commit is not a recorded round)."""
        if commit is not None and commit == self._baseline:
            return _IDENTITY
        note = self._by_commit.get(commit or "")
        if note is None or not note.accepted or seen > len(self._by_commit):
            return None
        own, before = _estimate(note, shape), self._line(note.parent, shape, seen + 1)
        return before.then(own) if own is not None and before is not None else None

    def vs_best(self, note: RoundNote) -> Figure | None:
        own = _estimate(note)
        if own is not None:
            return own.figure()
        if note.delta_vs_best_pct is None:
            return None
        return Figure(note.delta_vs_best_pct, FIRST_PASS)

    def vs_baseline(self, note: RoundNote) -> Figure | None:
        if note.status == BASELINE:
            return ZERO
        own = _estimate(note) if note.aggregate is not None else None
        return self._chained(own, note.parent, None, note.delta_vs_baseline_pct)

    def shape_vs_best(self, note: RoundNote, shape: str) -> Figure | None:
        result = next((s for s in note.shapes if s.label == shape), None)
        own = _estimate(note, shape)
        if own is not None:
            return own.figure()
        if result is None or result.delta_pct is None:
            return None
        return Figure(result.delta_pct, FIRST_PASS)

    def shape_vs_baseline(self, note: RoundNote, shape: str) -> Figure | None:
        result = next((s for s in note.shapes if s.label == shape), None)
        if note.status == BASELINE:
            return ZERO if result is not None and result.value is not None else None
        if result is None or result.value is None:
            return None
        return self._chained(_estimate(note, shape), note.parent, shape, result.vs_baseline_pct)

    def _chained(
        self, own: _Log | None, parent: str | None, shape: str | None, first_pass: float | None
    ) -> Figure | None:
        """OWN chained to the baseline through PARENT's line; where either is missing, the
        FIRST_PASS change (labelled as such), or none."""
        before = self._line(parent, shape) if own is not None else None
        if own is not None and before is not None:
            return before.then(own).figure()
        return None if first_pass is None else Figure(first_pass, FIRST_PASS)


def measured(change_pct: float | None, interval: tuple[float, float] | None) -> Figure | None:
    """A change measured once, outside a round's note (`kgit finish`): paired when its
    INTERVAL (low and high ratios) came with it, else a comparison of passes."""
    if change_pct is None:
        return None
    if interval is None:
        return Figure(round(change_pct, 4), FIRST_PASS)
    low, high = interval
    return Figure(round(change_pct, 4), PAIRED, (low - 1) * 100, (high - 1) * 100)


def figure_dict(figure: Figure | None) -> dict[str, Any] | None:
    return figure.to_dict() if figure is not None else None
