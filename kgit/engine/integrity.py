"""The checks that keep a campaign's numbers real, as the baseline, a round and `kgit finish`
run them: the physical floor (a rate the device cannot reach, kgit/judge/floor.py) and rule 11
(a shortcut that vanishes in a training step, kgit/judge/rule11.py). This module reads git and
the harness's tables; the judgement is in kgit/judge/."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kgit.engine.campaign import Campaign
from kgit.engine.passes import Measurement
from kgit.gitdoor import Repo
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
from kgit.judge.rule11 import Finding, scan_change


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


def change_files(repo: Repo, old: str, new: str) -> dict[str, tuple[str | None, str | None]]:
    """Each path changed from commit OLD to NEW, with its text on both sides (None: absent).
    Binary-looking files are read too (a NUL byte in a C++ comment must not hide a line). Read
    through one `git cat-file --batch`, never through `git diff`, whose output a
    committed .gitattributes can turn into "Binary files differ"."""
    paths = repo.changed_paths(old, new)
    found = repo.read_objects([f"{old}:{p}" for p in paths] + [f"{new}:{p}" for p in paths])
    return {path: (_text(found[i]), _text(found[len(paths) + i])) for i, path in enumerate(paths)}


def _text(found: tuple[str, bytes] | None) -> str | None:
    return None if found is None else found[1].decode("utf-8", errors="replace")


def rule11_findings(repo: Repo, old: str, new: str) -> list[Finding]:
    """What the change OLD..NEW adds that rule 11 forbids."""
    return scan_change(change_files(repo, old, new))
