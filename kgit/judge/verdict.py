"""The seed's mechanical decision rule and noise rule, as data: a decision and every reason.

Rule 3: aggregate improved and no core shape down by the regression limit (5%) -> ACCEPTED;
aggregate improved with some shapes down by less -> ACCEPTED (trade-off); otherwise ROLLED BACK.
Noise rule: a gain under the noise band (2%) is re-measured (3 runs at least) and kept only if the
mean gain is over 1% and its standard deviation under half of it.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from kgit.judge.scoring import Score, geomean, pct
from kgit.judge.stats import (
    BETTER,
    INCONCLUSIVE,
    NO_CHANGE,
    WORSE,
    ABJudgement,
    Estimate,
    unsure_regressions,
)
from kgit.records.manifest import Thresholds
from kgit.records.notes import ACCEPTED, ACCEPTED_TRADEOFF, ACCEPTING, ROLLED_BACK

REMEASURE = "REMEASURE"  # not a decision: the engine runs the harness again

# Why a verdict is what it is, for code and agents (the reasons are for people).
CORRECTNESS = "correctness"  # a shape's Check is not PASS
PROTECTED = "protected-path"  # the round changed the harness, the gate's tests or the schema
OUTSIDE_SCOPE = "outside-kernel-source"  # the round changed files that are not the kernel's
LINK_OUT = "link-out-of-repo"  # a kernel file or a changed file links outside the repository
NOT_MEASURED = "not-measured"  # a shape the reference has was not measured
NOT_IMPROVED = "not-improved"  # the aggregate is not better
WITHIN_NOISE = "within-noise"  # a gain the noise rule or the interval does not support
INCONCLUSIVE_GAIN = "inconclusive"  # the interval still straddles the floor: never accepted
CORE_REGRESSION = "core-regression"  # a shape down past the limit, or not ruled out
TRADE_OFF = "trade-off"
IMPROVED = "improved"
NEEDS_RUNS = "needs-runs"  # with REMEASURE
IMPOSSIBLE = "impossible"  # a shape measured faster than the device allows (kgit/judge/floor.py)
RULE_11 = "rule-11"  # the change adds a shortcut that vanishes in training (kgit/judge/rule11.py)


@dataclass(frozen=True)
class Verdict:
    """A decision, its structured cause, and the evidence in one meaning: per-shape means of the
    candidate and of the reference it was compared with, in the primary metric's unit. The
    aggregate is always the geomean of the candidate's means; `gain_pct` is the judged change of
    the aggregate (under the interleaved policy, estimated from the pairs' ratios)."""

    decision: str
    cause: str
    reasons: list[str]
    candidate: dict[str, float] = field(default_factory=dict)
    reference: dict[str, float] = field(default_factory=dict)
    gain_pct: float | None = None
    shape_deltas: dict[str, float] = field(default_factory=dict)
    run_gains_pct: list[float] = field(default_factory=list)

    @property
    def accepts(self) -> bool:
        return self.decision in ACCEPTING

    @property
    def aggregate(self) -> float | None:
        return geomean(self.candidate.values()) if self.candidate else None

    @property
    def reference_aggregate(self) -> float | None:
        return geomean(self.reference.values()) if self.reference else None


def correctness_verdict(failing: list[str], reference: dict[str, float]) -> Verdict:
    """Check is a hard gate: any shape not PASS rolls the candidate back, alone."""
    return Verdict(
        ROLLED_BACK, CORRECTNESS, ["correctness gate: " + "; ".join(failing)], {}, reference
    )


def fail_reasons(labels: Iterable[str], where: str = "") -> list[str]:
    """What the correctness gate says of each shape of LABELS that FAILed (WHERE: in which
    measurement, when it matters)."""
    return [f"shape {label}: Check FAIL{where}" for label in labels]


def scope_verdict(outside: list[str], sources: list[str]) -> Verdict:
    """One round, one change to the kernel: files outside `kernel_source` are not measured by
    anything and may change what the gate or the harness sees. A test or one of its helpers is
    the gate's, never the kernel's: declaring it a kernel source would let rounds rewrite the
    check they are judged by, so its reason says so and names the real way to change a test."""
    tests = [path for path in outside if is_test_file(path)]
    others = [path for path in outside if path not in tests]
    reasons = []
    if others:
        reasons.append(
            f"changed outside kernel_source ({', '.join(sources)}): {', '.join(others)} "
            "(declare them in kernel_source if they are part of the kernel)"
        )
    if tests:
        reasons.append(
            f"changed a test file outside kernel_source ({', '.join(sources)}): "
            f"{', '.join(tests)} (tests and their helpers belong to the gate, not the kernel: "
            "a round changes the kernel only, so commit the kernel change without them; "
            f"{NEW_GATE})"
        )
    return Verdict(ROLLED_BACK, OUTSIDE_SCOPE, reasons)


# The one way to judge rounds by other tests: the manifest refuses a new gate mid-campaign.
NEW_GATE = (
    "tests that must change need a new campaign, whose baseline freezes them "
    "(kgit init NEW -m FILE)"
)
_TEST_FOLDERS = {"test", "tests", "testing"}


def is_test_file(path: str) -> bool:
    """PATH is a test, a conftest, or a file in a test folder (`tests/utils.py`)."""
    parts = path.split("/")
    name = parts[-1]
    named = name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
    return named or any(part in _TEST_FOLDERS for part in parts[:-1])


def link_verdict(links: list[str]) -> Verdict:
    """A kernel measured through a link out of the repository is code git does not hold: the
    best line could not be reproduced, and the scans read the link, not the code."""
    return Verdict(
        ROLLED_BACK,
        LINK_OUT,
        [
            f"symbolic link out of the repository: {', '.join(links)} (commit the file itself: "
            "the code a round measures must be in git)"
        ],
    )


def protected_verdict(changed: list[str]) -> Verdict:
    """A round may not change what measures or gates it (harness, tests, schema)."""
    return Verdict(
        ROLLED_BACK,
        PROTECTED,
        [
            f"protected path changed since baseline: {', '.join(changed)} "
            "(the harness, the gate's tests and the schema are frozen for the whole campaign; "
            f"{NEW_GATE})"
        ],
    )


def impossible_verdict(over: list[str], verdict: Verdict) -> Verdict:
    """A rate past the device's peak is an error of measurement, never an improvement: the
    candidate is rolled back whatever the comparison said (VERDICT's means are kept)."""
    return Verdict(
        ROLLED_BACK,
        IMPOSSIBLE,
        [f"physical floor: {reason}" for reason in over],
        verdict.candidate,
        verdict.reference,
    )


def rule11_verdict(findings: list[str]) -> Verdict:
    """Rule 11: a gain that would vanish in a real training step is never accepted."""
    return Verdict(ROLLED_BACK, RULE_11, findings)


def mean_values(runs: list[Score]) -> dict[str, float]:
    """Per-shape mean over runs (shapes PASS in every run)."""
    labels = set(runs[0].values)
    for run in runs[1:]:
        labels &= set(run.values)
    return {label: statistics.fmean(run.values[label] for run in runs) for label in sorted(labels)}


def _failures(runs: list[Score]) -> list[str]:
    failing: list[str] = []
    for index, run in enumerate(runs, 1):
        failing += fail_reasons(run.failing, f" (run {index})")
    return failing


def seed_verdict(
    runs: list[Score], best: dict[str, float], limits: Thresholds, versus: str = "best"
) -> Verdict:
    """Decide a candidate from its runs (one or more) against the best line's per-shape values
    (`versus` names that reference in the reasons: kgit finish judges against the baseline)."""
    failures = _failures(runs)
    labels = [label for label in best if label in runs[0].values or label in runs[0].failing]
    reference = {label: best[label] for label in labels}
    if failures:
        return correctness_verdict(failures, reference)
    cand = mean_values(runs)
    missing = [label for label in labels if label not in cand]
    if missing:
        return Verdict(
            ROLLED_BACK,
            NOT_MEASURED,
            [f"shapes not measured: {', '.join(missing)}"],
            cand,
            reference,
        )
    cand = {label: cand[label] for label in labels}
    best_agg = geomean(reference.values())
    gain = pct(geomean(cand.values()), best_agg)
    deltas = {label: pct(cand[label], best[label]) for label in labels}
    gains = [pct(geomean(run.values[label] for label in labels), best_agg) for run in runs]

    def verdict(decision: str, cause: str, reasons: list[str]) -> Verdict:
        return Verdict(decision, cause, reasons, cand, reference, gain, deltas, gains)

    if gain <= 0:
        return verdict(
            ROLLED_BACK, NOT_IMPROVED, [f"aggregate not improved: {gain:+.3f}% vs {versus}"]
        )
    noise_reason: list[str] = []
    if gain < limits.noise_band_pct:
        decision, cause, noise_reason = _noise_rule(gain, gains, limits)
        if decision:
            return verdict(decision, cause, noise_reason)
    decision, cause, reasons = _shape_rule(deltas, limits.core_regression_pct)
    return verdict(
        decision, cause, [f"aggregate improved: {gain:+.3f}% vs {versus}", *noise_reason, *reasons]
    )


def _noise_rule(gain: float, gains: list[float], limits: Thresholds) -> tuple[str, str, list[str]]:
    """The noise rule on a gain under the band, over the runs' GAINS: re-measure, roll back, or
    hold (an empty decision, with the reason it holds)."""
    if len(gains) < limits.noise_min_runs:
        return (
            REMEASURE,
            NEEDS_RUNS,
            [
                f"gain {gain:+.3f}% is under the {limits.noise_band_pct}% noise band: "
                f"re-measuring ({len(gains)} of {limits.noise_min_runs} runs)"
            ],
        )
    mean = statistics.fmean(gains)
    std = statistics.stdev(gains) if len(gains) > 1 else 0.0
    noise = f"mean gain {mean:+.3f}% ± {std:.3f}% over {len(gains)} runs"
    if mean <= limits.noise_min_mean_pct:
        return (
            ROLLED_BACK,
            WITHIN_NOISE,
            [f"within noise: {noise} (needs > {limits.noise_min_mean_pct}%)"],
        )
    if std >= limits.noise_max_std_ratio * mean:
        return (
            ROLLED_BACK,
            WITHIN_NOISE,
            [
                f"within noise: {noise} (stddev must be under {limits.noise_max_std_ratio:g}× the gain)"
            ],
        )
    return "", "", [f"gain holds under re-measure: {noise}"]


def _shape_rule(deltas: dict[str, float], limit: float) -> tuple[str, str, list[str]]:
    """Rule 3 on per-shape deltas, once the aggregate is known to have improved."""
    regressed = {label: d for label, d in deltas.items() if d <= -limit}
    traded = {label: d for label, d in deltas.items() if -limit < d < 0}
    if regressed:
        worst = ", ".join(f"{label} {d:+.3f}%" for label, d in regressed.items())
        return ROLLED_BACK, CORE_REGRESSION, [f"core shape down ≥{limit:g}%: {worst}"]
    if traded:
        listed = ", ".join(f"{label} {d:+.3f}%" for label, d in traded.items())
        return ACCEPTED_TRADEOFF, TRADE_OFF, [f"trade-off, shapes down <{limit:g}%: {listed}"]
    return ACCEPTED, IMPROVED, ["no shape regressed"]


def interleaved_verdict(
    judgement: ABJudgement,
    limits: Thresholds,
    versus: str = "best",
    candidate: dict[str, float] | None = None,
    reference: dict[str, float] | None = None,
) -> Verdict:
    """Rule 3 on statistically called changes: accept only a gain the interval supports, never an
    inconclusive one, and never while a shape may have dropped past the core regression limit.
    CANDIDATE and REFERENCE are the per-shape means of the two sides, for the record."""
    agg = judgement.aggregate
    deltas = {label: e.change_pct for label, e in judgement.shapes.items()}
    head = [
        f"aggregate {agg.change_pct:+.3f}% vs {versus}, {agg.call} "
        f"(CI {_pct(agg.low)}..{_pct(agg.high)}, {agg.n} pairs, floor {agg.floor * 100:.2f}%)"
    ]

    def verdict(decision: str, cause: str, reasons: list[str]) -> Verdict:
        return Verdict(
            decision,
            cause,
            head + reasons,
            dict(candidate or {}),
            dict(reference or {}),
            agg.change_pct,
            deltas,
        )

    if agg.gain_ruled_out:
        why = f"no gain past the floor: the interval tops out at {_pct(agg.high)}"
        return verdict(ROLLED_BACK, NOT_IMPROVED if agg.high < 1.0 else WITHIN_NOISE, [why])
    if agg.call != BETTER:
        cause, why = {
            WORSE: (NOT_IMPROVED, "the candidate is slower"),
            NO_CHANGE: (WITHIN_NOISE, "no change past the noise floor"),
            INCONCLUSIVE: (INCONCLUSIVE_GAIN, "inconclusive within the budget: never accepted"),
        }[agg.call]
        return verdict(ROLLED_BACK, cause, [why])
    return verdict(*_called_shape_rule(judgement.shapes, limits.core_regression_pct))


def _called_shape_rule(shapes: dict[str, Estimate], limit: float) -> tuple[str, str, list[str]]:
    """Rule 3 on the shapes' called changes, once the aggregate is called better."""
    core = 1.0 - limit / 100.0
    regressed = {s: e for s, e in shapes.items() if e.call == WORSE and e.ratio <= core}
    unsure = {s: shapes[s] for s in unsure_regressions(shapes, limit)}
    traded = {s: e for s, e in shapes.items() if e.call == WORSE and e.ratio > core}
    if regressed:
        return ROLLED_BACK, CORE_REGRESSION, [f"core shape down ≥{limit:g}%: {_list(regressed)}"]
    if unsure:
        return (
            ROLLED_BACK,
            CORE_REGRESSION,
            [f"cannot rule out a ≥{limit:g}% drop: {_list(unsure)}"],
        )
    if traded:
        return (
            ACCEPTED_TRADEOFF,
            TRADE_OFF,
            [f"trade-off, shapes significantly down: {_list(traded)}"],
        )
    return ACCEPTED, IMPROVED, ["no shape significantly down"]


def _pct(ratio: float) -> str:
    return "inf" if ratio == float("inf") else f"{(ratio - 1) * 100:+.2f}%"


def _list(estimates: dict[str, Estimate]) -> str:
    return ", ".join(f"{label} {e.change_pct:+.3f}%" for label, e in estimates.items())
