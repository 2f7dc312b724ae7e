"""Verdicts that hold under noise: interleaved A/B pairs, confidence intervals, calibrated floors.

A validation under `decision_policy: interleaved` runs the harness on the best line (A) and on
the candidate (B) alternately; pair k gives, per shape, the log-ratio log(B_k / A_k). Drift of the
machine (clocks, heat, other tenants) hits A and B of a pair alike and cancels in the ratio.

Per shape, the mean log-ratio gets a Student-t confidence interval. A shape (or the aggregate, the
geometric mean over shapes) is called
  - "better" / "worse" only when the interval excludes no change *and* the estimated change is
    past the shape's noise floor (as asv flags a change only when it is both statistically
    different and past a factor);
  - "no change" when the interval lies inside ± the floor;
  - "inconclusive" otherwise: more pairs are needed, and an inconclusive gain is never accepted.
The floor of a shape is calibrated at baseline from A/A pairs (the best line against itself): the
standard deviation of one pair's log-ratio, never under `min_effect_pct`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kgit.judge.scoring import geomean

if TYPE_CHECKING:
    from kgit.records.manifest import Interleaved, Thresholds

BETTER, WORSE, NO_CHANGE, INCONCLUSIVE = "better", "worse", "no change", "inconclusive"


@dataclass(frozen=True)
class Estimate:
    """The candidate/best ratio of one shape (or of the aggregate) over n pairs."""

    ratio: float  # exp(mean log-ratio): 1.03 = 3% higher metric = faster
    low: float
    high: float
    n: int
    floor: float  # relative noise floor used (0.02 = 2%)
    call: str

    @property
    def change_pct(self) -> float:
        return (self.ratio - 1.0) * 100.0

    @property
    def gain_ruled_out(self) -> bool:
        """Not called, but the interval tops out under the floor: no gain that could be called
        better is left inside it, whatever more pairs would say of the rest."""
        return self.call == INCONCLUSIVE and self.n >= 2 and self.high < 1.0 + self.floor

    @property
    def detectable_pct(self) -> float:
        """The smallest change these pairs could have called: the interval's half-width, never
        under the floor (a change must pass both to be called)."""
        if self.low <= 0 or math.isinf(self.high):
            return math.inf
        half = (math.log(self.high) - math.log(self.low)) / 2.0
        return max(self.floor, math.expm1(half)) * 100.0


def t_quantile(confidence: float, dof: int) -> float:
    """Two-sided Student-t quantile. scipy is imported only when a verdict needs it, and only
    scipy.special: scipy.stats took seconds to import in the middle of a validation on the H200
    host, with both resident harnesses idle."""
    from scipy import special

    return float(special.stdtrit(dof, 0.5 + confidence / 2.0))


def estimate(log_ratios: list[float], floor: float, confidence: float) -> Estimate:
    n = len(log_ratios)
    mean = statistics.fmean(log_ratios)
    if n < 2:
        return Estimate(math.exp(mean), 0.0, math.inf, n, floor, INCONCLUSIVE)
    half = t_quantile(confidence, n - 1) * statistics.stdev(log_ratios) / math.sqrt(n)
    low, high = mean - half, mean + half
    margin = math.log1p(floor)
    if low > 0 and mean > margin:
        call = BETTER
    elif high < 0 and mean < -margin:
        call = WORSE
    elif -margin < low and high < margin:
        call = NO_CHANGE
    else:
        call = INCONCLUSIVE
    return Estimate(math.exp(mean), math.exp(low), math.exp(high), n, floor, call)


@dataclass(frozen=True)
class Pair:
    """One A/B pair: the metric per PASS shape for best (a) and candidate (b)."""

    a: dict[str, float]
    b: dict[str, float]


def pairs_of(recorded: Iterable[Mapping[str, dict[str, float]]]) -> list[Pair]:
    """The pairs as the evidence records them (`{"a": ..., "b": ...}`, kgit/records/evidence.py)."""
    return [Pair(p["a"], p["b"]) for p in recorded]


def side_means(pairs: list[Pair], labels: list[str]) -> tuple[dict[str, float], dict[str, float]]:
    """Per shape, the geometric mean of each side's values over PAIRS: (reference, candidate)."""

    def means(side: str) -> dict[str, float]:
        return {label: geomean(getattr(p, side)[label] for p in pairs) for label in labels}

    return means("a"), means("b")


def log_ratios(pairs: list[Pair], label: str) -> list[float]:
    return [math.log(p.b[label] / p.a[label]) for p in pairs]


def aggregate_log_ratios(pairs: list[Pair], labels: list[str]) -> list[float]:
    """Per pair, the log of the geomean ratio = the mean of the shapes' log-ratios."""
    return [statistics.fmean(math.log(p.b[s] / p.a[s]) for s in labels) for p in pairs]


def calibrate_floors(
    groups: list[list[Pair]], labels: list[str], min_effect_pct: float
) -> dict[str, float]:
    """Per-shape noise floors from A/A pairs, in GROUPS of one pair of processes each: the sd of
    one pair's log-ratio (relative) within a group, and at least twice the largest group mean.
    Two processes of the same kernel can differ steadily: on an H200 a 32768x8192 RMSNorm's
    forward read 0.4-4.5% faster in one process than in the other of an A/A pair, steadily for
    the pair's life, while one quad's spread was under 0.4% (bench/worker_pair.py). A steady
    difference does not shrink with more pairs of blocks, and it is drawn afresh with each pair
    of processes: only a floor above what several pairs drew keeps it from being called a
    change."""
    floors = {}
    for label in labels:
        spread, means = _spread_and_means(groups, label)
        bias = max((abs(m) for m in means), default=0.0)
        floors[label] = max(min_effect_pct / 100.0, math.expm1(spread), math.expm1(2 * bias))
    return floors


def _spread_and_means(groups: list[list[Pair]], label: str) -> tuple[float, list[float]]:
    """LABEL's sd of one pair's log-ratio within the GROUPS (each about its own mean), and each
    non-empty group's mean log-ratio (what that pair of processes drew)."""
    within: list[float] = []
    means: list[float] = []
    for pairs in groups:
        values = log_ratios(pairs, label)
        if not values:
            continue
        mean = statistics.fmean(values)
        within += [v - mean for v in values]
        means.append(mean)
    dof = len(within) - len(means)
    return (math.sqrt(sum(v * v for v in within) / dof) if dof > 0 else 0.0), means


# chi2.ppf(0.10, k) for k = 1..10 (calibration_processes is at most 10): the lower quantile
# that bounds the residue's sd from above with 90% confidence (residue_settled).
_CHI2_LOW_10 = (0.0158, 0.2107, 0.5844, 1.0636, 1.6103, 2.2041, 2.8331, 3.4895, 4.1682, 4.8652)
_Z_99 = 2.576  # two-sided 99% normal quantile


def residue_settled(groups: list[list[Pair]], labels: list[str], min_effect_pct: float) -> bool:
    """Whether the start-order residue drawn by the GROUPS so far (at least two pairs of
    processes) is so far inside every shape's noise floor that a further pair of processes need
    not be started: the calibration's sequential stop.

    What each pair of processes draws is modelled as a steady offset b ~ N(0, tau^2) per shape
    (A/A: the same commit on both sides, so no offset is expected on average). The k groups'
    means m_i = b_i + (quad noise), so sum(m_i^2) / chi2.ppf(0.10, k) bounds tau^2 from above
    with at least 90% confidence (the quad noise only makes the bound larger). The calibration
    may stop when, for every shape, 2.576 times that bound lies inside the floor that the
    within-pair spread and `min_effect_pct` alone set: then even at the bound, a fresh pair's
    offset (what a round's validation draws) passes the floor less than 1% of the time, and the
    floor kept (calibrate_floors, which still covers twice the offsets drawn) is at least that.
    Simulated against always starting three pairs, sd of the offset from 0.05 to 1 times the
    floor: the share of fresh offsets past the final floor differs by at most 0.25 point (e.g.
    2.02% against 2.09% at 0.5), and two pairs suffice 80% of the time at 0.1."""
    k = sum(1 for pairs in groups if pairs)
    if k < 2:
        return False
    for label in labels:
        spread, means = _spread_and_means(groups, label)
        floor = max(min_effect_pct / 100.0, math.expm1(spread))
        bound = math.sqrt(sum(m * m for m in means) / _CHI2_LOW_10[min(k, 10) - 1])
        if _Z_99 * bound > math.log1p(floor):
            return False
    return True


def group_biases(groups: list[list[Pair]], labels: list[str]) -> dict[str, list[float]]:
    """Per shape, each group's mean B/A change in percent (what a pair of processes drew)."""
    return {
        label: [
            math.expm1(statistics.fmean(log_ratios(pairs, label))) * 100
            for pairs in groups
            if pairs
        ]
        for label in labels
    }


def aggregate_floor(floors: dict[str, float], labels: list[str], min_effect_pct: float) -> float:
    """The aggregate's floor: shapes' log-ratio sds average in the geomean (independent shapes)."""
    spread = math.sqrt(sum(math.log1p(floors[s]) ** 2 for s in labels)) / len(labels)
    return max(min_effect_pct / 100.0, math.expm1(spread))


@dataclass(frozen=True)
class ABJudgement:
    """The interleaved verdict's evidence: per-shape estimates and the aggregate's."""

    shapes: dict[str, Estimate]
    aggregate: Estimate
    settled: bool  # True when more pairs would not change the decision's basis
    notes: list[str] = field(default_factory=list)


def judge_pairs(
    pairs: list[Pair],
    labels: list[str],
    floors: dict[str, float],
    settings: Interleaved,
    limits: Thresholds,
) -> ABJudgement:
    """The pairs judged with the campaign's interleaved settings and its core-regression limit."""
    confidence = settings.confidence
    shapes = {s: estimate(log_ratios(pairs, s), floors[s], confidence) for s in labels}
    agg_floor = aggregate_floor(floors, labels, settings.min_effect_pct)
    aggregate = estimate(aggregate_log_ratios(pairs, labels), agg_floor, confidence)
    unsure = unsure_regressions(shapes, limits.core_regression_pct)
    # Settled: the aggregate is called, and a gain is not hiding a shape whose interval still
    # reaches a core regression (which would turn the accept into a rollback); or no gain past
    # the floor is left in the aggregate's interval (a rollback whatever follows: one shape down
    # 2.5% among unchanged ones kept RMSNorm sampling to max_quads on an H200, 4x the seed's time).
    settled = (
        aggregate.call != INCONCLUSIVE and not (aggregate.call == BETTER and unsure)
    ) or aggregate.gain_ruled_out
    return ABJudgement(shapes, aggregate, settled)


def unsure_regressions(shapes: dict[str, Estimate], core_regression_pct: float) -> list[str]:
    """Shapes not yet called whose interval still reaches a core regression. A shape cannot be
    resolved much below its own noise: the limit is the larger of the core regression and twice
    the shape's A/A floor (a tiny, launch-bound shape would otherwise block every accept)."""
    unsure = []
    for label, e in shapes.items():
        limit = 1.0 - max(core_regression_pct / 100.0, 2.0 * e.floor)
        if e.call == INCONCLUSIVE and e.low <= limit:
            unsure.append(label)
    return unsure
