"""One-call GPU check of kgit's timing against triton's do_bench, cuBLAS and the seed's loop.

For each shape of the example GEMM (bf16 forward): kgit's `time_fn` (each run a fresh input pool
and its own warm-up), `triton.testing.do_bench` median, and the seed harness's loop (1 warm-up
repeat + 3 repeats × 50 calls between two synchronizes), RUNS runs each, in turns with the order
rotating (with a number of runs that is not a multiple of three, some timer goes first more
often); then torch.matmul (cuBLAS) through kgit's timing and kgit's CUDA-graph mode.

Run-to-run spread is (max - min) / median of a timer's runs. The table gives Levene's test
(scipy) of kgit's runs against the seed loop's, each divided by its mean (p small: their spreads
differ); with more than 5 runs, also the mean spread of consecutive groups of 5.

Each shape starts with one round of the three timers that is not counted: the first run of
the order (always kgit's) otherwise met the chip as the autotuner or the previous shape left it.
In two H200 checks that run alone read 2-5% faster than kgit's others at 4096³ and 8192³ (the
chip heating over its first seconds of load), and one second of the kernel ahead of it did not
take that away.

`--process-per-run` starts each run as its own process, as a campaign runs its bench command:
the process imports, checks the kernel once against a float32 reference and times once. The
autotuner's pick is cached on disk (TRITON_CACHE_AUTOTUNING) so that every process times the
same kernel: re-tuned in each process, the pick may change from one process to the next (in one
H200 check without the cache, kgit's runs at 4096x14336x4096 fell in two clusters 3% apart).
In-process runs meet a chip the previous timer left hot.

Prints a table last; writes every number to $OUT/gpu_check.json (gpu_check_processes.json with
--process-per-run) when OUT is set.

    PYTHONPATH=. python3 bench/gpu_check.py
    PYTHONPATH=. python3 bench/gpu_check.py --runs 15 --shapes 4096x14336x4096 --process-per-run
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
import triton
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kgit" / "examples" / "gemm"))
import gemm_kernel

from kgit.measure import gemm_flops, snr_db, tflops, time_fn

SHAPES = [
    (256, 256, 256),
    (1024, 1024, 1024),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (4096, 14336, 4096),
]
RUNS = 5
TIMERS = ("kgit", "seed", "do_bench")
Pair = tuple[torch.Tensor, torch.Tensor]
Shape = tuple[int, int, int]


def pair(m: int, n: int, k: int) -> Pair:
    a = (torch.randn(m, k, device="cuda") / k**0.5).to(torch.bfloat16)
    return a, torch.randn(k, n, device="cuda").to(torch.bfloat16)


def spread(values: list[float]) -> float:
    return 100.0 * (max(values) - min(values)) / statistics.median(values)


def spread_of_fives(values: list[float]) -> float:
    """Mean spread of consecutive groups of 5 runs (NaN under 5): a 5-run spread, from more runs."""
    groups = [values[i : i + 5] for i in range(0, len(values) - 4, 5)]
    return statistics.fmean(spread(group) for group in groups) if groups else float("nan")


def std_pct(values: list[float]) -> float:
    return 100.0 * statistics.stdev(values) / statistics.fmean(values)


def levene_p(a: list[float], b: list[float]) -> float:
    from scipy.stats import levene

    mean_a, mean_b = statistics.fmean(a), statistics.fmean(b)
    return float(levene([x / mean_a for x in a], [x / mean_b for x in b]).pvalue)


def seed_loop_ms(fn: Callable[[], object]) -> float:
    """The seed harness: per repeat, 50 calls between two synchronizes; 1 warm-up + 3 repeats."""
    per_call = []
    for repeat in range(4):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(50):
            fn()
        torch.cuda.synchronize()
        if repeat > 0:
            per_call.append((time.perf_counter() - start) * 1e3 / 50)
    return statistics.fmean(per_call)


def kernel(p: Pair) -> torch.Tensor:
    return gemm_kernel.mm(p[0], p[1])


def timer(name: str, m: int, n: int, k: int, a: torch.Tensor, b: torch.Tensor) -> dict[str, Any]:
    """One run of one timer: its time per call in ms (and kgit's host-bound sample count)."""
    if name == "kgit":
        timing = time_fn(lambda: pair(m, n, k), kernel)
        return {"ms": timing.median_ms, "host_bound": timing.host_bound_samples}
    if name == "seed":
        return {"ms": seed_loop_ms(lambda: gemm_kernel.mm(a, b))}
    if name == "do_bench":
        return {"ms": triton.testing.do_bench(lambda: gemm_kernel.mm(a, b), return_mode="median")}
    raise ValueError(f"no timer {name!r}")


def in_turns(names: Sequence[str], runs: int) -> Iterator[tuple[str, bool]]:
    """(timer, counted) in the order the timers take turns: the order rotates each run, and one
    uncounted run of every timer comes first."""
    for run in range(-1, runs):
        shift = run % len(names)
        for name in [*names[shift:], *names[:shift]]:
            yield name, run >= 0


def in_process_runs(m: int, n: int, k: int, runs: int) -> dict[str, list[dict[str, Any]]]:
    a, b = pair(m, n, k)
    found: dict[str, list[dict[str, Any]]] = {name: [] for name in TIMERS}
    for name, counted in in_turns(TIMERS, runs):
        result = timer(name, m, n, k, a, b)
        if counted:
            found[name].append(result)
    return found


def process_runs(m: int, n: int, k: int, runs: int) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {name: [] for name in TIMERS}
    for name, counted in in_turns(TIMERS, runs):
        command = [sys.executable, __file__, "--one", name, "--shapes", f"{m}x{n}x{k}"]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{name} run failed:\n{done.stderr[-2000:]}")
        if counted:
            found[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    return found


def one_run(name: str, m: int, n: int, k: int) -> int:
    a, b = pair(m, n, k)
    snr_db(gemm_kernel.mm(a, b), a.float() @ b.float())  # a harness checks before it times
    print(json.dumps(timer(name, m, n, k, a, b)))
    return 0


def check_shape(m: int, n: int, k: int, runs: int, per_process: bool) -> dict[str, Any]:
    flop = gemm_flops(m, n, k)
    a, b = pair(m, n, k)
    snr = snr_db(gemm_kernel.mm(a, b), a.float() @ b.float())
    found = (process_runs if per_process else in_process_runs)(m, n, k, runs)
    ms = {name: [r["ms"] for r in found[name]] for name in TIMERS}
    graph_ms = time_fn(lambda: pair(m, n, k), kernel, cuda_graph=True).median_ms
    cublas_ms = time_fn(lambda: pair(m, n, k), lambda p: torch.matmul(p[0], p[1])).median_ms
    kgit, do_bench = statistics.median(ms["kgit"]), statistics.median(ms["do_bench"])
    result: dict[str, Any] = {
        "shape": f"{m}x{n}x{k}",
        "snr_db": snr,
        "kgit_host_bound_samples": [r["host_bound"] for r in found["kgit"]],
        "kgit_vs_do_bench_pct": 100.0 * (do_bench - kgit) / do_bench,
        "graph_tflops": tflops(flop, graph_ms),
        "cublas_tflops": tflops(flop, cublas_ms),
        "kgit_vs_seed_levene_p": levene_p(ms["kgit"], ms["seed"]),
    }
    for name in TIMERS:
        result[f"{name}_ms_runs"] = ms[name]
        result[f"{name}_tflops"] = tflops(flop, statistics.median(ms[name]))
        result[f"{name}_spread_pct"] = spread(ms[name])
        result[f"{name}_spread5_pct"] = spread_of_fives(ms[name])
        result[f"{name}_std_pct"] = std_pct(ms[name])
    return result


def parse_shapes(text: str) -> list[Shape]:
    shapes = []
    for item in text.split(","):
        m, n, k = (int(x) for x in item.lower().split("x"))
        shapes.append((m, n, k))
    return shapes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=RUNS, help="runs of each timer per shape")
    parser.add_argument("--shapes", type=parse_shapes, default=SHAPES, help="MxNxK,MxNxK,...")
    parser.add_argument("--process-per-run", action="store_true", help="each run its own process")
    parser.add_argument("--one", choices=TIMERS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("gpu_check needs a CUDA GPU")
        return 2
    if args.one:
        return one_run(args.one, *args.shapes[0])
    if args.runs < 2:
        parser.error("--runs must be at least 2")
    mode = "process per run" if args.process_per_run else "in process"
    if args.process_per_run:
        os.environ["TRITON_CACHE_AUTOTUNING"] = "1"  # read at the first launch; children inherit
    results = []
    for m, n, k in args.shapes:
        start = time.perf_counter()
        results.append(check_shape(m, n, k, args.runs, args.process_per_run))
        print(f"{m}x{n}x{k}: done in {time.perf_counter() - start:.1f} s", flush=True)
    meta = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "runs": args.runs,
        "mode": mode,
    }
    if os.environ.get("OUT"):
        name = "gpu_check_processes.json" if args.process_per_run else "gpu_check.json"
        Path(os.environ["OUT"], name).write_text(json.dumps({**meta, "shapes": results}, indent=1))
    headers = ["shape", "SNR dB", "kgit TF", "do_bench TF", "kgit vs db %", "graph TF", "cuBLAS TF",
               "seed TF", "kgit spread %", "seed spread %", "do_bench spread %", "kgit std %",
               "seed std %", "Levene p", "host-bound"]  # fmt: skip
    keys = ["shape", "snr_db", "kgit_tflops", "do_bench_tflops", "kgit_vs_do_bench_pct", "graph_tflops",
            "cublas_tflops", "seed_tflops", "kgit_spread_pct", "seed_spread_pct", "do_bench_spread_pct",
            "kgit_std_pct", "seed_std_pct", "kgit_vs_seed_levene_p"]  # fmt: skip
    rows = [[r[key] for key in keys] + [sum(r["kgit_host_bound_samples"])] for r in results]
    print(", ".join(f"{key}: {value}" for key, value in meta.items()))
    print(tabulate(rows, headers=headers, tablefmt="github", floatfmt=".2f"))
    if args.runs > 5:
        spread5 = [[r["shape"], *(r[f"{name}_spread5_pct"] for name in TIMERS)] for r in results]
        print("mean spread of 5 consecutive runs, %:")
        print(tabulate(spread5, headers=["shape", *TIMERS], tablefmt="github", floatfmt=".2f"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
