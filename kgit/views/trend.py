"""The seed's performance trend (iteration rule 8) and the per-shape comparison of the best
line with the baseline, over round views; its monotonicity check (rule 9) is judged in
kgit/judge/trend.py.

Quick validations measure 3-5 representative shapes while the baseline measured all of them, so
a round is compared with the baseline on the shapes both measured, recomputed from the
byte-exact bench CSVs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgit.judge.scoring import pct
from kgit.judge.trend import compared, memory_bound, monotonic_check, side_metrics
from kgit.records.notes import in_line_order
from kgit.views.record import RoundView

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


def trend_rows(views: list[RoundView], metric: str) -> list[dict[str, Any]]:
    """One row per round (rule 8): the side columns on the round's own shapes, and the change
    vs the baseline measured on those same shapes."""
    layout = TrendLayout.for_metric(metric)
    baseline = next((v for v in views if v.is_baseline), None)
    rows = []
    for view in views:
        own = side_metrics(view.table, metric) if view.table is not None else {}
        if not own and view.note is not None:
            own = dict(view.note.diagnostics)
        vs: dict[str, float] = {}
        pair = compared(view.table, baseline.table, metric) if baseline is not None else None
        if pair is not None:
            mine, base = pair
            vs = {
                short: pct(mine[key], base[key])
                for short, key in layout.cell_keys
                if key in mine and key in base
            }
        rows.append(
            {
                "round": view.number,
                "status": view.status,
                "description": view.hypothesis,
                "values": {key: own.get(key) for key, _ in layout.columns},
                "vs_baseline_pct": vs,
                "key_finding": key_finding(view),
            }
        )
    return rows


def vs_baseline_cell(vs: dict[str, float]) -> str:
    return ", ".join(f"{short} {value:+.3f}%" for short, value in vs.items())


def rule9(views: list[RoundView], metric: str, line: list[str]) -> dict[str, Any]:
    """Rule 9's check over the accepted rounds among VIEWS (kgit/judge/trend.py), in the order
    the best line took them (LINE: `RecordReader.best_line()`), not in round order."""
    accepted = [(v.commit, v) for v in views if v.accepted and v.commit is not None]
    return monotonic_check([(v.number, v.table) for v in in_line_order(accepted, line)], metric)


def best_vs_baseline(views: list[RoundView], best_commit: str | None) -> list[dict[str, Any]]:
    """Per target shape: the baseline's value, the best line's (where its round measured the
    shape) and the speedup."""
    baseline = next((v for v in views if v.is_baseline and v.note), None)
    best = next((v for v in views if v.commit == best_commit and v.note), None)
    if baseline is None or baseline.note is None:
        return []
    base_values = baseline.note.values()
    best_values = best.note.values() if best is not None and best.note is not None else {}
    rows = []
    for shape in baseline.note.shapes:
        old, new = base_values.get(shape.label), best_values.get(shape.label)
        rows.append(
            {
                "shape": shape.label,
                "baseline": old,
                "best": new,
                "best_round": best.number if best is not None and new is not None else None,
                "speedup": new / old if old and new else None,
                "change_pct": pct(new, old) if old and new else None,
            }
        )
    return rows
