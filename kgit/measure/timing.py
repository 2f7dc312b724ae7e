"""Timing one kernel call: warm clocks, fresh inputs for every timed call, L2 flushed, per-call samples.

On CUDA each timed call sits between two CUDA events; on CPU (Triton's interpreter, CI) the same
interface falls back to `time.perf_counter` around each call. Both return a `Timing`. Within
`block_mode` (a resident harness's block request) `time_fn` times one block instead
(kgit/measure/timing_blocks.py); what both share is in kgit/measure/timing_core.py.
"""

from __future__ import annotations

import math
import os
import statistics
import time
import types
import warnings
from collections.abc import Callable
from typing import TypeVar

import torch

from kgit.measure.budget import give_back
from kgit.measure.timing_blocks import (
    BLOCK_UNITS_ENV,
    block_mode,
    block_timing,
    once_per_shape,
    passes_over,
)
from kgit.measure.timing_core import (
    ESTIMATE_MS,
    LEAD_MARGIN,
    MAX_REPEATS,
    QUEUED_CALLS,
    Timing,
    allocated,
    device_of,
    gpu_sleep,
    nbytes,
    pool_size,
    set_footprint,
    warm_until_steady,
)

T = TypeVar("T")

__all__ = [
    "BLOCK_UNITS_ENV",
    "Timing",
    "block_mode",
    "nbytes",
    "once_per_shape",
    "passes_over",
    "replaced_clocks",
    "time_fn",
]


# Triton's do_bench zeroes 256 MB between calls; the H200's L2 is 50 MB, so this evicts it fully.
L2_FLUSH_BYTES = 256 * 1024**2


# ... that host time taken at most this many times the warm-up's: a call that waits for the GPU
# (`.item()`, a copy to the host) counts the sleep ahead of it as host time, and the sleeps
# would otherwise grow from chunk to chunk.
LEAD_GROWTH_CAP = 8.0


_flush_buffers: dict[str, torch.Tensor] = {}


def time_fn(
    make_inputs: Callable[[], T],
    fn: Callable[[T], object],
    *,
    repeats: int = 100,
    warmup_ms: float = 250.0,
    flush_l2: bool = True,
    cuda_graph: bool = False,
    pool_bytes: int | None = None,
    min_time_ms: float = 100.0,
) -> Timing:
    """Time `fn(inputs)`, each timed call on an input set that no other call has seen.

    `make_inputs` builds one input set (tensors, possibly nested in tuples, lists or dicts); it
    runs before any timing starts. An `id()`-keyed cache in `fn` therefore never hits: the pool
    keeps every set alive, so no two timed calls share an object or an id. The number of samples
    is `repeats`, lowered when the pool would not fit in `pool_bytes` (default: what this
    measuring process's share of the card leaves, kgit/measure/budget.py; at most 32 GiB).
    Warm-up runs on a separate input set.
    """
    block = block_timing(make_inputs, fn)
    if block is not None:
        return block
    before = allocated()
    warm = make_inputs()
    device = device_of(warm)
    sync: Callable[[], None] = lambda: None  # noqa: E731
    if device.type == "cuda":
        torch.cuda.set_device(device)
        sync = torch.cuda.synchronize
    # Short kernels get more samples, so that the timed calls span `min_time_ms` of device time
    # (as do_bench's `rep`): in one H200 check, 100 calls of a 0.2 ms GEMM (20 ms in all) read
    # up to 8% apart from one run to the next as the chip's power state moved under them. A few
    # calls estimate the time per call; the full warm-up comes after the pool is built, right
    # before the samples: building a pool of gigabytes leaves the matrix units idle long enough
    # for the clocks and the power limiter to move away from where the kernel drives them.
    estimate = warm_until_steady(fn, warm, min(warmup_ms, ESTIMATE_MS), sync)
    wanted = max(repeats, min(MAX_REPEATS, math.ceil(min_time_ms / max(estimate.wall_ms, 1e-4))))
    count = pool_size(wanted, set_footprint(warm, before), device, pool_bytes)
    pool = [make_inputs() for _ in range(count)]
    if device.type != "cuda":
        return _time_cpu(fn, warm, pool, warmup_ms)
    if cuda_graph:
        timing = _time_cuda_graph(fn, warm, pool, warmup_ms)
    else:
        timing = _time_cuda_events(fn, warm, pool, warmup_ms, flush_l2)
    # The pool goes back to the driver at once: kept cached, a forward's pool and then a
    # backward's of other-sized sets held 24.6 GiB of an H100 where 19.8 were budgeted (the
    # example GEMM's plain pass), and nothing of it is the other side's.
    del warm, pool
    give_back(device)
    return timing


def replaced_clocks() -> list[str]:
    """The clocks kgit's timings read that code in this process has rebound (a kernel module
    that halves `time.perf_counter` halves every time measured on the CPU): each must still be
    the time module's builtin, or a function of torch's own files."""
    replaced = [
        f"time.{name}"
        for name in ("perf_counter", "perf_counter_ns", "monotonic")
        if not (
            isinstance(getattr(time, name), types.BuiltinFunctionType)
            and getattr(getattr(time, name), "__self__", None) is time
            and getattr(time, name).__name__ == name
        )
    ]
    home = os.path.dirname(torch.__file__)
    for owner, name in (
        (torch.cuda.Event, "elapsed_time"),
        (torch.cuda.Event, "record"),
        (torch.cuda.Event, "synchronize"),
        (torch.cuda, "synchronize"),
    ):
        fn = getattr(owner, name)
        code = getattr(fn, "__code__", None)
        if code is not None and not os.path.abspath(code.co_filename).startswith(home):
            replaced.append(f"{owner.__name__}.{name}")
    return replaced


def _time_cpu(fn: Callable[[T], object], warm: T, pool: list[T], warmup_ms: float) -> Timing:
    warm_until_steady(fn, warm, warmup_ms, lambda: None)
    samples = []
    for inputs in pool:
        start = time.perf_counter()
        fn(inputs)
        samples.append((time.perf_counter() - start) * 1e3)
    return Timing.from_samples(samples, "perf_counter")


def _flush_buffer(device: torch.device) -> torch.Tensor:
    key = str(device)
    if key not in _flush_buffers:
        _flush_buffers[key] = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=device)
    return _flush_buffers[key]


def _time_cuda_events(
    fn: Callable[[T], object], warm: T, pool: list[T], warmup_ms: float, flush_l2: bool
) -> Timing:
    flush = _flush_buffer(device_of(warm))

    def timed_call(inputs: T, start: torch.cuda.Event, end: torch.cuda.Event) -> None:
        if flush_l2:
            flush.zero_()
        start.record()
        fn(inputs)
        end.record()

    # The SM clock idles far below its boost clock: without a warm-up of a few hundred ms the
    # first samples time a slow chip. The warm-up runs the timed loop's own body, flush and
    # events included, so its host time per call is what the timed loop will cost the host.
    spare = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
    warm_up = warm_until_steady(
        lambda inputs: timed_call(inputs, *spare), warm, warmup_ms, torch.cuda.synchronize
    )
    starts = [torch.cuda.Event(enable_timing=True) for _ in pool]
    ends = [torch.cuda.Event(enable_timing=True) for _ in pool]
    method = "cuda-events+l2flush" if flush_l2 else "cuda-events"
    torch.cuda.synchronize()
    if not warm_up.host_bound:
        for inputs, start, end in zip(pool, starts, ends, strict=True):
            timed_call(inputs, start, end)
        torch.cuda.synchronize()
        return Timing.from_samples(_elapsed(starts, ends), method)
    # When the host is slower than the GPU, a start event fires before the kernel is even
    # launched and the sample times Python. Then a GPU-side sleep ahead of each chunk of calls,
    # twice the host time the chunk was measured to need, lets the host queue the chunk first.
    # Chunks are small, so the launch queue never fills while the GPU sleeps (a full queue
    # blocks the host until the sleep ends, and the rest of the chunk would time the host).
    # An event behind the sleep tells whether the GPU caught up with the host all the same
    # (a stall of the host): that chunk's samples are counted in `host_bound_samples`. Only
    # then: in one H200 run that slept before every shape, large GEMMs read 3-9% above do_bench
    # and the seed loop, presumably as the idle spell let the power limiter relax.
    #
    # The host time per call is re-measured on every chunk and the lead follows the median so
    # far: timed calls can cost the host more than the warm-up's. On an H200 the GPU caught up
    # in 426 of 458 calls of an RMSNorm backward led by the warm-up's figure alone (each timed
    # call has a fresh graph, presumably allocating gradients the warm-up's replayed graph had).
    caught_up = _led_chunks(timed_call, pool, starts, ends, warm_up.host_ms)
    torch.cuda.synchronize()
    if caught_up:
        warnings.warn(
            f"{caught_up} of {len(pool)} timed calls may have timed the host: the GPU caught up "
            "with the host's queue (is the machine busy?)",
            stacklevel=3,
        )
    return Timing.from_samples(_elapsed(starts, ends), method + "+lead", caught_up)


def _led_chunks(
    timed_call: Callable[[T, torch.cuda.Event, torch.cuda.Event], None],
    pool: list[T],
    starts: list[torch.cuda.Event],
    ends: list[torch.cuda.Event],
    warm_host_ms: float,
) -> int:
    """Time POOL in chunks, each queued behind a GPU-side sleep that lets the host lead
    (_time_cuda_events says why and how long); returns how many calls the GPU caught up on."""
    chunk_host_ms = [warm_host_ms]
    caught_up = 0
    for first in range(0, len(pool), QUEUED_CALLS):
        part = range(first, min(first + QUEUED_CALLS, len(pool)))
        torch.cuda.synchronize()
        # The first chunk knows only the warm-up's host time, which timed calls exceed (a
        # 4096x4096 RMSNorm's first chunk of 32 was flagged in every pass on an idle host, the
        # later ones not): it gets the capped lead; later chunks follow what chunks measured.
        per_call_ms = min(
            statistics.median(chunk_host_ms) if first else math.inf,
            LEAD_GROWTH_CAP * warm_host_ms,
        )
        gpu_sleep(LEAD_MARGIN * per_call_ms * len(part) + 0.05)
        lead = torch.cuda.Event()
        lead.record()
        queued = time.perf_counter()
        for i in part:
            timed_call(pool[i], starts[i], ends[i])
        chunk_host_ms.append((time.perf_counter() - queued) * 1e3 / len(part))
        if lead.query():
            caught_up += len(part)
    return caught_up


def _elapsed(starts: list[torch.cuda.Event], ends: list[torch.cuda.Event]) -> list[float]:
    return [start.elapsed_time(end) for start, end in zip(starts, ends, strict=True)]


def _time_cuda_graph(fn: Callable[[T], object], warm: T, pool: list[T], warmup_ms: float) -> Timing:
    # For kernels of a few microseconds the host launch dominates what events measure. One graph
    # replays the call once per pool entry; a sample is one replay divided by the calls in it.
    # No L2 flush here: the inputs rotate through the pool, which is cold when it exceeds L2.
    warm_until_steady(fn, warm, warmup_ms, torch.cuda.synchronize)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for inputs in pool:
            fn(inputs)
    graph.replay()
    torch.cuda.synchronize()
    replays = max(5, min(50, math.ceil(100 / len(pool))))
    samples = []
    for _ in range(replays):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / len(pool))
    return Timing.from_samples(samples, "cuda-graph")
