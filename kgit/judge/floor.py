"""The physical floor per shape: a measured rate past what the device can do is an error of
measurement (a timer that missed the work, a wrong FLOP or byte count, work skipped), never an
improvement. Pure functions over rates, shape dtypes and the device's peaks.

The rates are the CSV's own columns (`* TFLOPS`, `* GB/s`) and the primary metric (Combined Step
TFLOPS comes from the shape and the times, so a faked time shows there too). A GB/s figure is
held to device memory's bandwidth unless the bytes it moved (rate x its time column) fit in the
last-level cache, where a harness that reuses its inputs may legitimately read faster: such a
shape is held to CACHE_MULTIPLE x that bandwidth instead, which still catches a timer that saw
no work. What the floor cannot see: a cheat that stays under the peak.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kgit.records.devices import device_peaks
from kgit.records.metrics import GBPS, metric_of

if TYPE_CHECKING:
    from kgit.records.manifest import Manifest, Peaks
    from kgit.records.notes import CampaignState
    from kgit.records.schema import BenchTable

ANY = "*"  # a `peaks.tflops` given as one number holds for every precision

# A working set up to CACHE_FIT x the last-level cache may still be served mostly from it, and
# that cache reads at 2-3.5x device memory on the listed parts (MI300X: 17.2 TB/s Infinity Cache
# against 5.3 TB/s HBM3, CDNA 3 white paper); CACHE_MULTIPLE leaves room above that.
CACHE_FIT = 2.0
CACHE_MULTIPLE = 5.0

_PRECISIONS = {
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "f16": "fp16",
    "fp32": "fp32",
    "float32": "fp32",
    "float": "fp32",
    "f32": "fp32",
    "tf32": "tf32",
    "int8": "fp8",  # the same tensor-core rate class as fp8 where both exist
}


def precision_of(dtype: str | None) -> str | None:
    """The peak-table precision of a shape's `dtype` (bf16, fp8_e4m3, torch.float16, ...)."""
    if not dtype:
        return None
    name = dtype.lower().removeprefix("torch.").replace("-", "_")
    if name in _PRECISIONS:
        return _PRECISIONS[name]
    if name.startswith(("fp8", "float8", "e4m3", "e5m2")):
        return "fp8"
    if name.startswith(("fp4", "float4", "mxfp4", "nvfp4")):
        return "fp4"
    return None


def rate_unit(column: str) -> str | None:
    """The peak a rate column (not its `_stddev`) is held to, TFLOPS or GB/s, as its row of the
    metrics' table says (kgit/records/metrics.py); None for a column held to none."""
    if column.endswith("_stddev"):
        return None
    return metric_of(column).bound


@dataclass(frozen=True)
class Floor:
    """The peaks a campaign's shapes are held to, and whose they are."""

    device: str
    source: str  # "datasheet", "manifest peaks" or both
    tflops: dict[str, float]  # per precision; ANY for every precision
    gbps: float | None
    cache_mb: float
    margin_pct: float

    def peak(self, unit: str, dtype: str | None) -> float | None:
        if unit == GBPS:
            return self.gbps
        if ANY in self.tflops:
            return self.tflops[ANY]
        precision = precision_of(dtype)
        # fp32 inputs may run on TF32 tensor cores (Triton's tl.dot does by default); a dtype
        # the table has no figure for is held to the largest one: never a false alarm.
        wanted = ["fp32", "tf32"] if precision == "fp32" else [precision] if precision else []
        known = [self.tflops[p] for p in wanted if p in self.tflops]
        pool = known or list(self.tflops.values())
        return max(pool) if pool else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "source": self.source,
            "tflops": dict(self.tflops),
            "gbps": self.gbps,
            "cache_mb": self.cache_mb,
            "margin_pct": self.margin_pct,
        }

    def describe(self) -> str:
        tflops = ", ".join(
            f"{'any precision' if p == ANY else p} {v:g}" for p, v in self.tflops.items()
        )
        parts = [f"{tflops} TFLOPS" if tflops else "", f"{self.gbps:g} GB/s" if self.gbps else ""]
        return (
            f"{self.device} ({self.source}): {'; '.join(p for p in parts if p)}; "
            f"a rate over {100 + self.margin_pct:g}% of its peak is an error"
        )


def resolve_floor(gpu: str | None, override: Peaks) -> Floor | None:
    """The floor for the GPU a fingerprint names, completed or replaced key by key by the
    manifest's `peaks`; None when neither knows a peak (a CPU without `peaks:`)."""
    table = device_peaks(gpu)
    tflops = dict(table.tflops) if table else {}
    if isinstance(override.tflops, dict):
        tflops.update(override.tflops)
    elif override.tflops is not None:
        tflops = {ANY: float(override.tflops)}
    gbps = override.gbps if override.gbps is not None else table.gbps if table else None
    cache = override.cache_mb if override.cache_mb is not None else table.cache_mb if table else 0
    if not tflops and gbps is None:
        return None
    overridden = any(v is not None for v in (override.tflops, override.gbps, override.cache_mb))
    source = (
        "datasheet + manifest peaks" if table and overridden else "datasheet" if table else ""
    ) or "manifest peaks"
    return Floor(
        table.name if table else (gpu or "an unnamed device"),
        source,
        tflops,
        gbps,
        float(cache),
        override.margin_pct,
    )


def campaign_floor(
    manifest: Manifest, state: CampaignState, fingerprint: Mapping[str, str] | None = None
) -> Floor | None:
    """The floor of a campaign's device: the GPU its baseline (or FINGERPRINT) ran on, with the
    manifest's `peaks`; None where neither names a peak."""
    gpu = (fingerprint or {}).get("gpu") or state.fingerprint.get("gpu")
    return resolve_floor(gpu, manifest.peaks)


def shape_dtypes(manifest: Manifest) -> dict[str, str | None]:
    return {shape["label"]: shape.get("dtype") for shape in manifest.target_shapes}


# -- rates ------------------------------------------------------------------------------------

# Per shape, per rate column: the highest value seen and, for GB/s, the bytes it moved. Stored as
# plain dicts in the evidence of a round ({"value": v, "bytes": b}): accept re-judges from it.
Rates = dict[str, dict[str, dict[str, float]]]


def _time_column(column: str) -> str:
    return column.replace("GB/s", "Time (ms)").replace("TFLOPS", "Time (ms)")


def table_rates(table: BenchTable, metric: str) -> Rates:
    """The rates of TABLE's PASS rows, the primary METRIC included where it is derived (Combined
    Step TFLOPS from the shape and the forward and backward times)."""
    from kgit.judge.scoring import shape_metric

    rates: Rates = {}
    for row in table.rows:
        if not row.passed:
            continue
        found: dict[str, dict[str, float]] = {}
        for column, value in row.values.items():
            unit = rate_unit(column)
            if unit is None or math.isnan(value) or value <= 0:
                continue  # an infinite rate stays: a time of zero is past any peak
            found[column] = {"value": value}
            ms = row.values.get(_time_column(column))
            if unit == GBPS and ms is not None and math.isfinite(ms) and ms > 0:
                found[column]["bytes"] = value * 1e9 * ms * 1e-3
        derived = shape_metric(row, metric) if metric not in found and rate_unit(metric) else None
        if derived is not None and math.isfinite(derived):
            found[metric] = {"value": derived}
        rates[row.label] = found
    return rates


def metric_rates(values: Iterable[Mapping[str, float]], metric: str, known: Rates) -> Rates:
    """Rates of the primary METRIC from per-shape VALUES (runs, blocks), with the bytes KNOWN
    for that column of the shape (a block reports no times)."""
    rates: Rates = {}
    if rate_unit(metric) is None:
        return rates
    for run in values:
        for label, value in run.items():
            entry = {"value": value}
            moved = known.get(label, {}).get(metric, {}).get("bytes")
            if moved is not None:
                entry["bytes"] = moved
            merge_rates(rates, {label: {metric: entry}})
    return rates


def merge_rates(into: Rates, new: Mapping[str, Mapping[str, Mapping[str, float]]]) -> Rates:
    """Keep, per shape and column, the highest value (and any bytes known for it)."""
    for label, columns in new.items():
        mine = into.setdefault(label, {})
        for column, entry in columns.items():
            old = mine.get(column)
            if old is None or entry["value"] > old["value"]:
                mine[column] = {**(old or {}), **entry}
            elif "bytes" in entry and "bytes" not in old:
                old["bytes"] = entry["bytes"]
    return into


# -- the judgement ----------------------------------------------------------------------------


@dataclass(frozen=True)
class OverPeak:
    """One shape's rate past what the device allows."""

    label: str
    column: str
    value: float
    peak: float
    limit: float  # the rate past which it is an error
    in_cache: bool  # held to the cache's allowance: its bytes fit in the last-level cache
    what: str = ""  # which peak: " bf16", " for any precision", " of memory"

    @property
    def pct_of_peak(self) -> float:
        return self.value / self.peak * 100

    def describe(self, floor: Floor, others: int = 0) -> str:
        unit = rate_unit(self.column) or ""
        cache = ", its bytes fit in the cache" if self.in_cache else ""
        more = f" (and {others} more rate(s) of the shape)" if others else ""
        return (
            f"shape {self.label}: {self.column} {self.value:.4g} is {self.pct_of_peak:.0f}% of "
            f"the peak ({self.peak:g} {unit}{self.what}, {floor.device}, {floor.source}; limit "
            f"{self.limit:.4g}{cache}){more}: faster than the hardware allows (a timer that "
            "missed the work, a wrong FLOP or byte count, or work not done)"
        )


def worst_per_shape(over: list[OverPeak]) -> list[tuple[OverPeak, int]]:
    """Per shape, its rate furthest past the peak and how many more it has."""
    shapes: dict[str, list[OverPeak]] = {}
    for item in over:
        shapes.setdefault(item.label, []).append(item)
    return [
        (max(items, key=lambda o: o.value / o.limit), len(items) - 1) for items in shapes.values()
    ]


def over_peak(rates: Rates, dtypes: Mapping[str, str | None], floor: Floor) -> list[OverPeak]:
    """Every shape and rate column of RATES past FLOOR's peak by more than its margin."""
    found = []
    grace = 1 + floor.margin_pct / 100
    for label, columns in rates.items():  # the table's order: shapes, then Forward first
        for column, entry in columns.items():
            unit = rate_unit(column)
            peak = floor.peak(unit, dtypes.get(label)) if unit else None
            if unit is None or peak is None:
                continue
            moved = entry.get("bytes")
            in_cache = unit == GBPS and floor.cache_mb > 0 and _fits(moved, floor.cache_mb)
            limit = peak * grace * (CACHE_MULTIPLE if in_cache else 1.0)
            if entry["value"] > limit:
                what = _what(unit, dtypes.get(label), floor)
                found.append(OverPeak(label, column, entry["value"], peak, limit, in_cache, what))
    return found


def _what(unit: str, dtype: str | None, floor: Floor) -> str:
    if unit == GBPS:
        return " of memory"
    if ANY in floor.tflops:
        return " for any precision"
    precision = precision_of(dtype)
    return f" {precision}" if precision in floor.tflops else " (the largest of its precisions)"


def _fits(moved: float | None, cache_mb: float) -> bool:
    """Whether a working set of MOVED bytes may sit in the cache; unknown bytes may."""
    return moved is None or moved <= CACHE_FIT * cache_mb * 2**20


def pct_of_peak(
    value: float | None, metric: str, dtype: str | None, floor: Floor | None
) -> float | None:
    """VALUE of the primary METRIC as a percentage of the device's peak for a shape of DTYPE."""
    unit = rate_unit(metric)
    if value is None or floor is None or unit is None:
        return None
    peak = floor.peak(unit, dtype)
    return value / peak * 100 if peak else None
