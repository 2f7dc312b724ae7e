"""The seed's performance trend (iteration rule 8) and the per-shape comparison of the best
line with the baseline, over round views; its monotonicity check (rule 9) is judged in
kgit/judge/monotonic.py.

Quick validations measure 3-5 representative shapes while the baseline measured all of them, so
a round is compared with the baseline on the shapes both measured, recomputed from the
byte-exact bench CSVs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgit.judge.figures import figure_dict
from kgit.judge.monotonic import compared, memory_bound, monotonic_check, side_metrics
from kgit.judge.scoring import pct
from kgit.records.evidence import RESIDENT_MODE
from kgit.records.lineage_results import PAIRED
from kgit.records.notes import in_line_order
from kgit.views.numbers import change
from kgit.views.record import RoundView, figures_of

GEMM_COLUMNS = (
    ("fwd_avg", "Fwd Avg TFLOPS"),
    ("fwd_peak", "Fwd Peak TFLOPS"),
    ("bwd_avg", "Bwd Avg TFLOPS"),
    ("bwd_peak", "Bwd Peak TFLOPS"),
    ("combined_step", "Combined Step TFLOPS"),
)
# Memory-bound campaigns: the same rule-8 layout in GB/s, and the primary metric where the GEMM
# table has Combined Step TFLOPS (there are no FLOPs to combine).
MEMORY_COLUMNS = (
    ("fwd_gbs_avg", "Fwd Avg GB/s"),
    ("fwd_gbs_peak", "Fwd Peak GB/s"),
    ("bwd_gbs_avg", "Bwd Avg GB/s"),
    ("bwd_gbs_peak", "Bwd Peak GB/s"),
    ("primary", "{metric}"),
)


@dataclass(frozen=True)
class TrendLayout:
    columns: tuple[tuple[str, str], ...]  # (key, header)
    cell_keys: tuple[tuple[str, str], ...]  # (short name, key) in the vs Baseline cell

    @classmethod
    def for_metric(cls, metric: str) -> TrendLayout:
        if memory_bound(metric):
            columns = tuple((k, h.format(metric=metric)) for k, h in MEMORY_COLUMNS)
            cell: tuple[tuple[str, str], ...] = (("fwd", "fwd_gbs_avg"), ("bwd", "bwd_gbs_avg"))
            return cls(columns, cell)
        cell = (("step", "combined_step"), ("fwd", "fwd_avg"), ("bwd", "bwd_avg"))
        return cls(GEMM_COLUMNS, cell)

    @property
    def headers(self) -> list[str]:
        return [
            "Round",
            "Status",
            "Description",
            *(h for _, h in self.columns),
            "vs Baseline",
            "Key Finding",
        ]


def key_finding(view: RoundView) -> str:
    if view.rollback_reason:
        return view.rollback_reason
    if view.recorded.get("attribution"):
        return view.recorded["attribution"]
    if view.note and view.note.reasons:
        return view.note.reasons[0]
    return ""


def _first_pass_vs_baseline(
    view: RoundView, baseline: RoundView | None, layout: TrendLayout, metric: str
) -> dict[str, float]:
    """The side metrics' changes, first pass against the baseline's, on the shapes both bench
    CSVs hold; none for a round whose first pass ran in blocks, which the baseline's plain pass
    does not compare with (on a CPU that read 12.6x where the pairs read +297%)."""
    if baseline is None or (view.note and view.note.statistics.get("mode") == RESIDENT_MODE):
        return {}
    pair = compared(view.table, baseline.table, metric)
    if pair is None:
        return {}
    mine, base = pair
    return {
        short: pct(mine[key], base[key])
        for short, key in layout.cell_keys
        if key in mine and key in base
    }


def trend_rows(views: list[RoundView], metric: str) -> list[dict[str, Any]]:
    """One row per round (rule 8): the side columns on the round's own shapes, the change vs
    the baseline (kgit/judge/figures.py), and the side metrics' first-pass changes."""
    layout = TrendLayout.for_metric(metric)
    baseline = next((v for v in views if v.is_baseline), None)
    figures = figures_of(views)
    rows = []
    for view in views:
        own = side_metrics(view.table, metric) if view.table is not None else {}
        if not own and view.note is not None:
            own = dict(view.note.diagnostics)
        vs_base = figures.vs_baseline(view.note) if view.note is not None else None
        rows.append(
            {
                "round": view.number,
                "status": view.status,
                "description": view.hypothesis,
                "values": {key: own.get(key) for key, _ in layout.columns},
                "vs_baseline": figure_dict(vs_base),
                "first_pass_vs_baseline_pct": _first_pass_vs_baseline(
                    view, baseline, layout, metric
                ),
                "key_finding": key_finding(view),
            }
        )
    return rows


def vs_baseline_cell(row: dict[str, Any]) -> str:
    """The trend's vs Baseline cell: the round's change, then its side metrics' first pass
    (rule 8's `step +3.359%, fwd +4.000%, bwd +3.200%`)."""
    sides = ", ".join(
        f"{short} {value:+.3f}%" for short, value in row["first_pass_vs_baseline_pct"].items()
    )
    headline = change(row["vs_baseline"]) if row["vs_baseline"] else ""
    if headline and sides:
        return f"{headline}; first pass: {sides}"
    return headline or (f"first pass: {sides}" if sides else "")


def rule9(views: list[RoundView], metric: str, line: list[str]) -> dict[str, Any]:
    """Rule 9's check over the accepted rounds among VIEWS (kgit/judge/monotonic.py), in the order
    the best line took them (LINE: `RecordReader.best_line()`), not in round order; a round's
    step is its paired change vs best where it has one."""
    accepted = [(v.commit, v) for v in views if v.accepted and v.commit is not None]
    figures = figures_of(views)
    paired = {
        v.number: found.pct
        for v in views
        if v.accepted and v.note is not None
        and (found := figures.vs_best(v.note)) is not None and found.basis == PAIRED
    }  # fmt: skip
    ordered = in_line_order(accepted, line)
    return monotonic_check([(v.number, v.table) for v in ordered], metric, paired)


def best_vs_baseline(views: list[RoundView], best_commit: str | None) -> list[dict[str, Any]]:
    """Per target shape: the baseline's and the best line's first pass (where its round measured
    the shape), and the best line's change vs the baseline (kgit/judge/figures.py), with the
    speedup it makes."""
    baseline = next((v for v in views if v.is_baseline and v.note), None)
    best = next((v for v in views if v.commit == best_commit and v.note), None)
    if baseline is None or baseline.note is None:
        return []
    figures = figures_of(views)
    base_values = baseline.note.values()
    best_values = best.note.values() if best is not None and best.note is not None else {}
    rows = []
    for shape in baseline.note.shapes:
        old, new = base_values.get(shape.label), best_values.get(shape.label)
        figure = (
            figures.shape_vs_baseline(best.note, shape.label)
            if best is not None and best.note is not None and old and new
            else None
        )
        rows.append(
            {
                "shape": shape.label,
                "baseline": old,
                "best": new,
                "best_round": best.number if best is not None and new is not None else None,
                "vs_baseline": figure_dict(figure),
                "speedup": 1.0 + figure.pct / 100.0 if figure else None,
                "change_pct": figure.pct if figure else None,
            }
        )
    return rows
