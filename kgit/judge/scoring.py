"""Per-shape metrics and their aggregate (geometric mean over PASS shapes)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kgit.records.metrics import metric_of

if TYPE_CHECKING:  # the CSV reader (csv, io) stays off the path of `kgit status` and `kgit log`
    from kgit.records.schema import BenchRow, BenchTable


def geomean(values: Iterable[float]) -> float:
    items = list(values)
    if not items:
        return 0.0
    return math.exp(sum(math.log(v) for v in items) / len(items))


def shape_metric(row: BenchRow, metric: str) -> float | None:
    """The primary metric of one row, by its formula (kgit/records/metrics.py); None unless the
    row PASSed."""
    if not row.passed:
        return None
    return metric_of(metric).value(row.values)


@dataclass(frozen=True)
class Score:
    """One measurement of a set of shapes."""

    values: dict[str, float]  # PASS shapes only
    failing: list[str]  # labels whose Check is not PASS
    aggregate: float  # geomean over PASS shapes; 0 when any shape failed

    @property
    def all_pass(self) -> bool:
        return not self.failing


def score(table: BenchTable, metric: str, labels: Iterable[str] | None = None) -> Score:
    """Score TABLE on LABELS (default: every row). Any FAIL/ERROR makes the aggregate 0."""
    wanted = set(labels) if labels is not None else None
    values: dict[str, float] = {}
    failing: list[str] = []
    for row in table.rows:
        if wanted is not None and row.label not in wanted:
            continue
        value = shape_metric(row, metric)
        if value is None:
            failing.append(row.label)
        else:
            values[row.label] = value
    aggregate = 0.0 if failing else geomean(values.values())
    return Score(values, failing, aggregate)


def pct(new: float, old: float) -> float:
    """Relative change in percent (positive = higher = better for throughput metrics)."""
    return (new / old - 1.0) * 100.0


def diagnostics(table: BenchTable) -> dict[str, float]:
    """The trend table's side columns (iteration rule 8): Avg = geomean over PASS, Peak = max."""
    out: dict[str, float] = {}
    for column, short in (
        ("Forward TFLOPS", "fwd"),
        ("Backward TFLOPS", "bwd"),
        ("Forward GB/s", "fwd_gbs"),
        ("Backward GB/s", "bwd_gbs"),
    ):
        if column in table.header:
            vals = [r.values[column] for r in table.rows if r.passed and r.values[column] > 0]
            if vals:
                out[f"{short}_avg"] = geomean(vals)
                out[f"{short}_peak"] = max(vals)
    if "Forward Time (ms)" in table.header and "K" in table.header:
        combined = score(table, "Combined Step TFLOPS")
        if combined.values:
            out["combined_step"] = geomean(combined.values.values())
    return out
