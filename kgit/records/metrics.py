"""The metrics a manifest's `primary_metric` may name, one row each: the CSV columns it reads,
its unit, the device peak the physical floor holds it to, how a shape's value is computed, and
the harness template a manifest of it drafts. Every metric reads higher as better: the
scoring, the verdicts' gains, the pairs' ratios, the best line and the trend all take a larger
value for the better one, so a column the harness writes as a time is refused as a metric
(`is_time_column`, kgit/records/manifest_checks.py) rather than judged the wrong way round.

This table is the one place where code spells a metric's name to tell metrics apart: the
manifest's checks, the CSV reader, the scoring, the physical floor, the trend and `kgit init`
read it. Any other numeric column of the frozen CSV may be named as well (a custom metric,
higher is better, read as it is): `metric_of` gives such a column a row of its own. A new
metric is a row here and its tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

# The units of the device's peaks (kgit/records/devices.py): compute, and device memory's bandwidth.
TFLOPS, GBPS = "TFLOPS", "GB/s"

# A shape's value from its row's numeric columns.
Formula = Callable[[Mapping[str, float]], float]


@dataclass(frozen=True)
class Metric:
    name: str
    inputs: tuple[str, ...]  # the CSV columns a shape's value is computed from
    unit: str  # what its values count, e.g. TFLOPS, GB/s; "" for a custom column of no unit
    bound: str | None  # the peak the physical floor holds it to: TFLOPS, GB/s; None for none
    template: str  # the harness template (`kgit init --from-template`) whose manifest it drafts
    formula: Formula | None = None  # None: the value is its one input column, as written
    shape_dims: tuple[str, ...] = ()  # the dimensions every target shape must give

    def value(self, values: Mapping[str, float]) -> float:
        """A shape's value from its row's numeric VALUES."""
        return self.formula(values) if self.formula else values[self.inputs[0]]


def combined_step_tflops(v: Mapping[str, float]) -> float:
    """The backward pass counts twice the forward FLOPs: 6·B·M·N·K / (forward + backward time)."""
    flops = 6.0 * v["B"] * v["M"] * v["N"] * v["K"]
    seconds = (v["Forward Time (ms)"] + v["Backward Time (ms)"]) * 1e-3
    return flops / seconds / 1e12


_MNK = ("M", "N", "K")
_COMBINED_INPUTS = ("B", "M", "N", "K", "Forward Time (ms)", "Backward Time (ms)")

METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("Forward TFLOPS", ("Forward TFLOPS",), TFLOPS, TFLOPS, "gemm", shape_dims=_MNK),
        Metric(
            "Combined Step TFLOPS",
            _COMBINED_INPUTS,
            TFLOPS,
            TFLOPS,
            "gemm",
            combined_step_tflops,
            shape_dims=_MNK,
        ),
        Metric("Forward GB/s", ("Forward GB/s",), GBPS, GBPS, "memory"),
        Metric("Backward GB/s", ("Backward GB/s",), GBPS, GBPS, "memory"),
    )
}


def column_unit(column: str) -> str:
    """The unit a CSV column's name declares by the harness's convention (`Forward TFLOPS`,
    `Backward GB/s`), "" for any other column."""
    if TFLOPS in column:
        return TFLOPS
    if GBPS in column:
        return GBPS
    return ""


# The units the harness's convention writes a time in (`Forward Time (ms)`): lower is better.
TIME_UNITS = ("s", "ms", "us", "µs", "ns")


def is_time_column(column: str) -> bool:
    """Whether a CSV column's name declares a time by the harness's convention, `NAME (ms)`."""
    return column.rstrip().endswith(tuple(f"({unit})" for unit in TIME_UNITS))


def metric_of(name: str) -> Metric:
    """NAME's row of the table, or a custom metric's: the CSV column NAME, read as written, with
    the unit and bound its name declares."""
    known = METRICS.get(name)
    if known is not None:
        return known
    unit = column_unit(name)
    return Metric(
        name,
        (name,),
        unit,
        unit or None,
        "memory" if unit == GBPS else "gemm",
        shape_dims=_MNK if unit == TFLOPS else (),
    )


def known_metrics() -> list[str]:
    return list(METRICS)
