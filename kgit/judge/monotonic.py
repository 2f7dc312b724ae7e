"""Iteration rule 9, the monotonic trend: along accepted rounds the rule's value never drops
more than the noise (1%), each accepted round compared with the one the best line took before it.

Quick validations measure 3-5 representative shapes while the baseline measured all of them, so
two rounds are compared on the shapes both measured and passed, recomputed from the byte-exact
bench CSVs. Pure functions over bench tables; `kgit report` and `kgit export` show the result.
"""

from __future__ import annotations

import itertools
from typing import Any

from kgit.judge.scoring import diagnostics, pct, score
from kgit.records.lineage_results import FIRST_PASS, PAIRED
from kgit.records.metrics import GBPS, metric_of
from kgit.records.schema import BenchTable

NOISE_PCT = 1.0  # rule 9: Combined Step TFLOPS may dip by 1% along accepted rounds (noise)
# The value rule 9 keeps from decreasing, keyed as in `side_metrics`: Combined Step TFLOPS,
# or the primary metric of a memory-bound campaign (there are no FLOPs to combine).
GEMM_RULE = ("combined_step", "Combined Step TFLOPS")
MEMORY_RULE_KEY = "primary"


def memory_bound(metric: str) -> bool:
    """Whether METRIC is held to device memory's bandwidth (its row of kgit/records/metrics.py)."""
    return metric_of(metric).bound == GBPS


def rule_value(metric: str) -> tuple[str, str]:
    """(key, name) of the value rule 9 watches on a campaign measuring METRIC."""
    return (MEMORY_RULE_KEY, metric) if memory_bound(metric) else GEMM_RULE


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


def compared(
    table: BenchTable | None, other: BenchTable | None, metric: str
) -> tuple[dict[str, float], dict[str, float]] | None:
    """(TABLE's, OTHER's) side metrics on the shapes both passed; None without both tables or
    without a shape in common."""
    if table is None or other is None:
        return None
    common = _passed(table) & _passed(other)
    if not common:
        return None
    return side_metrics(table, metric, common), side_metrics(other, metric, common)


def monotonic_check(
    accepted: list[tuple[int, BenchTable | None]],
    metric: str,
    paired: dict[int, float] | None = None,
) -> dict[str, Any]:
    """Rule 9 over the ACCEPTED rounds, (number, bench table) in the order the best line took
    them (with rounds in parallel, not always round order): each is compared with the one before
    it; a round without a comparable figure is listed as unchecked, not as a failure.

    PAIRED: a round's change vs the best line it started from, from A/B pairs
    (kgit/judge/figures.py): where rule 9 watches the primary metric it is the step's change,
    since the first passes of two rounds were taken apart (on a CPU, in blocks against the
    baseline's plain pass: -4.5% where the pairs read +262%). Otherwise the first passes are
    compared on the shapes both measured."""
    key, name = rule_value(metric)
    watches_primary = name == metric
    steps, offending, unchecked = [], [], []
    for (after, previous), (number, table) in itertools.pairwise(accepted):
        if watches_primary and number in (paired or {}):
            change, basis = (paired or {})[number], PAIRED
        else:
            pair = compared(table, previous, metric)
            if pair is None or key not in pair[0] or key not in pair[1]:
                unchecked.append(number)
                continue
            change, basis = pct(pair[0][key], pair[1][key]), FIRST_PASS
        steps.append({"round": number, "after": after, "change_pct": change, "basis": basis})
        if change < -NOISE_PCT:
            offending.append(number)
    return {
        "value": name,
        "noise_pct": NOISE_PCT,
        "ok": not offending,
        "offending_rounds": offending,
        "unchecked_rounds": unchecked,
        "steps": steps,
    }
