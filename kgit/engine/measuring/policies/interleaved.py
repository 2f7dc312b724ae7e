"""The interleaved policy (see kgit/engine/measuring/policies/validation.py): the reference (A) and the candidate (B)
measured in alternation, as resident harnesses in quads of short blocks or as whole passes, and
sampled until the verdict is settled.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from kgit.engine.campaign import Campaign
from kgit.engine.measuring.harness.passes import HarnessError, Measurement, check_fingerprint
from kgit.engine.measuring.policies.target import Outcome, Target, evidence_for, standard_for
from kgit.engine.measuring.sides.side_trees import require_pristine
from kgit.engine.measuring.sides.sides import Launch, Side, close_sides, launch_side, start_side
from kgit.errors import KgitError
from kgit.judge.decision import Standard, decide
from kgit.judge.rules import pairs_rule
from kgit.judge.scoring import geomean
from kgit.progress import Say, Voice, phase
from kgit.records.evidence import RESIDENT_MODE, Evidence


def floors_for(campaign: Campaign, labels: list[str], versus: str) -> dict[str, float]:
    floors = campaign.state.noise_floors
    if not floors:
        raise KgitError(
            "no calibrated noise floors for decision_policy: interleaved",
            hint="the A/A calibration runs at kgit baseline, under this policy: a campaign "
            "baselined under `seed` has none; start a new campaign from its best line with "
            "decision_policy: interleaved (kgit init NAME --manifest FILE, then kgit baseline)",
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


def measure_interleaved(
    campaign: Campaign,
    target: Target,
    trees: tuple[Path, Path],
    prior: Evidence | None,
    voice: Voice,
) -> Outcome:
    """A/B sampling of the reference's and the candidate's TREES; the caller holds the device."""
    floors = floors_for(campaign, target.labels, target.versus)
    manifest = campaign.manifest
    standard = standard_for(manifest, target.labels, target.reference_values, target.versus, floors)
    shapes = manifest.shapes_for(target.labels)
    reference_tree, path = trees
    require_pristine(reference_tree, "reference")
    sides: list[Side] = []
    start = time.monotonic()
    outcome: Outcome | None = None
    held: Launch | None = None
    try:
        if target.resident:
            # The reference's process starts now and waits, imported, for the candidate's first
            # pass to end: its start-up overlaps that pass, and the two never time at once.
            held = _launch_reference(campaign, reference_tree, shapes, hold=True, echo=voice.echo)
        b = _start_candidate(campaign, path, shapes, sides, voice)
        outcome = _first_outcome(campaign, target, standard, b, prior)
        if outcome.evidence.failed:
            return outcome
        require_pristine(reference_tree, "reference")
        launch = held or _launch_reference(
            campaign, reference_tree, shapes, hold=False, echo=voice.echo
        )
        held = None
        a = launch.start(voice.say)
        sides.append(a)
        outcome.reference_passes.append(a.first)
        require_reference_passes(a.first)
        if b.mode == "pass" and a.mode == "pass" and not outcome.evidence.pairs:
            # Two plain passes, B then A: the first pair, already paid for.
            outcome.evidence.pairs.append(
                {"a": dict(a.first.score.values), "b": dict(b.first.score.values)}
            )
        with phase("quads"):
            failing = sample_pairs(campaign, (a, b), shapes, standard, outcome.evidence, voice.say)
        require_pristine(reference_tree, "reference")
        require_pristine(path, "candidate")
    finally:
        if held is not None:
            held.kill()
        close_sides(sides)
        if outcome is not None:
            seconds = outcome.evidence.seconds + time.monotonic() - start
            outcome.evidence.seconds = round(seconds, 3)
    if failing:
        outcome.evidence.failed = failing
        outcome.failed_where = " in a block"
    return outcome


def _launch_reference(
    campaign: Campaign, tree: Path, shapes: list[dict[str, Any]], *, hold: bool, echo: bool
) -> Launch:
    frozen = tuple(campaign.state.frozen_header or ())
    return launch_side(
        campaign, "A", tree, shapes, frozen, echo=echo,
        first_block_ms=campaign.manifest.interleaved.block_ms, hold=hold,
    )  # fmt: skip


def _start_candidate(
    campaign: Campaign,
    path: Path,
    shapes: list[dict[str, Any]],
    sides: list[Side],
    voice: Voice,
) -> Side:
    """The candidate's side, added to SIDES (closed with them whatever follows)."""
    # Both sides' first passes in blocks (a resident harness; a plain one ignores it): the two
    # processes then set up alike. On an H200, a candidate whose first pass was a plain one
    # (pools of up to 30% of the GPU's memory, kept by the caching allocator) read 2% slower
    # than an identical reference at 32768x8192 RMSNorm, in every validation.
    frozen = tuple(campaign.state.frozen_header or ())
    b = start_side(
        campaign,
        "B",
        path,
        shapes,
        frozen,
        voice,
        first_block_ms=campaign.manifest.interleaved.block_ms,
    )
    sides.append(b)
    check_fingerprint(campaign.state.fingerprint, b.first.fingerprint)
    return b


def _first_outcome(
    campaign: Campaign, target: Target, standard: Standard, b: Side, prior: Evidence | None
) -> Outcome:
    """The evidence that the candidate's first pass (side B's) starts or adds to."""
    if prior is not None and prior.mode != b.mode:
        prior = None  # the harness changed its way of measuring: a new body of evidence
    evidence = evidence_for(target, campaign.manifest.decision_policy, b.mode, prior)
    evidence.runs.append(dict(b.first.score.values))
    if b.first.score.failing:
        evidence.failed = list(b.first.score.failing)
    return Outcome(evidence, standard, [b.first])


def require_reference_passes(first: Measurement) -> None:
    if first.score.failing:
        raise HarnessError(
            f"the reference FAILed {', '.join(first.score.failing)} in its own work tree: the "
            "harness or the machine is not reliable",
            hint="check the best line's correctness (kgit show), then validate again",
            details=first.tail[-4000:],
        )


def sample_pairs(
    campaign: Campaign,
    sides: tuple[Side, Side],
    shapes: list[dict[str, Any]],
    standard: Standard | None,
    evidence: Evidence,
    say: Say,
    *,
    pairs_wanted: int | None = None,
) -> list[str]:
    """Add pairs to EVIDENCE until its verdict against STANDARD is settled (or PAIRS_WANTED
    pairs, for the A/A calibration, which judges nothing); return the candidate's FAIL labels if
    a block failed."""
    settings = campaign.manifest.interleaved
    a, b = sides
    resident = a.mode == b.mode == RESIDENT_MODE
    fewest, most = (
        (settings.min_quads, settings.max_quads)
        if resident
        else (settings.min_pairs, settings.max_pairs)
    )
    evidence.block_ms = settings.block_ms if resident else None
    groups = [[shape] for shape in shapes] if resident else [shapes]
    labels = [shape["label"] for shape in shapes]
    quiet: Say = say if not resident else (lambda _: None)

    def quads() -> list[str]:
        start, new = time.monotonic(), 0
        while new < (pairs_wanted if pairs_wanted is not None else most):
            # ABBA cancels a linear drift within a quad; alternating with BAAB cancels what falls on
            # a quad's first block (the switch from the previous shape).
            odd = (len(evidence.pairs) + 1) % 2
            order = ("ABBA" if odd else "BAAB") if resident else ("AB" if odd else "BA")
            seen, failing = _sample_quad(sides, groups, order, settings.block_ms, quiet)
            if failing:
                return failing
            pair = {name: {label: geomean(seen[name][label]) for label in labels} for name in "AB"}
            evidence.pairs.append({"a": pair["A"], "b": pair["B"]})
            new += 1
            change = (geomean(pair["B"].values()) / geomean(pair["A"].values()) - 1) * 100
            limit = pairs_wanted if pairs_wanted is not None else most
            say(
                f"pair {len(evidence.pairs)} ({'quad of blocks' if resident else 'passes'}; "
                f"{new} of at most {limit} now): B/A {change:+.3f}%, {time.monotonic() - start:.1f} s"
            )
            # A validation adds two pairs at least, pooled or not; then it stops once settled.
            if standard is not None and len(evidence.pairs) >= fewest and new >= 2:
                settled = decide(evidence, standard, pairs_rule).settled
                if settled or time.monotonic() - start >= settings.budget_s:
                    break
        return []

    failing = quads()
    for side in sides:  # both go on: what follows (a next call, closing) needs them running
        side.release()
    return failing


def _sample_quad(
    sides: tuple[Side, Side],
    groups: list[list[dict[str, Any]]],
    order: str,
    block_ms: float,
    quiet: Say,
) -> tuple[dict[str, dict[str, list[float]]], list[str]]:
    """One pair's blocks of each group, the sides in ORDER: the values each side ("A", "B")
    read per shape, and the candidate's FAIL labels if one of its blocks failed."""
    a, b = sides
    resident = a.mode == b.mode == RESIDENT_MODE
    seen: dict[str, dict[str, list[float]]] = {"A": defaultdict(list), "B": defaultdict(list)}
    for group in groups:
        for index, name in enumerate(order):
            side, idle = (a, b) if name == "A" else (b, a)
            # The idle side is stopped while this one measures: a thread of its harness
            # could otherwise slow this side down (kgit/engine/measuring/sides/holding.py).
            idle.hold()
            side.release()
            # Each side's units are placed anew once a quad (kgit/measure/timing_blocks.py).
            relocate = resident and order.index(name) == index
            run = side.block(group, block_ms, quiet, relocate=relocate)
            if run.score.failing:
                if side is b:
                    return seen, list(run.score.failing)
                require_reference_passes(run)
            for label, value in run.score.values.items():
                seen[name][label].append(value)
    return seen, []
