"""One validation path: a candidate measured against a reference and judged under the campaign's
policy. `kgit round validate` compares the round's commit with the best line, `kgit finish` the
best line with the baseline, and `kgit baseline` calibrates the noise floors with the same
sampling, the baseline against itself.

- `seed`: the candidate's passes against the reference's stored per-shape values, re-measured
  in the noise band (the seed's rule 3 and noise rule).
- `interleaved`: the reference's commit in kgit's own work tree (A) and the candidate (B), each a
  measuring worker when the harness speaks the protocol (kgit/engine/workers.py). Per shape,
  quads of short blocks A,B,B,A, so that the chip's clock falls on both sides alike; each quad is
  one pair of the log-ratio statistics (kgit/judge/stats.py), sampled until the verdict is
  settled. With a plain harness a pair is two whole passes, in alternating order.

Evidence pools: a validation of the tree and reference that earlier evidence is about adds to it
(kgit/records/evidence.py), and the verdict is recomputed over everything measured.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgit.engine.campaign import Campaign
from kgit.engine.devicelock import measuring
from kgit.engine.passes import HarnessError, Measurement, Say, check_fingerprint, measure
from kgit.engine.workers import Launch, Side, launch_side, start_side
from kgit.engine.worktree import measuring_tree, require_pristine
from kgit.errors import KgitError
from kgit.judge.scoring import Score, geomean
from kgit.judge.stats import (
    ABJudgement,
    Estimate,
    Pair,
    calibrate_floors,
    group_biases,
    judge_pairs,
)
from kgit.judge.verdict import (
    NOT_MEASURED,
    REMEASURE,
    Verdict,
    correctness_verdict,
    interleaved_verdict,
    seed_verdict,
)
from kgit.records.evidence import Evidence
from kgit.records.notes import ROLLED_BACK, RoundNote


@dataclass(frozen=True)
class Target:
    """What a validation compares: the candidate commit (its tree names the evidence) and the
    reference commit with its stored per-shape values, on LABELS. Each is measured from a work
    tree of kgit's own holding that commit's files only (kgit/engine/worktree.py)."""

    candidate: str
    candidate_tree: str
    reference: str
    reference_values: dict[str, float]
    labels: list[str]
    versus: str  # how the reasons name the reference: "best" or "baseline"
    # The baseline's calibration ran measuring workers (the harness is frozen since): the
    # reference side may start, held, beside the candidate's first pass.
    workers: bool = False


@dataclass
class Outcome:
    verdict: Verdict
    evidence: Evidence
    passes: list[Measurement] = field(default_factory=list)  # the candidate's plain passes
    reference_passes: list[Measurement] = field(default_factory=list)
    judgement: ABJudgement | None = None


def validate(
    campaign: Campaign, target: Target, prior: Evidence | None, say: Say, *, echo: bool
) -> Outcome:
    """Measure and judge TARGET under the campaign's policy, pooled with PRIOR when it is
    evidence about the same tree and reference."""
    policy = campaign.manifest.decision_policy
    if prior is not None and not prior.pools_with(
        policy, None, target.candidate_tree, target.reference, target.labels
    ):
        prior = None
    if prior is not None:
        say(
            f"pooling with {prior.validations} earlier validation(s) of this tree "
            f"({len(prior.runs)} run(s), {len(prior.pairs)} pair(s))"
        )
    if prior is not None and prior.failed:  # Check is a hard gate: the same files fail again
        prior.validations += 1
        failed = [f"shape {label}: Check FAIL (an earlier validation)" for label in prior.failed]
        return Outcome(correctness_verdict(failed, target.reference_values), prior)
    path = measuring_tree(campaign, target.candidate, "candidate", say, echo=echo)
    if policy == "interleaved":
        # Both trees are checked out and built first: the device is held for timing only.
        reference = measuring_tree(campaign, target.reference, "reference", say, echo=echo)
        what = f"campaign {campaign.name}: validating {target.candidate[:10]}"
        with measuring(campaign.repo, what, say):
            return _interleaved(campaign, target, (reference, path), prior, say, echo=echo)
    return _seed(campaign, target, path, prior, say, echo=echo)


def ran_workers(baseline: RoundNote | None) -> bool:
    """Whether the baseline's A/A calibration ran measuring workers (Target.workers)."""
    return baseline is not None and baseline.statistics.get("mode") == "worker"


def _evidence(target: Target, policy: str, mode: str, prior: Evidence | None) -> Evidence:
    evidence = prior or Evidence(
        policy, mode, target.candidate_tree, target.reference, list(target.labels)
    )
    evidence.validations += 1
    return evidence


def _scores(runs: list[dict[str, float]], labels: list[str]) -> list[Score]:
    return [Score(dict(run), [], geomean(run[label] for label in labels)) for run in runs]


# -- seed --------------------------------------------------------------------------------------


def _seed(
    campaign: Campaign, target: Target, path: Path, prior: Evidence | None, say: Say, *, echo: bool
) -> Outcome:
    """The seed's rule: the candidate's runs against the stored values, re-measured in the band."""
    frozen = tuple(campaign.state.frozen_header or ())
    shapes = campaign.manifest.shapes_for(target.labels)
    evidence = _evidence(target, "seed", "pass", prior)
    reference = {label: target.reference_values[label] for label in target.labels}
    outcome = Outcome(Verdict("", "", []), evidence)
    start = time.monotonic()
    new_runs = 0
    while True:
        run = measure(campaign, shapes, frozen, say, echo=echo, tree=path)
        require_pristine(path, "candidate")
        check_fingerprint(campaign.state.fingerprint, run.fingerprint)
        outcome.passes.append(run)
        new_runs += 1
        evidence.seconds = round(evidence.seconds + time.monotonic() - start, 3)
        start = time.monotonic()
        if run.score.failing:
            evidence.failed = list(run.score.failing)
            outcome.verdict = correctness_verdict(
                [f"shape {label}: Check FAIL" for label in run.score.failing], reference
            )
            return outcome
        evidence.runs.append(dict(run.score.values))
        verdict = seed_verdict(
            _scores(evidence.runs, target.labels),
            reference,
            campaign.manifest.thresholds,
            versus=target.versus,
        )
        if verdict.decision != REMEASURE:
            outcome.verdict = verdict
            return outcome
        say(verdict.reasons[-1])


# -- interleaved -------------------------------------------------------------------------------


def _floors(campaign: Campaign, labels: list[str], versus: str) -> dict[str, float]:
    floors = campaign.state.noise_floors
    if not floors:
        raise KgitError(
            "no calibrated noise floors for decision_policy: interleaved",
            hint="the A/A calibration runs at kgit baseline; record a new baseline epoch",
        )
    missing = [label for label in labels if label not in floors]
    if missing and versus == "best":
        raise KgitError(
            f"no calibrated noise floor for {', '.join(missing)}",
            hint="decision_policy: interleaved needs the A/A calibration of `kgit baseline`",
        )
    # kgit finish measures every target shape; the calibration ran on the representative ones.
    widest = max(floors.values())
    return {label: floors.get(label, widest) for label in labels}


def _interleaved(
    campaign: Campaign,
    target: Target,
    trees: tuple[Path, Path],
    prior: Evidence | None,
    say: Say,
    *,
    echo: bool,
) -> Outcome:
    """A/B sampling of the reference's and the candidate's TREES; the caller holds the device."""
    floors = _floors(campaign, target.labels, target.versus)
    shapes = campaign.manifest.shapes_for(target.labels)
    frozen = tuple(campaign.state.frozen_header or ())
    reference_tree, path = trees
    require_pristine(reference_tree, "reference")
    block_ms = campaign.manifest.interleaved.block_ms
    sides: list[Side] = []
    start = time.monotonic()
    evidence: Evidence | None = None
    held: Launch | None = None
    try:

        def reference(hold: bool) -> Launch:
            return launch_side(
                campaign, "A", reference_tree, shapes, frozen, echo=echo,
                first_block_ms=block_ms, hold=hold,
            )  # fmt: skip

        if target.workers:
            # The reference's process starts now and waits, imported, for the candidate's first
            # pass to end: its start-up overlaps that pass, and the two never time at once.
            held = reference(hold=True)
        # Both sides' first passes in blocks (a worker; a plain harness ignores it): the two
        # processes then set up alike. On an H200, a candidate whose first pass was a plain one
        # (pools of up to 30% of the GPU's memory, kept by the caching allocator) read 2% slower
        # than an identical reference at 32768x8192 RMSNorm, in every validation.
        b = start_side(
            campaign,
            "B",
            path,
            shapes,
            frozen,
            say,
            echo=echo,
            first_block_ms=block_ms,
        )
        sides.append(b)
        check_fingerprint(campaign.state.fingerprint, b.first.fingerprint)
        if prior is not None and prior.mode != b.mode:
            prior = None  # the harness changed its way of measuring: a new body of evidence
        evidence = _evidence(target, "interleaved", b.mode, prior)
        outcome = Outcome(Verdict("", "", []), evidence, [b.first])
        evidence.runs.append(dict(b.first.score.values))
        if b.first.score.failing:
            evidence.failed = list(b.first.score.failing)
            outcome.verdict = correctness_verdict(
                [f"shape {label}: Check FAIL" for label in b.first.score.failing],
                target.reference_values,
            )
            return outcome
        require_pristine(reference_tree, "reference")
        launch, held = held or reference(hold=False), None
        a = launch.start(say)
        sides.append(a)
        outcome.reference_passes.append(a.first)
        _require_reference_passes(a.first)
        if b.mode == "pass" and a.mode == "pass" and not evidence.pairs:
            # Two plain passes, B then A: the first pair, already paid for.
            evidence.pairs.append(
                {"a": dict(a.first.score.values), "b": dict(b.first.score.values)}
            )
        failing = _sample(campaign, (a, b), shapes, floors, evidence, say)
        require_pristine(reference_tree, "reference")
        require_pristine(path, "candidate")
    finally:
        if held is not None:
            held.kill()
        for side in sides:
            side.close()
        if evidence is not None:
            evidence.seconds = round(evidence.seconds + time.monotonic() - start, 3)
    if failing:
        evidence.failed = failing
        outcome.verdict = correctness_verdict(
            [f"shape {label}: Check FAIL in a block" for label in failing], target.reference_values
        )
        return outcome
    pairs = [Pair(p["a"], p["b"]) for p in evidence.pairs]
    manifest = campaign.manifest
    judged = judge_pairs(pairs, target.labels, floors, manifest.interleaved, manifest.thresholds)
    means_a, means_b = _side_means(pairs, target.labels)
    outcome.judgement = judged
    outcome.verdict = interleaved_verdict(
        judged, manifest.thresholds, target.versus, candidate=means_b, reference=means_a
    )
    return outcome


def _require_reference_passes(first: Measurement) -> None:
    if first.score.failing:
        raise HarnessError(
            f"the reference FAILed {', '.join(first.score.failing)} in its own work tree: the "
            "harness or the machine is not reliable",
            hint="check the best line's correctness (kgit show), then validate again",
            details=first.tail[-4000:],
        )


def _side_means(pairs: list[Pair], labels: list[str]) -> tuple[dict[str, float], dict[str, float]]:
    def means(side: str) -> dict[str, float]:
        return {label: geomean(getattr(p, side)[label] for p in pairs) for label in labels}

    return means("a"), means("b")


def _sample(
    campaign: Campaign,
    sides: tuple[Side, Side],
    shapes: list[dict[str, Any]],
    floors: dict[str, float],
    evidence: Evidence,
    say: Say,
    *,
    pairs_wanted: int | None = None,
) -> list[str]:
    """Add pairs to EVIDENCE until the judgement is settled (or PAIRS_WANTED pairs, for the A/A
    calibration); return the candidate's FAIL labels if a block failed."""
    manifest = campaign.manifest
    settings, limits = manifest.interleaved, manifest.thresholds
    a, b = sides
    workers = a.mode == b.mode == "worker"
    fewest, most = (
        (settings.min_quads, settings.max_quads)
        if workers
        else (settings.min_pairs, settings.max_pairs)
    )
    evidence.block_ms = settings.block_ms if workers else None
    groups = [[shape] for shape in shapes] if workers else [shapes]
    labels = [shape["label"] for shape in shapes]
    quiet: Say = say if not workers else (lambda _: None)
    start, new = time.monotonic(), 0
    while new < (pairs_wanted if pairs_wanted is not None else most):
        # ABBA cancels a linear drift within a quad; alternating with BAAB cancels what falls on
        # a quad's first block (the switch from the previous shape).
        odd = (len(evidence.pairs) + 1) % 2
        order = ("ABBA" if odd else "BAAB") if workers else ("AB" if odd else "BA")
        seen: dict[str, dict[str, list[float]]] = {"A": defaultdict(list), "B": defaultdict(list)}
        for group in groups:
            for index, name in enumerate(order):
                side = a if name == "A" else b
                # Each side's units are placed anew once a quad (kgit/measure/timing.py).
                relocate = workers and order.index(name) == index
                run = side.block(group, settings.block_ms, quiet, relocate=relocate)
                if run.score.failing:
                    if side is b:
                        return list(run.score.failing)
                    _require_reference_passes(run)
                for label, value in run.score.values.items():
                    seen[name][label].append(value)
        pair = {name: {label: geomean(seen[name][label]) for label in labels} for name in "AB"}
        evidence.pairs.append({"a": pair["A"], "b": pair["B"]})
        new += 1
        change = (geomean(pair["B"].values()) / geomean(pair["A"].values()) - 1) * 100
        limit = pairs_wanted if pairs_wanted is not None else most
        say(
            f"pair {len(evidence.pairs)} ({'quad of blocks' if workers else 'passes'}; "
            f"{new} of at most {limit} now): B/A {change:+.3f}%, {time.monotonic() - start:.1f} s"
        )
        # A validation adds two pairs at least, pooled or not; then it stops once settled.
        if pairs_wanted is None and len(evidence.pairs) >= fewest and new >= 2:
            pairs = [Pair(p["a"], p["b"]) for p in evidence.pairs]
            judged = judge_pairs(pairs, labels, floors, settings, limits)
            if judged.settled or time.monotonic() - start >= settings.budget_s:
                break
    return []


def estimate_dict(e: Estimate) -> dict[str, Any]:
    """An estimate as the note records it, with the smallest change it could have called."""
    return {
        "ratio": e.ratio,
        "ci": [e.low, e.high],
        "call": e.call,
        "floor_pct": e.floor * 100,
        "detectable_pct": None if math.isinf(e.detectable_pct) else e.detectable_pct,
    }


def statistics_dict(outcome: Outcome) -> dict[str, Any]:
    """What the note shows of the judged evidence."""
    evidence, judged = outcome.evidence, outcome.judgement
    data: dict[str, Any] = {
        "policy": evidence.policy,
        "mode": evidence.mode,
        # Where the harness ran: kgit's work trees, each holding one commit's files only.
        "ran_in": ".git/kgit/worktrees/<campaign>/{candidate,reference}",
        "validations": evidence.validations,
        "seconds": evidence.seconds,
        "runs": len(evidence.runs),
    }
    if evidence.policy == "interleaved":
        data["pairs"] = len(evidence.pairs)
        if evidence.block_ms:
            data["block_ms"] = evidence.block_ms
    if judged is not None:
        data["aggregate"] = estimate_dict(judged.aggregate)
        data["shapes"] = {label: estimate_dict(e) for label, e in judged.shapes.items()}
    return data


# -- calibration -------------------------------------------------------------------------------


@dataclass
class Calibrated:
    """The baseline's first pass, and the A/A floors measured right after it."""

    first: Measurement
    floors: dict[str, float]
    statistics: dict[str, Any]


def baseline_pass(
    campaign: Campaign, commit: str, pick: Any, say: Say, *, echo: bool
) -> Calibrated:
    """The baseline's full pass (side B, the main work tree); under the interleaved policy, then
    the A/A calibration of the representative shapes that PICK(first pass) returns (active ones),
    B against the same commit in kgit's own work tree, sampled as a round is. With measuring
    workers, the quads are split over `calibration_processes` pairs of processes, each pair after
    the first started as a validation starts its sides (kgit/judge/stats.py, calibrate_floors)."""
    manifest = campaign.manifest
    candidate = measuring_tree(campaign, commit, "candidate", say, echo=echo)
    if manifest.decision_policy != "interleaved":
        first = measure(campaign, manifest.target_shapes, None, say, echo=echo, tree=candidate)
        return Calibrated(first, {}, {})
    # Both trees are checked out and built before the device is taken (timing only holds it).
    tree = measuring_tree(campaign, commit, "reference", say, echo=echo)
    with measuring(campaign.repo, f"campaign {campaign.name}: baseline and calibration", say):
        return _calibrated(campaign, commit, (tree, candidate), pick, say, echo=echo)


def _calibrated(
    campaign: Campaign, commit: str, trees: tuple[Path, Path], pick: Any, say: Say, *, echo: bool
) -> Calibrated:
    manifest = campaign.manifest
    settings = manifest.interleaved
    tree, candidate = trees
    sides: list[Side] = []
    held: Launch | None = None
    groups: list[list[Pair]] = []
    try:
        b = start_side(campaign, "B", candidate, manifest.target_shapes, None, say, echo=echo)
        sides.append(b)
        first = b.first
        labels = [label for label in pick(first) if label not in first.score.failing]
        if not labels:
            return Calibrated(first, {}, {})
        frozen = tuple(first.table.header)
        shapes = manifest.shapes_for(labels)
        workers = b.mode == "worker"
        block_ms = settings.block_ms if workers else None
        processes = settings.calibration_processes if workers else 1
        wanted = settings.calibration_quads if workers else settings.calibration_pairs
        each = max(3, math.ceil(wanted / processes))
        say(
            f"calibration: {each * processes} A/A pairs of the baseline against itself"
            + (f", over {processes} pairs of processes" if processes > 1 else "")
        )
        start = time.monotonic()
        mode = b.mode
        for index in range(processes):
            if index:  # a fresh pair, started as `kgit round validate` starts its sides
                for side in sides:
                    side.close()
                sides.clear()
                held = launch_side(
                    campaign, "A", tree, shapes, frozen, echo=echo,
                    first_block_ms=block_ms, hold=True,
                )  # fmt: skip
                b = start_side(
                    campaign, "B", candidate, shapes, frozen, say, echo=echo,
                    first_block_ms=block_ms,
                )  # fmt: skip
                sides.append(b)
                _require_reference_passes(b.first)
                launch, held = held, None
                a = launch.start(say)
            else:
                a = start_side(
                    campaign, "A", tree, shapes, frozen, say, echo=echo, first_block_ms=block_ms
                )
            sides.append(a)
            _require_reference_passes(a.first)
            if a.mode != mode or b.mode != mode:
                raise HarnessError(
                    "the harness answered as a measuring worker in one process and not in "
                    "another: the calibration cannot pair them",
                    hint="check how the harness reads KGIT_WORKER (kgit/records/protocol.py)",
                )
            evidence = Evidence("interleaved", mode, "", commit, labels)
            _sample(campaign, (a, b), shapes, {}, evidence, say, pairs_wanted=each)
            groups.append([Pair(p["a"], p["b"]) for p in evidence.pairs])
        seconds = time.monotonic() - start
    finally:
        if held is not None:
            held.kill()
        for side in sides:
            side.close()
    floors = calibrate_floors(groups, labels, settings.min_effect_pct)
    pairs = [pair for group in groups for pair in group]
    statistics: dict[str, Any] = {
        "policy": "interleaved",
        "mode": mode,
        "calibration_pairs": len(pairs),
        "calibration_processes": len(groups),
        "noise_floor_pct": {label: round(f * 100, 4) for label, f in floors.items()},
        "seconds": round(seconds, 1),
    }
    if len(groups) > 1:
        # What each pair of processes drew: the steady A/A difference the floors cover.
        statistics["process_pair_change_pct"] = {
            label: [round(v, 3) for v in values]
            for label, values in group_biases(groups, labels).items()
        }
    if mode == "worker":
        # Rounds of a worker report block figures (no L2 flush, graph replays): their "vs
        # baseline" compares with the baseline's own blocks, not with its plain pass.
        statistics["block_values"] = _side_means(pairs, labels)[1]
    return Calibrated(first, floors, statistics)


# -- accept's check ----------------------------------------------------------------------------


def rejudge(campaign: Campaign, evidence: Evidence, best: dict[str, float]) -> Verdict:
    """The verdict recomputed from recorded EVIDENCE: accept follows what the measurements say,
    not a decision written in a note."""
    if not evidence.labels or not (evidence.runs or evidence.pairs):
        return Verdict(ROLLED_BACK, NOT_MEASURED, ["the evidence holds no measurements"])
    manifest = campaign.manifest
    if evidence.policy == "interleaved":
        floors = _floors(campaign, evidence.labels, "best")
        pairs = [Pair(p["a"], p["b"]) for p in evidence.pairs]
        judged = judge_pairs(
            pairs, evidence.labels, floors, manifest.interleaved, manifest.thresholds
        )
        return interleaved_verdict(judged, manifest.thresholds)
    reference = {label: best[label] for label in evidence.labels if label in best}
    return seed_verdict(_scores(evidence.runs, evidence.labels), reference, manifest.thresholds)
