"""The precision rule applied to a measurement: its shapes' SNRs against the baseline's own
(kgit/judge/precision.py), a shape far under them counted as failing."""

from __future__ import annotations

from kgit.engine.campaign import Campaign
from kgit.judge.precision import precision_drops, snr_columns
from kgit.judge.scoring import Score
from kgit.progress import warn
from kgit.records.schema import BenchTable, parse_bench_csv

# The baseline's SNRs, per (repository, base commit): read once per process, not per block.
_baseline_snrs: dict[tuple[str, str, str], dict[str, dict[str, float]]] = {}


def baseline_snrs(campaign: Campaign) -> dict[str, dict[str, float]]:
    """Each shape's SNR columns as the baseline's pass measured them (empty before a baseline,
    which is not kept: the baseline itself reads none)."""
    if not campaign.state.baselined:
        return {}
    key = (str(campaign.repo.common_dir), campaign.name, campaign.state.base)
    if key not in _baseline_snrs:
        data = campaign.read_bench(campaign.state.base)
        metric = campaign.manifest.primary_metric
        _baseline_snrs[key] = _snrs(parse_bench_csv(data, metric)) if data else {}
    return _baseline_snrs[key]


def _snrs(table: BenchTable) -> dict[str, dict[str, float]]:
    columns = snr_columns(table.header)
    return {row.label: {c: row.values[c] for c in columns if c in row.values} for row in table.rows}


def precision_checked(campaign: Campaign, table: BenchTable, result: Score) -> Score:
    """RESULT with the shapes whose SNR fell far under the baseline's counted as failing
    (kgit/judge/precision.py), each said in a warning."""
    now = {label: snrs for label, snrs in _snrs(table).items() if label in result.values}
    drops = precision_drops(baseline_snrs(campaign), now) if now else []
    if not drops:
        return result
    for drop in drops:
        warn(f"Check FAIL by precision: {drop}")
    lowered = {d.split(":", 1)[0].removeprefix("shape ") for d in drops}
    values = {k: v for k, v in result.values.items() if k not in lowered}
    return Score(values, [*result.failing, *sorted(lowered)], 0.0)
