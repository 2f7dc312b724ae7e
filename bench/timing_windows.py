"""Which warm-up and sampling window make kgit's GPU timing steady from one run to the next.

For each shape of the example GEMM (bf16 forward), several settings of `time_fn` (warm-up before
the samples, device time the samples span), the seed harness's loop and `do_bench` are each run
ROUNDS times, in turns (the order rotates each round), so that a drift of the chip's clocks over
the minutes of the check falls on every timer alike. Reports per timer the run-to-run spread
((max - min) / median), the standard deviation of the runs in percent of their mean, and the
mean SM clock and power read through NVML after each run when it is there. Prints a table last;
writes every number to $OUT/timing_windows.json when OUT is set.

    PYTHONPATH=. python3 bench/timing_windows.py
"""

from __future__ import annotations

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
from gpu_check import Pair, pair, seed_loop_ms, spread

from kgit.measure import time_fn

SHAPES = [(1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096)]
ROUNDS = 5
# (warm-up ms before the samples, device time the samples span in ms)
SETTINGS = [(50.0, 100.0), (250.0, 100.0), (250.0, 300.0), (1000.0, 300.0)]


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


def timers(m: int, n: int, k: int) -> dict[str, Callable[[], float]]:
    a, b = pair(m, n, k)

    def kernel(p: Pair) -> torch.Tensor:
        return gemm_kernel.mm(p[0], p[1])

    found: dict[str, Callable[[], float]] = {}
    for warm, window in SETTINGS:
        found[f"kgit w{warm:.0f} t{window:.0f}"] = lambda w=warm, t=window: (
            time_fn(lambda: pair(m, n, k), kernel, warmup_ms=w, min_time_ms=t).median_ms
        )
    found["seed loop"] = lambda: seed_loop_ms(lambda: gemm_kernel.mm(a, b))
    found["do_bench"] = lambda: triton.testing.do_bench(
        lambda: gemm_kernel.mm(a, b), return_mode="median"
    )
    return found


def study_shape(
    m: int, n: int, k: int, nvml: Callable[[], tuple[float, float]] | None
) -> dict[str, Any]:
    named = timers(m, n, k)
    names = list(named)
    runs: dict[str, list[float]] = {name: [] for name in names}
    clocks: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    gemm_kernel.mm(*pair(m, n, k))
    for round_ in range(ROUNDS):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            runs[name].append(named[name]())
            if nvml is not None:
                clocks[name].append(nvml())
    result: dict[str, Any] = {"shape": f"{m}x{n}x{k}", "timers": {}}
    for name in names:
        values = runs[name]
        entry: dict[str, Any] = {
            "ms_runs": values,
            "median_ms": statistics.median(values),
            "spread_pct": spread(values),
            "std_pct": 100.0 * statistics.stdev(values) / statistics.fmean(values),
        }
        if clocks[name]:
            entry["sm_mhz"] = statistics.fmean(c for c, _ in clocks[name])
            entry["watts"] = statistics.fmean(w for _, w in clocks[name])
        result["timers"][name] = entry
    return result


def main() -> int:
    if not torch.cuda.is_available():
        print("timing_windows needs a CUDA GPU")
        return 2
    nvml = _nvml()
    results = []
    for m, n, k in SHAPES:
        start = time.perf_counter()
        results.append(study_shape(m, n, k, nvml))
        print(f"{m}x{n}x{k}: done in {time.perf_counter() - start:.1f} s", flush=True)
        if os.environ.get("OUT"):
            Path(os.environ["OUT"], "timing_windows.json").write_text(
                json.dumps({"device": torch.cuda.get_device_name(), "shapes": results}, indent=1)
            )
    columns = ["median_ms", "spread_pct", "std_pct", "sm_mhz", "watts"]
    rows = [
        [r["shape"], name, *(t.get(key, float("nan")) for key in columns)]
        for r in results
        for name, t in r["timers"].items()
    ]
    headers = ["shape", "timer", "median ms", "spread %", "std %", "SM MHz", "W"]
    print(tabulate(rows, headers=headers, tablefmt="github", floatfmt=".3f"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
