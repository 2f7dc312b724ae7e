"""Does where a kernel's buffers sit in device memory change its time? The question behind a
steady 1-2% difference between two processes of one memory-bound kernel (RMSNorm 32768x8192).

    python3 bench/placement_study.py --processes 4 --placements 6 --rounds 24

Each process (run one after another) prepares PLACEMENTS copies of the measuring unit kgit's
workers replay: a pool of input sets and a CUDA graph of one forward per set, each copy built
after a padding allocation of a random size (placement 0: no padding, as a worker does today).
It then times rounds of short blocks, every placement once per round in a shuffled order, so
that the clock's drift falls on all placements alike. Per placement: its mean time relative to
its process's mean over all placements. Across processes: the mean of placement 0.

If placements within one process differ as much as processes do, the between-process difference
is placement, and a worker that rebuilds its unit at a new placement for each quad turns it into
noise that the pair statistics see. The table is printed last; rows go to $OUT/placement.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "kgit" / "examples" / "rmsnorm"
PAD_UNIT = 2 * 1024**2


def child(args: argparse.Namespace) -> dict[str, object]:
    sys.path.insert(0, str(EXAMPLE))
    import rmsnorm_kernel
    import torch

    rng = random.Random(args.seed)
    m, n = args.m, args.n
    device = torch.device("cuda")

    def make() -> list[torch.Tensor]:
        return [
            torch.randn(m, n, device=device, dtype=torch.bfloat16),
            1.0 + 0.1 * torch.randn(n, device=device, dtype=torch.bfloat16),
        ]

    def fn(inputs: list[torch.Tensor]) -> object:
        return rmsnorm_kernel.rmsnorm(*inputs)

    units = []
    with torch.no_grad():
        for index in range(args.placements):
            pad = torch.empty(
                0 if index == 0 else rng.randrange(1, args.max_pad_mb // 2) * PAD_UNIT,
                dtype=torch.uint8,
                device=device,
            )
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                pool = [make() for _ in range(2)]
                for inputs in pool:
                    fn(inputs)
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream):
                for inputs in pool:
                    fn(inputs)
            units.append((pad, pool, graph, stream))
        # warm the clocks and estimate one replay
        for _ in range(50):
            units[0][2].replay()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(10):
            units[0][2].replay()
        end.record()
        end.synchronize()
        reps = max(1, round(args.block_ms / (start.elapsed_time(end) / 10)))
        times: list[list[float]] = [[] for _ in units]
        order = list(range(len(units)))
        for _ in range(args.rounds):
            rng.shuffle(order)
            for index in order:
                graph = units[index][2]
                start.record()
                for _ in range(reps):
                    graph.replay()
                end.record()
                end.synchronize()
                times[index].append(start.elapsed_time(end) / (reps * 2) * 1e3)  # us per call
    pads = [u[0].numel() // PAD_UNIT * 2 for u in units]
    return {"pads_mb": pads, "times_us": times, "reps": reps}


def summarize(runs: list[dict[str, object]]) -> list[dict[str, object]]:
    rows = []
    for p, run in enumerate(runs):
        times = run["times_us"]
        means = [statistics.fmean(t) for t in times]  # type: ignore[union-attr]
        center = statistics.fmean(means)
        # per-block noise: sd of a placement's blocks, relative, pooled
        noise = statistics.fmean(statistics.stdev(t) / statistics.fmean(t) for t in times)  # type: ignore[union-attr]
        rel = [(mu / center - 1) * 100 for mu in means]
        rows.append(
            {
                "process": p,
                "mean_us": center,
                "placement0_us": means[0],
                "placement_rel_pct": [round(r, 3) for r in rel],
                "placement_sd_pct": statistics.stdev(rel),
                "block_noise_pct": noise * 100,
                "se_of_placement_mean_pct": noise * 100 / math.sqrt(len(times[0])),  # type: ignore[arg-type]
                "pads_mb": run["pads_mb"],
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--placements", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=24)
    parser.add_argument("--block-ms", type=float, default=25.0)
    parser.add_argument("--m", type=int, default=32768)
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--max-pad-mb", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return 0
    runs = []
    for p in range(args.processes):
        argv = [sys.executable, __file__, "--child", "--seed", str(1000 + p)]
        for key in ("placements", "rounds", "block_ms", "m", "n", "max_pad_mb"):
            argv += [f"--{key.replace('_', '-')}", str(getattr(args, key))]
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
        print(f"process {p} done", flush=True)
    rows = summarize(runs)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "placement.json").write_text(
            json.dumps({"rows": rows, "runs": runs})
        )
    p0 = [r["placement0_us"] for r in rows]
    center = statistics.fmean(p0)
    print(
        f"\nRMSNorm {args.m}x{args.n} bf16 forward, {args.block_ms:g} ms blocks, {args.rounds} rounds"
    )
    print(
        "process | mean us | placement 0 vs process mean | placements' spread (sd) | block noise | placements rel %"
    )
    for r in rows:
        print(
            f"{r['process']} | {r['mean_us']:.2f} | {(r['placement0_us'] / r['mean_us'] - 1) * 100:+.3f}% | "
            f"{r['placement_sd_pct']:.3f}% | {r['block_noise_pct']:.3f}% | {r['placement_rel_pct']}"
        )
    print(
        f"placement 0 across processes: sd {statistics.stdev(p0) / center * 100:.3f}% "
        f"(range {(max(p0) - min(p0)) / center * 100:.3f}%)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
