"""The physical floor's inputs, as the baseline, a round and `kgit finish` check it: the rates
the harness's passes and the metric's values show, and the campaign's floor over them (the
device's peaks). The judgement, a rate the device cannot reach, is kgit/judge/floor.py's; rule
11's reading of a change is kgit/engine/guards/rule11_scan.py."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kgit.engine.campaign import Campaign
from kgit.engine.measuring.harness.passes import Measurement
from kgit.judge.floor import (
    Rates,
    campaign_floor,
    merge_rates,
    metric_rates,
    over_peak,
    shape_dtypes,
    worst_per_shape,
)
from kgit.judge.floor import table_rates as _table_rates


def measured_rates(
    passes: Iterable[Measurement], values: Iterable[Mapping[str, float]], metric: str
) -> Rates:
    """The rates of the harness's PASSES (every rate column) and of the metric's VALUES (runs,
    blocks), highest per shape and column."""
    rates: Rates = {}
    for run in passes:
        merge_rates(rates, _table_rates(run.table, metric))
    return merge_rates(rates, metric_rates(values, metric, rates))


def impossible(
    campaign: Campaign, rates: Rates, fingerprint: Mapping[str, str] | None = None
) -> tuple[list[str], list[str]]:
    """(reasons, labels) for the shapes of RATES past the device's peak; nothing without a floor."""
    floor = campaign_floor(campaign.manifest, campaign.state, fingerprint)
    if floor is None:
        return [], []
    over = over_peak(rates, shape_dtypes(campaign.manifest), floor)
    reasons = [worst.describe(floor, others) for worst, others in worst_per_shape(over)]
    return reasons, sorted({o.label for o in over})
