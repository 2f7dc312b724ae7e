"""How often each decision policy is fooled by noise, and how well it finds a real slowdown.

Two steps, so that the GPU time is spent on measuring only:

  python3 bench/noise_study.py measure --seconds 330 --out passes.json    (on the GPU)
  python3 bench/noise_study.py analyze passes.json                        (anywhere)

`measure` times the example GEMM (forward + backward, bf16, five shapes 256^3..8192^3) with
kgit.measure, pass after pass, in a fixed interleaved schedule of four variants:
  A    the kernel (the best line)        A2   the same kernel again (an A/A candidate)
  S3   A plus ~3% extra work on 4096^3   S10  A plus ~10% extra work on 4096^3
The extra work is a second GEMM over a K-slice of the same operands (3.1% / 9.4% of K) into a
scratch buffer, in forward and backward alike: proportional to the kernel's time, not a sleep.
A pass is one harness pass over the shapes inside one process (no process start-up: the study
isolates the decision rule; the timer is the same for both policies).

`analyze` replays kgit's own decision functions over the recorded passes, in measured order:
  seed         each candidate pass against an earlier A pass (the stored best), re-measured with
               the next passes of the same variant when the seed's noise rule asks;
  interleaved  A/B pairs (each candidate pass with its adjacent A pass), sequential from each
               starting pair until kgit's stopping rule settles (4..8 pairs), floors calibrated
               from the first A/A pairs.
It prints, per policy: A/A claims of a change, detection of S3 and S10 on 4096^3, and wall
seconds per validation (sum of the passes it used).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "kgit" / "examples" / "gemm"))

SIZES = [
    (256, 256, 256),
    (1024, 1024, 1024),
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
]
LABELS = [f"{m}x{n}x{k}" for m, n, k in SIZES]
SLOWED = "4096x4096x4096"
EXTRA_K = {"A": 0, "A2": 0, "S3": 128, "S10": 384}  # of K = 4096: 3.1% and 9.4%
SCHEDULE = ["A", "A2", "A", "S3", "A", "S10"]


def measure(seconds: float, out: Path) -> None:
    import gemm_kernel
    import torch

    from kgit.measure.fwdbwd import time_backward, time_forward
    from kgit.measure.gemm import gemm_operands

    def variant_matmul(extra_k: int) -> Any:
        def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            c = gemm_kernel.mm(a, b)
            if extra_k and (a.shape[0], b.shape[1], a.shape[1]) == (4096, 4096, 4096):
                gemm_kernel.mm(a[:, :extra_k], b[:extra_k, :])  # extra work, result dropped
            return c

        class Slowed(torch.autograd.Function):
            @staticmethod
            def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
                ctx.save_for_backward(a, b)
                return mm(a, b)

            @staticmethod
            def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                a, b = ctx.saved_tensors
                return mm(grad, b.t()), mm(a.t(), grad)

        return Slowed.apply

    ops = {name: variant_matmul(k) for name, k in EXTRA_K.items()}
    device = torch.device("cuda")
    passes: list[dict[str, Any]] = []
    start = time.monotonic()
    cycle = 0
    while time.monotonic() - start < seconds:
        order = SCHEDULE if cycle % 2 == 0 else [SCHEDULE[i ^ 1] for i in range(len(SCHEDULE))]
        for variant in order:
            t0 = time.monotonic()
            values = {}
            for (m, n, k), label in zip(SIZES, LABELS, strict=True):
                make = lambda m=m, n=n, k=k: gemm_operands(1, m, n, k, torch.bfloat16, device)  # noqa: E731
                fwd = time_forward(ops[variant], make, repeats=30, warmup_ms=30.0)
                bwd = time_backward(ops[variant], make, repeats=30, warmup_ms=30.0)
                values[label] = 6.0 * m * n * k / ((fwd.median_ms + bwd.median_ms) * 1e-3) / 1e12
            passes.append(
                {
                    "cycle": cycle,
                    "variant": variant,
                    "t": t0 - start,
                    "wall_s": time.monotonic() - t0,
                    "values": values,
                }
            )
        cycle += 1
        print(f"cycle {cycle}: {len(passes)} passes, {time.monotonic() - start:.0f} s", flush=True)
    out.write_text(
        json.dumps(
            {"device": torch.cuda.get_device_name(device), "labels": LABELS, "passes": passes},
            indent=1,
        )
    )


def _pairs(
    passes: list[dict[str, Any]], variant: str
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each pass of VARIANT with the A pass next to it in the schedule (same ABBA slot)."""
    pairs = []
    for i, p in enumerate(passes):
        if p["variant"] != variant:
            continue
        neighbours = [
            q
            for q in (passes[i - 1] if i else None, passes[i + 1] if i + 1 < len(passes) else None)
            if q is not None and q["variant"] == "A" and q["cycle"] == p["cycle"]
        ]
        if neighbours:
            pairs.append((neighbours[0], p))
    return pairs


def analyze(paths: list[Path]) -> None:
    from kgit.judge.scoring import Score
    from kgit.judge.stats import BETTER, WORSE, Pair, calibrate_floors, judge_pairs
    from kgit.judge.verdict import REMEASURE, interleaved_verdict, seed_verdict
    from kgit.records.manifest import Interleaved, Thresholds

    runs = [json.loads(path.read_text()) for path in paths]
    # Cycle 0 compiles and autotunes every variant: its passes are left out. Each file is one
    # device session: pairs and the seed's "earlier best" never cross files.
    sessions = [[p for p in data["passes"] if p["cycle"] > 0] for data in runs]
    labels, device = runs[0]["labels"], runs[0]["device"]
    limits, settings = Thresholds(), Interleaved()
    calibration = _pairs(sessions[0], "A2")[:6]
    floors = calibrate_floors(
        [[Pair(a["values"], b["values"]) for a, b in calibration]], labels, settings.min_effect_pct
    )
    used = {id(b) for _, b in calibration}
    rows = []
    for variant in ("A2", "S3", "S10"):
        per_session = [
            [(a, b) for a, b in _pairs(ps, variant) if id(b) not in used] for ps in sessions
        ]
        every = [pair for pairs in per_session for pair in pairs]
        # Effect actually planted: mean ratio of the slowed shape over all of this variant's pairs.
        effect = statistics.fmean(b["values"][SLOWED] / a["values"][SLOWED] for a, b in every) - 1
        seed = [
            t
            for ps in sessions
            for t in _seed_trials(ps, variant, labels, limits, Score, seed_verdict, REMEASURE)
        ]
        inter = []
        starts = [(pairs, i) for pairs in per_session for i in range(len(pairs))]
        for pairs, start in starts:
            taken: list[Pair] = []
            wall = 0.0
            for a, b in pairs[start : start + settings.max_pairs]:
                taken.append(Pair(a["values"], b["values"]))
                wall += a["wall_s"] + b["wall_s"]
                if len(taken) < settings.min_pairs:
                    continue
                judgement = judge_pairs(taken, labels, floors, settings, limits)
                if judgement.settled:
                    break
            if len(taken) < settings.min_pairs:
                continue
            verdict = interleaved_verdict(judgement, limits)
            claims = any(
                e.call in (BETTER, WORSE) for e in [judgement.aggregate, *judgement.shapes.values()]
            )
            found = judgement.shapes[SLOWED].call == WORSE and not verdict.accepts
            inter.append(
                {
                    "claims": claims,
                    "found": found,
                    "accepts": verdict.accepts,
                    "pairs": len(taken),
                    "wall": wall,
                }
            )
        rows.append((variant, effect, seed, inter))
    _print(device, floors, rows)


def _seed_trials(passes, variant, labels, limits, Score, seed_verdict, REMEASURE):  # type: ignore[no-untyped-def]
    """Seed policy: a candidate pass against an A pass three cycles earlier (the stored best)."""
    a_by_cycle = {p["cycle"]: p for p in passes if p["variant"] == "A"}
    mine = [p for p in passes if p["variant"] == variant]
    trials = []
    for i, p in enumerate(mine):
        best = a_by_cycle.get(p["cycle"] - 3)
        if best is None:
            continue
        runs, wall = [], 0.0
        for q in mine[i : i + limits.noise_min_runs]:
            runs.append(Score(q["values"], [], 1.0))
            wall += q["wall_s"]
            verdict = seed_verdict(runs, best["values"], limits)
            if verdict.decision != REMEASURE:
                break
        if verdict.decision == REMEASURE:
            continue
        down = {s: d for s, d in verdict.shape_deltas.items() if d <= -limits.core_regression_pct}
        trials.append(
            {
                "claims": verdict.accepts or bool(down),
                "found": SLOWED in " ".join(verdict.reasons) and not verdict.accepts,
                "found2": verdict.shape_deltas.get(SLOWED, 0) <= -2.0,
                "accepts": verdict.accepts,
                "wall": wall,
                "runs": len(runs),
            }
        )
    return trials


def _rate(items: list[dict[str, Any]], key: str) -> str:
    return f"{100 * sum(i[key] for i in items) / len(items):.1f}% of {len(items)}" if items else "-"


def _print(device: str, floors: dict[str, float], rows: list[Any]) -> None:
    print(f"device: {device}")
    print(
        "noise floors (A/A, per pair): "
        + ", ".join(f"{k} {v * 100:.2f}%" for k, v in floors.items())
    )
    print(
        f"\n| candidate | planted on {SLOWED} | policy | claims a change | accepts | "
        "finds the slowdown | passes/validation | wall s/validation |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for variant, effect, seed, inter in rows:
        for name, trials, passes_key in (("seed", seed, "runs"), ("interleaved", inter, "pairs")):
            if not trials:
                continue
            per = statistics.fmean(t[passes_key] for t in trials) * (
                2 if name == "interleaved" else 1
            )
            wall = statistics.fmean(t["wall"] for t in trials)
            found = _rate(trials, "found") if variant != "A2" else "n/a"
            print(
                f"| {variant} | {effect * 100:+.2f}% | {name} | {_rate(trials, 'claims')} | "
                f"{_rate(trials, 'accepts')} | {found} | {per:.1f} | {wall:.1f} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--seconds", type=float, default=300.0)
    m.add_argument("--out", type=Path, required=True)
    a = sub.add_parser("analyze")
    a.add_argument("passes", type=Path, nargs="+")
    args = parser.parse_args()
    if args.step == "measure":
        measure(args.seconds, args.out)
    else:
        analyze(args.passes)


if __name__ == "__main__":
    main()
