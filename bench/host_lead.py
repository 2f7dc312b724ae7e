"""A plain pass's timer on a kernel shorter than its launch, against CUDA-graph truth.

    python3 bench/host_lead.py --runs 5

A plain pass (`kgit.measure.timing.time_fn`, as a harness's CSV row is timed) times each call
between two CUDA events with the L2 flushed before it. When the host needs longer to launch a call
than the GPU to run it, a start event would fire before the kernel is queued and the sample would
time Python: the timer then puts a GPU sleep ahead of each chunk of calls, sized from the host
time per call (the first chunk from the warm-up's, capped; later chunks from what chunks took).

The truth here has no host in it: one CUDA graph replays, per input set of a pool, the flush and
the call; another replays the flushes alone; the difference per call is the kernel's time, cold
in L2 as in the timer. The bundled RMSNorm example's forward (bf16) is timed both ways in turns on
shapes whose call takes ~10 to ~40 us on an H100. The table is printed last: the timer's median
against the truth's, and how many of the timer's samples the GPU may have waited for the host.
Rows go to $OUT/host_lead.json when OUT is set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "kgit" / "examples" / "rmsnorm"))

import rmsnorm_kernel  # noqa: E402
import torch  # noqa: E402

from kgit.measure.timing import L2_FLUSH_BYTES, time_fn  # noqa: E402

SIZES = [(2048, 4096), (4096, 4096), (8192, 4096)]
POOL = 64  # input sets of the truth's graphs: 2 GiB at 8192x4096, far past L2


def inputs(m: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    return x, torch.randn(n, device="cuda", dtype=torch.bfloat16)


def forward(pair: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    with torch.no_grad():
        return rmsnorm_kernel.rmsnorm(*pair)


def graph_ms(body: list[object], replays: int = 20) -> float:
    """Median ms of one replay of a graph that runs each of BODY's callables once."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for step in body:
            step()  # type: ignore[operator]
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def truth_ms(m: int, n: int) -> float:
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    pool = [inputs(m, n) for _ in range(POOL)]
    forward(pool[0])  # compiled before capture
    both: list[object] = []
    for pair in pool:
        both += [flush.zero_, lambda pair=pair: forward(pair)]
    flushes = [flush.zero_] * POOL
    per_call = (graph_ms(both) - graph_ms(flushes)) / POOL
    del pool, flush
    torch.cuda.empty_cache()
    return per_call


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("host_lead.py needs a CUDA GPU")
        return 2
    gpu = torch.cuda.get_device_name()
    rows = []
    for m, n in SIZES:
        timer, truth, flagged, methods = [], [], 0, set()
        for _ in range(args.runs):  # in turns: the clock's drift falls on both
            timing = time_fn(lambda m=m, n=n: inputs(m, n), forward)
            timer.append(timing.median_ms)
            flagged += timing.host_bound_samples
            methods.add(timing.method)
            truth.append(truth_ms(m, n))
        kgit_ms, true_ms = statistics.median(timer), statistics.median(truth)
        rows.append(
            {
                "shape": f"{m}x{n}",
                "timer_us": round(kgit_ms * 1e3, 2),
                "truth_us": round(true_ms * 1e3, 2),
                "diff_pct": round((kgit_ms / true_ms - 1) * 100, 2),
                "timer_runs_us": [round(t * 1e3, 2) for t in timer],
                "truth_runs_us": [round(t * 1e3, 2) for t in truth],
                "flagged": flagged,
                "method": ",".join(sorted(methods)),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "host_lead.json").write_text(json.dumps(rows, indent=1))
    print(f"\n{gpu}, RMSNorm forward bf16, medians of {args.runs} runs in turns")
    print("| shape | timer us | graph truth us | timer vs truth | samples flagged | method |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['shape']} | {r['timer_us']} | {r['truth_us']} | {r['diff_pct']:+.2f}% | "
            f"{r['flagged']} | {r['method']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
