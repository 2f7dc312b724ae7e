"""One-call GPU check of kgit's timing against triton's do_bench, cuBLAS and the seed's loop.

For each shape of the example GEMM (bf16 forward): kgit's `time_fn` (5 independent runs, each a
fresh input pool and its own warm-up), `triton.testing.do_bench` median, torch.matmul (cuBLAS)
through kgit's timing, kgit's CUDA-graph mode, and the seed harness's loop (1 warm-up repeat +
3 repeats × 50 calls between two synchronizes, 5 runs). Prints a table last; writes every
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


def _pair(m: int, n: int, k: int) -> Pair:
    a = (torch.randn(m, k, device="cuda") / k**0.5).to(torch.bfloat16)
    return a, torch.randn(k, n, device="cuda").to(torch.bfloat16)


def _spread(values: list[float]) -> float:
    return 100.0 * (max(values) - min(values)) / statistics.median(values)


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
    a, b = _pair(m, n, k)
    snr = snr_db(gemm_kernel.mm(a, b), a.float() @ b.float())

    def kernel(p: Pair) -> torch.Tensor:
        return gemm_kernel.mm(p[0], p[1])

    kgit_ms = [time_fn(lambda: _pair(m, n, k), kernel).median_ms for _ in range(RUNS)]
    graph_ms = time_fn(lambda: _pair(m, n, k), kernel, cuda_graph=True).median_ms
    do_bench_runs = [
        triton.testing.do_bench(lambda: gemm_kernel.mm(a, b), return_mode="median")
        for _ in range(RUNS)
    ]
    do_bench_ms = statistics.median(do_bench_runs)
    cublas_ms = time_fn(lambda: _pair(m, n, k), lambda p: torch.matmul(p[0], p[1])).median_ms
    seed_ms = [seed_loop_ms(lambda: gemm_kernel.mm(a, b)) for _ in range(RUNS)]
    kgit = statistics.median(kgit_ms)
    return {
        "shape": f"{m}x{n}x{k}",
        "snr_db": snr,
        "kgit_ms_runs": kgit_ms,
        "kgit_tflops": tflops(flop, kgit),
        "do_bench_tflops": tflops(flop, do_bench_ms),
        "kgit_vs_do_bench_pct": 100.0 * (do_bench_ms - kgit) / do_bench_ms,
        "graph_tflops": tflops(flop, graph_ms),
        "cublas_tflops": tflops(flop, cublas_ms),
        "seed_ms_runs": seed_ms,
        "do_bench_ms_runs": do_bench_runs,
        "do_bench_spread_pct": _spread(do_bench_runs),
        "seed_tflops": tflops(flop, statistics.median(seed_ms)),
        "kgit_spread_pct": _spread(kgit_ms),
        "seed_spread_pct": _spread(seed_ms),
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
               "seed TF", "kgit spread %", "seed spread %", "do_bench spread %"]  # fmt: skip
    keys = ["shape", "snr_db", "kgit_tflops", "do_bench_tflops", "kgit_vs_do_bench_pct", "graph_tflops",
            "cublas_tflops", "seed_tflops", "kgit_spread_pct", "seed_spread_pct", "do_bench_spread_pct"]  # fmt: skip
    rows = [[r[key] for key in keys] for r in results]
    print(
        f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}"
    )
    print(tabulate(rows, headers=headers, tablefmt="github", floatfmt=".1f"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
