"""Choosing the 3-5 representative shapes of quick validation from the baseline.

The seed's guidance: PASS shapes only; cover the small end (launch overhead) and the large end
(compute or memory bound); prefer shapes whose measurement varies most; for grouped GEMM keep the
skewed token distributions, where shortcuts valid only for uniform routing break.
"""

from __future__ import annotations

import math
from typing import Any

from kgit.records.schema import BenchTable

MIN_SHAPES, MAX_SHAPES = 3, 5


def work(shape: dict[str, Any]) -> float:
    """A size proxy: the product of the shape's integer dimensions."""
    dims = [v for k, v in shape.items() if k in ("B", "G", "M", "N", "K") and isinstance(v, int)]
    return float(math.prod(dims)) if dims else 0.0


def _relative_spread(table: BenchTable, label: str, metric: str) -> float:
    row = table.row(label)
    if row is None:
        return 0.0
    value, std = row.values.get(metric), row.values.get(f"{metric}_stddev")
    if value is None or std is None or not value or math.isnan(std):
        return 0.0
    return std / value


def _is_skewed(shape: dict[str, Any]) -> bool:
    distribution = str(shape.get("distribution", "")).lower()
    return bool(distribution) and distribution != "uniform"


def pick_representative(shapes: list[dict[str, Any]], table: BenchTable, metric: str) -> list[str]:
    """Labels of the representative shapes, in the manifest's order."""
    passing = [s for s in shapes if (row := table.row(s["label"])) is not None and row.passed]
    if len(passing) <= MIN_SHAPES:
        return [s["label"] for s in passing]
    by_size = sorted(passing, key=work)
    chosen = [by_size[0]["label"], by_size[-1]["label"]]
    spread_column = metric if f"{metric}_stddev" in table.header else "Forward TFLOPS"
    rest = sorted(
        (s for s in passing if s["label"] not in chosen),
        key=lambda s: (not _is_skewed(s), -_relative_spread(table, s["label"], spread_column)),
    )
    for shape in rest:
        if len(chosen) >= MAX_SHAPES:
            break
        if (
            _is_skewed(shape)
            or len(chosen) < MIN_SHAPES
            or _relative_spread(table, shape["label"], spread_column) > 0.02
        ):
            chosen.append(shape["label"])
    order = [s["label"] for s in shapes]
    return sorted(chosen, key=order.index)
