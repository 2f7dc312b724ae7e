"""One-call GPU check of kgit's timing against triton's do_bench, cuBLAS and the seed's loop.

For each shape of the example GEMM (bf16 forward): kgit's `time_fn` (5 independent runs, each a
fresh input pool and its own warm-up), `triton.testing.do_bench` median (5 runs), the seed
harness's loop (1 warm-up repeat + 3 repeats × 50 calls between two synchronizes, 5 runs), the
three in turns; then torch.matmul (cuBLAS) through kgit's timing and kgit's CUDA-graph mode. Prints a table last; writes every
number to $OUT/gpu_check.json when OUT is set.

    PYTHONPATH=. python3 bench/gpu_check.py
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
Pair = tuple[torch.Tensor, torch.Tensor]


def pair(m: int, n: int, k: int) -> Pair:
    a = (torch.randn(m, k, device="cuda") / k**0.5).to(torch.bfloat16)
    return a, torch.randn(k, n, device="cuda").to(torch.bfloat16)


def spread(values: list[float]) -> float:
    return 100.0 * (max(values) - min(values)) / statistics.median(values)


def std_pct(values: list[float]) -> float:
    return 100.0 * statistics.stdev(values) / statistics.fmean(values)


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


def check_shape(m: int, n: int, k: int) -> dict[str, Any]:
    flop = gemm_flops(m, n, k)
    a, b = pair(m, n, k)
    snr = snr_db(gemm_kernel.mm(a, b), a.float() @ b.float())

    def kernel(p: Pair) -> torch.Tensor:
        return gemm_kernel.mm(p[0], p[1])

    # The three timers take turns, the order rotating each run, so that a drift of the chip's
    # clocks over the check falls on each alike (run back to back, the first timer of a shape
    # met the chip as the previous shape left it).
    host_bound: list[int] = []

    def kgit_ms() -> float:
        timing = time_fn(lambda: pair(m, n, k), kernel)
        host_bound.append(timing.host_bound_samples)
        return timing.median_ms

    timers: dict[str, Callable[[], float]] = {
        "kgit": kgit_ms,
        "seed": lambda: seed_loop_ms(lambda: gemm_kernel.mm(a, b)),
        "do_bench": lambda: triton.testing.do_bench(
            lambda: gemm_kernel.mm(a, b), return_mode="median"
        ),
    }
    names = list(timers)
    runs: dict[str, list[float]] = {name: [] for name in names}
    for run in range(RUNS):
        shift = run % len(names)
        for name in names[shift:] + names[:shift]:
            runs[name].append(timers[name]())
    kgit_runs, seed_ms, do_bench_runs = runs["kgit"], runs["seed"], runs["do_bench"]
    do_bench_ms = statistics.median(do_bench_runs)
    graph_ms = time_fn(lambda: pair(m, n, k), kernel, cuda_graph=True).median_ms
    cublas_ms = time_fn(lambda: pair(m, n, k), lambda p: torch.matmul(p[0], p[1])).median_ms
    kgit = statistics.median(kgit_runs)
    return {
        "shape": f"{m}x{n}x{k}",
        "snr_db": snr,
        "kgit_ms_runs": kgit_runs,
        "kgit_host_bound_samples": host_bound,
        "kgit_tflops": tflops(flop, kgit),
        "do_bench_tflops": tflops(flop, do_bench_ms),
        "kgit_vs_do_bench_pct": 100.0 * (do_bench_ms - kgit) / do_bench_ms,
        "graph_tflops": tflops(flop, graph_ms),
        "cublas_tflops": tflops(flop, cublas_ms),
        "seed_ms_runs": seed_ms,
        "do_bench_ms_runs": do_bench_runs,
        "do_bench_spread_pct": spread(do_bench_runs),
        "seed_tflops": tflops(flop, statistics.median(seed_ms)),
        "kgit_spread_pct": spread(kgit_runs),
        "kgit_std_pct": std_pct(kgit_runs),
        "seed_std_pct": std_pct(seed_ms),
        "seed_spread_pct": spread(seed_ms),
    }


def main() -> int:
    if not torch.cuda.is_available():
        print("gpu_check needs a CUDA GPU")
        return 2
    results = []
    for m, n, k in SHAPES:
        start = time.perf_counter()
        results.append(check_shape(m, n, k))
        print(f"{m}x{n}x{k}: done in {time.perf_counter() - start:.1f} s", flush=True)
    if os.environ.get("OUT"):
        meta = {
            "device": torch.cuda.get_device_name(),
            "torch": torch.__version__,
            "triton": triton.__version__,
        }
        Path(os.environ["OUT"], "gpu_check.json").write_text(
            json.dumps({**meta, "shapes": results}, indent=1)
        )
    headers = ["shape", "SNR dB", "kgit TF", "do_bench TF", "kgit vs db %", "graph TF", "cuBLAS TF",
               "seed TF", "kgit spread %", "seed spread %", "do_bench spread %", "kgit std %",
               "seed std %", "host-bound"]  # fmt: skip
    keys = ["shape", "snr_db", "kgit_tflops", "do_bench_tflops", "kgit_vs_do_bench_pct", "graph_tflops",
            "cublas_tflops", "seed_tflops", "kgit_spread_pct", "seed_spread_pct", "do_bench_spread_pct",
            "kgit_std_pct", "seed_std_pct"]  # fmt: skip
    rows = [[r[key] for key in keys] + [sum(r["kgit_host_bound_samples"])] for r in results]
    print(
        f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}"
    )
    print(tabulate(rows, headers=headers, tablefmt="github", floatfmt=".1f"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
