"""The interleaved policy's statistics on synthetic pairs with fixed seeds."""

from __future__ import annotations

import math
import random

import pytest

from kgit.judge.stats import (
    BETTER,
    NO_CHANGE,
    WORSE,
    Pair,
    calibrate_floors,
    estimate,
    group_biases,
    judge_pairs,
    residue_settled,
)
from kgit.judge.verdict import interleaved_verdict
from kgit.records.manifest import Interleaved, Thresholds
from kgit.records.notes import ACCEPTED, ROLLED_BACK

SHAPES = {"s256": 20.0, "s1024": 300.0, "s2048": 600.0, "s4096": 650.0, "s8192": 640.0}
# Run-to-run spread of kgit.measure timings seen on an H200 (bench/gpu_check.py): ~6% at 256^3.
SPREAD = {"s256": 0.05, "s1024": 0.02, "s2048": 0.01, "s4096": 0.01, "s8192": 0.01}


def measured(rng: random.Random, drift: float, shift: dict[str, float]) -> dict[str, float]:
    """One harness run: each shape's noise, a drift shared by the run, and a planted shift."""
    return {
        s: v * (1 + shift.get(s, 0.0)) * math.exp(rng.gauss(0, SPREAD[s]) + drift)
        for s, v in SHAPES.items()
    }


def pairs(seed: int, n: int, shift: dict[str, float] | None = None) -> list[Pair]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        drift = rng.gauss(0, 0.05)  # the machine drifts between pairs, not within one
        out.append(Pair(measured(rng, drift, {}), measured(rng, drift, shift or {})))
    return out


FLOORS = calibrate_floors([pairs(1, 8)], list(SHAPES), min_effect_pct=1.0)


def judge(p: list[Pair]) -> object:
    # confidence 0.99, min_effect_pct 1.0, core_regression_pct 5.0
    return judge_pairs(p, list(SHAPES), FLOORS, Interleaved(), Thresholds())


def test_floors_follow_each_shapes_noise() -> None:
    assert FLOORS["s256"] > 0.05  # a tiny, launch-bound shape: a wide floor
    assert FLOORS["s4096"] < 0.03
    assert min(FLOORS.values()) >= 0.01  # never under min_effect_pct


def test_known_equal_samples_give_no_verdict_of_change() -> None:
    calls = []
    for seed in range(100, 300):
        judgement = judge(pairs(seed, 8))
        calls.append(judgement.aggregate.call)  # type: ignore[attr-defined]
        shape_calls = [e.call for e in judgement.shapes.values()]  # type: ignore[attr-defined]
        calls += [c for c in shape_calls if c in (BETTER, WORSE)]
    changes = sum(c in (BETTER, WORSE) for c in calls)
    # Measured with these seeds: 3 of 200 A/A validations (1.5%) call some shape changed.
    assert changes <= 4, calls


def test_a_planted_three_percent_slowdown_on_one_shape_is_found() -> None:
    found = 0
    for seed in range(300, 400):
        judgement = judge(pairs(seed, 8, {"s4096": -0.03}))
        found += judgement.shapes["s4096"].call == WORSE  # type: ignore[attr-defined]
    assert found >= 95  # >= 95% of 100 trials (98 with these seeds)


def test_a_real_gain_is_accepted_and_a_regression_rolled_back() -> None:
    gain = judge(pairs(7, 8, dict.fromkeys(SHAPES, 0.05)))
    verdict = interleaved_verdict(gain, Thresholds())  # type: ignore[arg-type]
    assert verdict.decision == ACCEPTED
    loss = judge(pairs(8, 8, {"s2048": 0.10, "s4096": -0.08}))
    verdict = interleaved_verdict(loss, Thresholds())  # type: ignore[arg-type]
    assert verdict.decision == ROLLED_BACK


def test_inconclusive_is_never_accepted() -> None:
    verdict = interleaved_verdict(judge(pairs(9, 2, dict.fromkeys(SHAPES, 0.02))), Thresholds())  # type: ignore[arg-type]
    assert verdict.decision == ROLLED_BACK


@pytest.mark.parametrize(
    ("values", "call"),
    [
        ([0.05, 0.06, 0.05, 0.055], BETTER),
        ([-0.05, -0.06, -0.05], WORSE),
        ([0.001, -0.002, 0.0, 0.001], NO_CHANGE),
    ],
)
def test_estimate_calls(values: list[float], call: str) -> None:
    assert estimate(values, floor=0.01, confidence=0.99).call == call


def test_a_steady_difference_between_two_processes_raises_the_floor() -> None:
    # A/A quads whose spread is tiny but whose mean is 0.7% off: the floor covers twice that.
    steady = [Pair({"s": 100.0}, {"s": 100.7 * (1 + 0.0005 * (-1) ** k)}) for k in range(12)]
    floor = calibrate_floors([steady], ["s"], min_effect_pct=0.5)["s"]
    assert 0.0139 < floor < 0.0141
    centred = [Pair({"s": 100.0}, {"s": 100.0 * (1 + 0.0005 * (-1) ** k)}) for k in range(12)]
    assert calibrate_floors([centred], ["s"], min_effect_pct=0.5)["s"] == 0.005


def test_the_floor_covers_the_largest_difference_any_pair_of_processes_drew() -> None:
    # Three pairs of processes, each steady within itself (quads 0.05% apart) but drawn apart
    # by -0.3%, +1.5% and +0.4%: the floor covers twice the worst of them, and the spread within
    # a pair is not inflated by the differences between pairs.
    def group(offset: float) -> list[Pair]:
        return [
            Pair({"s": 100.0}, {"s": 100.0 * (1 + offset) * (1 + 0.0005 * (-1) ** k)})
            for k in range(4)
        ]

    groups = [group(-0.003), group(0.015), group(0.004)]
    floor = calibrate_floors(groups, ["s"], min_effect_pct=0.5)["s"]
    assert 0.0300 < floor < 0.0304
    biases = group_biases(groups, ["s"])["s"]
    assert [round(b, 2) for b in biases] == [-0.3, 1.5, 0.4]
    # within-pair spread alone: the three groups centred
    centred = calibrate_floors([group(0.0)] * 3, ["s"], min_effect_pct=0.01)["s"]
    assert 0.0004 < centred < 0.0007


def _offset_group(offset: float, n: int = 4) -> list[Pair]:
    """One pair of processes: B steadily OFFSET from A, quads 0.05% apart."""
    return [
        Pair({"s": 100.0}, {"s": 100.0 * (1 + offset) * (1 + 0.0005 * (-1) ** k)}) for k in range(n)
    ]


def test_two_pairs_of_processes_suffice_when_their_offsets_are_well_inside_the_floor() -> None:
    # Offsets of +0.05% and -0.04% against a 1% floor: the 90% bound on the offsets' sd is
    # ~0.14%, 2.576 times it ~0.36%, inside the floor: no third pair of processes.
    groups = [_offset_group(0.0005), _offset_group(-0.0004)]
    assert residue_settled(groups, ["s"], min_effect_pct=1.0)
    # one pair alone never settles it: one draw says nothing of the next
    assert not residue_settled(groups[:1], ["s"], min_effect_pct=1.0)


def test_a_third_pair_is_started_when_the_offsets_reach_into_the_floor() -> None:
    # +0.3% and -0.2%: the bound (~0.79%) times 2.576 passes the 1% floor, though both offsets
    # are inside it: two draws cannot rule out a larger one.
    groups = [_offset_group(0.003), _offset_group(-0.002)]
    assert not residue_settled(groups, ["s"], min_effect_pct=1.0)
    # the same offsets under a 5% floor are well inside it
    assert residue_settled(groups, ["s"], min_effect_pct=5.0)
    # every shape must be settled: a quiet shape does not hide a restless one
    quiet = [_offset_group(0.0), _offset_group(0.0)]
    both = [
        [
            Pair({"q": p.a["s"], "s": r.a["s"]}, {"q": p.b["s"], "s": r.b["s"]})
            for p, r in zip(qg, g, strict=True)
        ]
        for qg, g in zip(quiet, groups, strict=True)
    ]
    assert residue_settled(both, ["q"], min_effect_pct=1.0)
    assert not residue_settled(both, ["q", "s"], min_effect_pct=1.0)


def sequential(seed: int, shift: dict[str, float]) -> tuple[object, int]:
    """A validation as kgit samples it: the judgement after each pair from the minimum on, until
    settled or the maximum (Interleaved's defaults); the last judgement and its pair count."""
    settings = Interleaved()
    stream = pairs(seed, settings.max_quads, shift)
    for n in range(settings.min_quads, settings.max_quads + 1):
        judgement = judge(stream[:n])
        if judgement.settled:  # type: ignore[attr-defined]
            break
    return judgement, n


def test_a_gain_ruled_out_settles_a_slowdown_among_unchanged_shapes_early() -> None:
    # One shape of five 3% slower: the aggregate moves -0.6%, between "no change" and "worse"
    # for as many pairs as the budget holds; once its interval tops out under the floor, no
    # gain is left to find, and the verdict is a rollback that names the slower shape.
    stops, found = [], 0
    for seed in range(300, 340):
        judgement, n = sequential(seed, {"s4096": -0.03})
        verdict = interleaved_verdict(judgement, Thresholds())  # type: ignore[arg-type]
        assert verdict.decision == ROLLED_BACK
        found += judgement.shapes["s4096"].call == WORSE  # type: ignore[attr-defined]
        stops.append(n)
    assert found >= 38  # the slowdown is still called on its shape (39 of 40 with these seeds)
    assert sorted(stops)[len(stops) // 2] == Interleaved().min_quads, stops
    ruled_out = judge(pairs(301, 8, {"s4096": -0.03}))
    assert ruled_out.aggregate.gain_ruled_out  # type: ignore[attr-defined]
    why = interleaved_verdict(ruled_out, Thresholds()).reasons  # type: ignore[arg-type]
    assert any(r.startswith("no gain past the floor") for r in why), why


def test_ruling_a_gain_out_does_not_cost_real_gains_nor_add_false_claims() -> None:
    accepted = sum(
        interleaved_verdict(  # type: ignore[arg-type]
            sequential(seed, dict.fromkeys(SHAPES, 0.03))[0], Thresholds()
        ).decision
        == ACCEPTED
        for seed in range(400, 440)
    )
    assert accepted >= 38  # 3% faster on every shape (40 of 40 with these seeds)
    claims = 0
    for seed in range(500, 540):
        judgement, _ = sequential(seed, {})
        calls = [judgement.aggregate.call] + [  # type: ignore[attr-defined]
            e.call
            for e in judgement.shapes.values()  # type: ignore[attr-defined]
        ]
        claims += any(c in (BETTER, WORSE) for c in calls)
    assert claims <= 2  # A/A: a change claimed in 0 of 40 with these seeds
