"""The seed's performance trend (iteration rule 8), its monotonicity check (rule 9) and the
per-shape comparison of the best line with the baseline: pure functions over round views.

Quick validations measure 3-5 representative shapes while the baseline measured all of them, so
a round is compared with the baseline (and with the previous accepted round) on the shapes both
measured, recomputed from the byte-exact bench CSVs.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from kgit.judge.scoring import diagnostics, pct, score
from kgit.records.schema import BenchTable
from kgit.views.record import RoundView

NOISE_PCT = 1.0  # rule 9: Combined Step TFLOPS may dip by 1% along accepted rounds (noise)

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


def memory_bound(metric: str) -> bool:
    return "GB/s" in metric


@dataclass(frozen=True)
class TrendLayout:
    columns: tuple[tuple[str, str], ...]  # (key, header)
    rule_key: str  # the value rule 9 keeps from decreasing
    rule_name: str
    cell_keys: tuple[tuple[str, str], ...]  # (short name, key) in the vs Baseline cell

    @classmethod
    def for_metric(cls, metric: str) -> TrendLayout:
        if memory_bound(metric):
            columns = tuple((k, h.format(metric=metric)) for k, h in MEMORY_COLUMNS)
            cell: tuple[tuple[str, str], ...] = (("fwd", "fwd_gbs_avg"), ("bwd", "bwd_gbs_avg"))
            return cls(columns, "primary", metric, cell)
        cell = (("step", "combined_step"), ("fwd", "fwd_avg"), ("bwd", "bwd_avg"))
        return cls(GEMM_COLUMNS, "combined_step", "Combined Step TFLOPS", cell)

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


def restrict(table: BenchTable, labels: set[str]) -> BenchTable:
    return BenchTable(table.header, tuple(r for r in table.rows if r.label in labels))


def side_metrics(
    table: BenchTable, metric: str, labels: set[str] | None = None
) -> dict[str, float]:
    """The trend columns of TABLE (on LABELS): diagnostics plus the primary aggregate."""
    part = restrict(table, labels) if labels is not None else table
    out = diagnostics(part) if part.rows else {}
    scored = score(part, metric)
    if scored.values and not scored.failing:
        out["primary"] = scored.aggregate
    return out


def _passed(table: BenchTable) -> set[str]:
    return {r.label for r in table.rows if r.passed}


def compared(view: RoundView, other: RoundView, metric: str) -> tuple[dict, dict] | None:
    """(view's, other's) side metrics on the shapes both passed; None without both CSVs."""
    if view.table is None or other.table is None:
        return None
    common = _passed(view.table) & _passed(other.table)
    if not common:
        return None
    return side_metrics(view.table, metric, common), side_metrics(other.table, metric, common)


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
        pair = compared(view, baseline, metric) if baseline is not None else None
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


def monotonic_check(views: list[RoundView], metric: str) -> dict[str, Any]:
    """Rule 9: along accepted rounds the rule's value never drops more than 1%, each accepted
    round compared with the previous one on the shapes both measured."""
    layout = TrendLayout.for_metric(metric)
    accepted = [v for v in views if v.accepted]
    steps, offending, unchecked = [], [], []
    for previous, view in itertools.pairwise(accepted):
        pair = compared(view, previous, metric)
        if pair is None or layout.rule_key not in pair[0] or layout.rule_key not in pair[1]:
            unchecked.append(view.number)
            continue
        change = pct(pair[0][layout.rule_key], pair[1][layout.rule_key])
        steps.append({"round": view.number, "after": previous.number, "change_pct": change})
        if change < -NOISE_PCT:
            offending.append(view.number)
    return {
        "value": layout.rule_name,
        "noise_pct": NOISE_PCT,
        "ok": not offending,
        "offending_rounds": offending,
        "unchecked_rounds": unchecked,
        "steps": steps,
    }


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
