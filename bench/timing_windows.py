"""What makes kgit's GPU timing move from one run to the next: warm-up, window, L2 flush, pool.

For each shape of the example GEMM (bf16 forward), variants of `time_fn` (warm-up before the
samples, device time the samples span, no L2 flush, one input set reused for every call instead
of a fresh one each), the seed harness's loop and `do_bench` are each run ROUNDS times, in turns
(the order rotates each round, and one uncounted round comes first), so that a drift of the
chip's clocks falls on every timer alike. Reports per timer the run-to-run spread
((max - min) / median), the standard deviation of the runs in percent of their mean, the SM
clock and board power read through NVML after each run when it is there, and the correlation of
a run's time with that clock. Prints a table last; writes every number to
$OUT/timing_windows.json when OUT is set.

    PYTHONPATH=. python3 bench/timing_windows.py
    PYTHONPATH=. python3 bench/timing_windows.py --shapes 4096x4096x4096 --rounds 10 \\
        --variants default,flush,same
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import triton
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kgit" / "examples" / "gemm"))
import gemm_kernel
from gpu_check import (
    Pair,
    in_turns,
    kernel,
    pair,
    parse_shapes,
    seed_loop_ms,
    spread,
    std_pct,
)

from kgit.measure import time_fn

SHAPES = [(1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096)]
ROUNDS = 5
# name: (label, time_fn keyword arguments, reuse one input set for every timed call)
VARIANTS: dict[str, tuple[str, dict[str, Any], bool]] = {
    "default": ("kgit", {}, False),
    "warm50": ("kgit warm 50 ms", {"warmup_ms": 50.0}, False),
    "warm1000_window300": ("kgit warm 1000 ms, window 300 ms", {"warmup_ms": 1000.0, "min_time_ms": 300.0}, False),
    "window300": ("kgit window 300 ms", {"min_time_ms": 300.0}, False),
    "flush": ("kgit, no L2 flush", {"flush_l2": False}, False),
    "same": ("kgit, one input set", {}, True),
}  # fmt: skip


def _nvml() -> Callable[[], tuple[float, float]] | None:
    try:
        import pynvml
    except ImportError:
        return None
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())

    def read() -> tuple[float, float]:
        clock = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
        return float(clock), pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0

    return read


def timers(m: int, n: int, k: int, variants: list[str]) -> dict[str, Callable[[], float]]:
    a, b = pair(m, n, k)

    def same() -> Pair:
        return a, b

    def fresh() -> Pair:
        return pair(m, n, k)

    def kgit(make: Callable[[], Pair], options: dict[str, Any]) -> Callable[[], float]:
        return lambda: time_fn(make, kernel, **options).median_ms

    found: dict[str, Callable[[], float]] = {}
    for key in variants:
        label, options, reuse = VARIANTS[key]
        found[label] = kgit(same if reuse else fresh, options)
    found["seed loop"] = lambda: seed_loop_ms(lambda: gemm_kernel.mm(a, b))
    found["do_bench"] = lambda: triton.testing.do_bench(
        lambda: gemm_kernel.mm(a, b), return_mode="median"
    )
    return found


def correlation(xs: list[float], ys: list[float]) -> float:
    if len(set(xs)) < 2 or len(set(ys)) < 2:
        return float("nan")
    return statistics.correlation(xs, ys)


def study_shape(
    m: int,
    n: int,
    k: int,
    rounds: int,
    variants: list[str],
    nvml: Callable[[], tuple[float, float]] | None,
) -> dict[str, Any]:
    named = timers(m, n, k, variants)
    names = list(named)
    runs: dict[str, list[float]] = {name: [] for name in names}
    clocks: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    gemm_kernel.mm(*pair(m, n, k))
    for name, counted in in_turns(names, rounds):
        ms = named[name]()
        state = nvml() if nvml is not None else None
        if counted:
            runs[name].append(ms)
            if state is not None:
                clocks[name].append(state)
    result: dict[str, Any] = {"shape": f"{m}x{n}x{k}", "timers": {}}
    for name in names:
        values = runs[name]
        entry: dict[str, Any] = {
            "ms_runs": values,
            "median_ms": statistics.median(values),
            "spread_pct": spread(values),
            "std_pct": std_pct(values),
        }
        if clocks[name]:
            entry["sm_mhz_runs"] = [c for c, _ in clocks[name]]
            entry["watts_runs"] = [w for _, w in clocks[name]]
            entry["sm_mhz"] = statistics.fmean(entry["sm_mhz_runs"])
            entry["watts"] = statistics.fmean(entry["watts_runs"])
            entry["ms_vs_mhz_r"] = correlation(values, entry["sm_mhz_runs"])
        result["timers"][name] = entry
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="runs of each timer per shape")
    parser.add_argument("--shapes", type=parse_shapes, default=SHAPES, help="MxNxK,MxNxK,...")
    parser.add_argument(
        "--variants",
        default="default,warm50,window300,warm1000_window300",
        help=f"kgit variants, comma-separated, of: {', '.join(VARIANTS)}",
    )
    args = parser.parse_args(argv)
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    if args.rounds < 2:
        parser.error("--rounds must be at least 2")
    if not torch.cuda.is_available():
        print("timing_windows needs a CUDA GPU")
        return 2
    nvml = _nvml()
    results = []
    for m, n, k in args.shapes:
        start = time.perf_counter()
        results.append(study_shape(m, n, k, args.rounds, variants, nvml))
        print(f"{m}x{n}x{k}: done in {time.perf_counter() - start:.1f} s", flush=True)
        if os.environ.get("OUT"):
            Path(os.environ["OUT"], "timing_windows.json").write_text(
                json.dumps({"device": torch.cuda.get_device_name(), "shapes": results}, indent=1)
            )
    columns = ["median_ms", "spread_pct", "std_pct", "sm_mhz", "watts", "ms_vs_mhz_r"]
    rows = [
        [r["shape"], name, *(t.get(key, float("nan")) for key in columns)]
        for r in results
        for name, t in r["timers"].items()
    ]
    headers = ["shape", "timer", "median ms", "spread %", "std %", "SM MHz", "W", "r(ms, MHz)"]
    print(tabulate(rows, headers=headers, tablefmt="github", floatfmt=".3f"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
