"""The baseline's pass and, under the interleaved policy, its A/A calibration: the baseline
measured against itself, sampled as a round is, gives each shape's noise floor.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from kgit.engine.campaign import Campaign
from kgit.engine.measuring.harness.launches import stop_recording
from kgit.engine.measuring.harness.passes import HarnessError, Measurement
from kgit.engine.measuring.isolation.sealed import one_commit_cache, sealed
from kgit.engine.measuring.policies.interleaved import require_reference_passes, sample_pairs
from kgit.engine.measuring.policies.policy import policy_of
from kgit.engine.measuring.policies.target import Calibrated, Pick
from kgit.engine.measuring.sides.side_trees import measuring_tree
from kgit.engine.measuring.sides.sides import Launch, Side, close_sides, launch_side, start_side
from kgit.judge.stats import (
    Pair,
    calibrate_floors,
    group_biases,
    pairs_of,
    residue_settled,
    side_means,
)
from kgit.progress import Say, Voice, phase, warn
from kgit.records.evidence import RESIDENT_MODE, Evidence


def baseline_pass(campaign: Campaign, commit: str, pick: Pick, voice: Voice) -> Calibrated:
    """The baseline's full pass (side B, kgit's candidate work tree), and what the campaign's
    policy calibrates besides (kgit/engine/measuring/policies/policy.py: Policy.calibrate)."""
    candidate = measuring_tree(campaign, commit, "candidate", voice)
    policy = policy_of(campaign.manifest)
    return policy.calibrate(campaign, commit, candidate, pick, voice)


def calibrate(
    campaign: Campaign, commit: str, candidate: Path, pick: Pick, voice: Voice
) -> Calibrated:
    """The interleaved policy's: the baseline's full pass, then the A/A calibration of the
    representative shapes that PICK(first pass) returns (active ones), B against the same commit
    in kgit's own work tree, sampled as a round is. With resident harnesses, the quads are split
    over `calibration_processes` pairs of processes, each pair after the first started as a
    validation starts its sides (kgit/judge/stats.py, calibrate_floors); a pair after the second
    is started only while the offsets the pairs drew are not yet well inside the floors
    (residue_settled: a sequential stop that keeps the floors' coverage)."""
    # Both trees are checked out and built before the device is taken (timing only holds it).
    tree = measuring_tree(campaign, commit, "reference", voice)
    what = f"campaign {campaign.name}: baseline and calibration"
    with sealed(campaign, (tree, candidate), what, voice.say), one_commit_cache():
        return _calibrated(campaign, commit, (tree, candidate), pick, voice)


def _calibrated(
    campaign: Campaign, commit: str, trees: tuple[Path, Path], pick: Pick, voice: Voice
) -> Calibrated:
    manifest = campaign.manifest
    settings = manifest.interleaved
    tree, candidate = trees
    sides: list[Side] = []
    upcoming: list[Launch] = []  # the next pair's processes, imported and held (_held_pair)
    groups: list[list[Pair]] = []
    try:
        b = _first_pass(campaign, candidate, sides, voice)
        first = b.first
        labels = [label for label in pick(first) if label not in first.score.failing]
        if not labels:
            return Calibrated(first, {}, {})
        frozen = tuple(first.table.header)
        shapes = manifest.shapes_for(labels)
        resident = b.mode == RESIDENT_MODE
        if not resident:
            _warn_plain_harness()
        block_ms = settings.block_ms if resident else None
        processes = settings.calibration_processes if resident else 1
        wanted = settings.calibration_quads if resident else settings.calibration_pairs
        each = max(3, math.ceil(wanted / processes))
        _say_plan(voice.say, each, processes)
        start = time.monotonic()
        mode = b.mode
        for index in range(processes):
            if index > 1 and residue_settled(groups, labels, settings.min_effect_pct):
                voice.say(
                    f"calibration: {index} pairs of processes drew offsets well inside the floors"
                )
                break
            if index:  # a fresh pair, started as `kgit round validate` starts its sides
                if not upcoming:  # not launched during the quads (_on_a_gpu): launched now
                    close_sides(sides)
                    upcoming = _held_pair(
                        campaign, trees, (shapes, frozen), block_ms, echo=voice.echo
                    )
                a, b = _fresh_pair(upcoming, sides, voice.say)
            else:
                a = start_side(campaign, "A", tree, shapes, frozen, voice, first_block_ms=block_ms)
                sides.append(a)
            require_reference_passes(a.first)
            _require_one_mode(a, b, mode)
            if index + 1 < processes and _on_a_gpu(first):  # start-up overlaps the quads
                upcoming = _held_pair(campaign, trees, (shapes, frozen), block_ms, echo=voice.echo)
            evidence = Evidence(manifest.decision_policy, mode, "", commit, labels)
            with phase("quads"):
                sample_pairs(campaign, (a, b), shapes, None, evidence, voice.say, pairs_wanted=each)
            groups.append(pairs_of(evidence.pairs))
        seconds = time.monotonic() - start
    finally:
        for launch in upcoming:
            launch.kill()
        close_sides(sides)
    floors = calibrate_floors(groups, labels, settings.min_effect_pct)
    statistics = _statistics(manifest.decision_policy, mode, groups, labels, floors, seconds)
    return Calibrated(first, floors, statistics)


def _first_pass(campaign: Campaign, candidate: Path, sides: list[Side], voice: Voice) -> Side:
    """Side B's full pass on every target shape, added to SIDES: the baseline's figures. It
    alone records what the shapes launch (`harness_records`): the calibration's processes run
    shapes it logged already."""
    b = start_side(campaign, "B", candidate, campaign.manifest.target_shapes, None, voice)
    sides.append(b)
    stop_recording()
    return b


def _say_plan(say: Say, each: int, processes: int) -> None:
    say(
        f"calibration: {each * processes} A/A pairs of the baseline against itself"
        + (f", over {processes} pairs of processes" if processes > 1 else "")
        + (" (fewer where two draw offsets well inside the floors)" if processes > 2 else "")
    )


def _require_one_mode(a: Side, b: Side, mode: str) -> None:
    if a.mode != mode or b.mode != mode:
        raise HarnessError(
            "the harness answered as a resident harness in one process and not in another: the "
            "calibration cannot pair them",
            hint="check how the harness reads KGIT_WORKER (kgit/records/protocol.py)",
        )


def _warn_plain_harness() -> None:
    """Interleaved on a plain harness: what it costs, and the ways out."""
    warn(
        "the harness is not a resident harness: each A/B pair of the interleaved policy "
        "is two whole passes, so a validation takes several passes; a harness built on "
        "kgit.measure answers in short blocks (docs/harness.md), and "
        "`decision_policy: seed` judges one pass by the seed's rule"
    )


def _on_a_gpu(first: Measurement) -> bool:
    """Whether the harness times a GPU (its fingerprint names one): only then may the next
    pair's start-up overlap the current pair's quads. Where the CPU is the device, importing
    beside the blocks slows them: on 2 cores the demo's floors grew and its planted change read
    inconclusive."""
    return first.fingerprint.get("gpu", "cpu") not in ("cpu", "")


def _held_pair(
    campaign: Campaign,
    trees: tuple[Path, Path],
    measured: tuple[list[dict[str, Any]], tuple[str, ...]],
    block_ms: float | None,
    *,
    echo: bool,
) -> list[Launch]:
    """The next calibration pair's processes on the MEASURED shapes (and the frozen header),
    B's then A's, started now: each imports and waits for its turn (the hold,
    kgit/records/protocol.py), so that their start-up overlaps the current pair's quads, as a
    validation's reference starts beside the candidate's first pass."""
    tree, candidate = trees
    shapes, frozen = measured
    launches: list[Launch] = []
    try:
        for name, where in (("B", candidate), ("A", tree)):
            launch = launch_side(
                campaign, name, where, shapes, frozen, echo=echo, first_block_ms=block_ms, hold=True
            )
            launches.append(launch)
    except BaseException:
        for launch in launches:
            launch.kill()
        raise
    return launches


def _fresh_pair(upcoming: list[Launch], sides: list[Side], say: Say) -> tuple[Side, Side]:
    """The pair before (SIDES) closed, the held pair UPCOMING (_held_pair) started as a
    validation starts its sides: CUDA and the first pass in the candidate's process first, then
    in the reference's. Each is added to SIDES as it starts, closed with them whatever follows;
    a launch not started stays in UPCOMING, for the caller to kill."""
    close_sides(sides)
    sides.clear()
    b = upcoming.pop(0).start(say)
    sides.append(b)
    require_reference_passes(b.first)
    a = upcoming.pop(0).start(say)
    sides.append(a)
    return a, b


def _statistics(
    policy: str,
    mode: str,
    groups: list[list[Pair]],
    labels: list[str],
    floors: dict[str, float],
    seconds: float,
) -> dict[str, Any]:
    """What the baseline's note shows of its calibration, over the GROUPS of pairs that each
    pair of processes measured in SECONDS."""
    pairs = [pair for group in groups for pair in group]
    statistics: dict[str, Any] = {
        "policy": policy,
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
    if mode == RESIDENT_MODE:
        # Rounds of a resident harness report block figures (no L2 flush, graph replays): their "vs
        # baseline" compares with the baseline's own blocks, not with its plain pass.
        statistics["block_values"] = side_means(pairs, labels)[1]
    return statistics
