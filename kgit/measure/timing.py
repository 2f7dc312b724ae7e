"""Timing one kernel call: warm clocks, fresh inputs for every timed call, L2 flushed, per-call samples.

On CUDA each timed call sits between two CUDA events; on CPU (Triton's interpreter, CI) the same
interface falls back to `time.perf_counter` around each call. Both return a `Timing`.
"""

from __future__ import annotations

import gc
import math
import os
import random
import statistics
import time
import types
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

import torch

T = TypeVar("T")

# Triton's do_bench zeroes 256 MB between calls; the H200's L2 is 50 MB, so this evicts it fully.
L2_FLUSH_BYTES = 256 * 1024**2
# Input pools hold this share of the free device memory at most (and never more than the cap).
POOL_MEMORY_SHARE = 0.3
POOL_BYTES_CAP = 32 * 1024**3
MIN_POOL = 3
MAX_REPEATS = 2000
# Calls run this long to estimate the time of one before the input pool is sized.
ESTIMATE_MS = 20.0
# torch.cuda._sleep spins for a number of cycles; counted at 2 GHz, at or above the boost clock of
# current parts, so a lower clock only lengthens the sleep.
GPU_CYCLES_PER_MS = 2_000_000
# Calls queued at once with no sync: each is four launches (flush, two events, the kernel), and
# the driver's launch queue holds on the order of a thousand.
QUEUED_CALLS = 32
# A host-bound loop sleeps the GPU this many times the host time it was measured to need.
LEAD_MARGIN = 2.0
# ... that host time taken at most this many times the warm-up's: a call that waits for the GPU
# (`.item()`, a copy to the host) counts the sleep ahead of it as host time, and the sleeps
# would otherwise grow from chunk to chunk.
LEAD_GROWTH_CAP = 8.0

# Block mode (a measuring worker's block request): the input pool of a block holds at least
# this many bytes when memory allows, so that its sets do not all sit in L2 (50 MB on an H200).
BLOCK_POOL_BYTES = 128 * 1024**2
BLOCK_POOL_MAX = 32
# A relocated unit sits behind a padding allocation of up to this many bytes (2 MiB steps), and
# never more than this share of the free device memory.
RELOCATION_PAD_MAX = 2 * 1024**3
RELOCATION_PAD_SHARE = 0.05
RELOCATE_FROM_DRIVER_ENV = "KGIT_RELOCATE_FROM_DRIVER"
_placement = random.Random()  # its own: a harness seeding `random` must not fix the places

_flush_buffers: dict[str, torch.Tensor] = {}


@dataclass(frozen=True)
class Timing:
    """Per-call times in milliseconds; `std_ms` is the population standard deviation."""

    median_ms: float
    mean_ms: float
    std_ms: float
    samples: tuple[float, ...]
    method: str
    # Samples taken while the GPU may have been waiting for the host to queue the call.
    host_bound_samples: int = 0

    @classmethod
    def from_samples(cls, samples: list[float], method: str, host_bound_samples: int = 0) -> Timing:
        if not samples:
            raise ValueError("a timing needs at least one sample")
        return cls(
            median_ms=statistics.median(samples),
            mean_ms=statistics.fmean(samples),
            std_ms=statistics.pstdev(samples),
            samples=tuple(samples),
            method=method,
            host_bound_samples=host_bound_samples,
        )


@dataclass
class _Block:
    """The block request being served: its length and the shape's label; `ordinal` numbers the
    time_fn (and `once_per_shape`) calls of the shape, the same sequence on every block."""

    ms: float
    label: str
    relocate: bool = False  # build each prepared unit again at a new place first
    ordinal: int = 0

    def next_key(self) -> tuple[str, int]:
        self.ordinal += 1
        return self.label, self.ordinal


_block: ContextVar[_Block | None] = ContextVar("kgit_block", default=None)
# What a worker keeps between blocks, per (shape, call site): prepared timers, checked results.
_kept: dict[tuple[str, int], Any] = {}


@contextmanager
def block_mode(block_ms: float, label: str, *, relocate: bool = False) -> Iterator[None]:
    """Within it, each `time_fn` call times one block of about BLOCK_MS on the inputs, warm
    state and (on CUDA) graph that the same call site prepared on the shape's first block; with
    RELOCATE, on a unit built again first, at a new place in device memory."""
    token = _block.set(_Block(block_ms, label, relocate))
    try:
        yield
    finally:
        _block.reset(token)


def once_per_shape(compute: Callable[[], T]) -> T:
    """COMPUTE's result; in block mode computed on the shape's first block only (a correctness
    check need not run again on every block of the same kernel in the same process)."""
    block = _block.get()
    if block is None:
        return compute()
    key = block.next_key()
    if key not in _kept:
        _kept[key] = compute()
    result: T = _kept[key]
    return result


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
    is `repeats`, lowered when the pool would not fit in `pool_bytes` (default: 30% of free
    device memory, at most 32 GiB). Warm-up runs on a separate input set.
    """
    block = _block.get()
    if block is not None:
        key = block.next_key()
        if key not in _kept:
            _kept[key] = _prepare_block(make_inputs, fn, block.ms)
        elif block.relocate:
            _kept[key] = _kept[key].relocated()  # the old unit is freed here, at once
        timer: _BlockTimer = _kept[key]
        return timer.time(block.ms)
    warm = make_inputs()
    device = _device_of(warm)
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
    estimate = _warm_up(fn, warm, min(warmup_ms, ESTIMATE_MS), sync)
    wanted = max(repeats, min(MAX_REPEATS, math.ceil(min_time_ms / max(estimate.wall_ms, 1e-4))))
    count = _pool_size(wanted, nbytes(warm), device, pool_bytes)
    pool = [make_inputs() for _ in range(count)]
    if device.type == "cuda":
        if cuda_graph:
            return _time_cuda_graph(fn, warm, pool, warmup_ms)
        return _time_cuda_events(fn, warm, pool, warmup_ms, flush_l2)
    return _time_cpu(fn, warm, pool, warmup_ms)


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


def nbytes(inputs: object) -> int:
    """Bytes held by the tensors of one input set."""
    if isinstance(inputs, torch.Tensor):
        return inputs.numel() * inputs.element_size()
    if isinstance(inputs, Mapping):
        return sum(nbytes(v) for v in inputs.values())
    if isinstance(inputs, (tuple, list)):
        return sum(nbytes(v) for v in inputs)
    return 0


def _tensors(inputs: object) -> list[torch.Tensor]:
    if isinstance(inputs, torch.Tensor):
        return [inputs]
    if isinstance(inputs, Mapping):
        return [t for v in inputs.values() for t in _tensors(v)]
    if isinstance(inputs, (tuple, list)):
        return [t for v in inputs for t in _tensors(v)]
    return []


def _device_of(inputs: object) -> torch.device:
    for tensor in _tensors(inputs):
        if tensor.device.type == "cuda":
            return tensor.device
    return torch.device("cpu")


def _pool_size(repeats: int, set_bytes: int, device: torch.device, budget: int | None) -> int:
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    if budget is None:
        if device.type != "cuda":
            return repeats
        free, _total = torch.cuda.mem_get_info(device)
        budget = min(int(free * POOL_MEMORY_SHARE), POOL_BYTES_CAP)
    fits = budget // max(set_bytes, 1)
    return max(min(repeats, fits), min(repeats, MIN_POOL))


@dataclass(frozen=True)
class _WarmUp:
    """From the warm-up's last batch: host time to enqueue one call, and the whole batch's
    time per call once synchronized (the GPU's time per call when the GPU is the bottleneck)."""

    host_ms: float
    wall_ms: float

    @property
    def host_bound(self) -> bool:
        return self.host_ms >= 0.5 * self.wall_ms


def _warm_up(
    fn: Callable[[T], object], inputs: T, warmup_ms: float, sync: Callable[[], None]
) -> _WarmUp:
    # The first call may compile or autotune; the clock only counts once that is over. Batches
    # double so a 5 us kernel and a 50 ms kernel both reach the target without a sync per call,
    # up to QUEUED_CALLS: a batch that fills the driver's launch queue blocks the host on the
    # GPU, and the host would then read as slow as the GPU whatever its own cost.
    fn(inputs)
    sync()
    start = time.perf_counter()
    batch, host_s, wall_s = 1, 0.0, 0.0
    while True:
        batch_start = time.perf_counter()
        for _ in range(batch):
            fn(inputs)
        host_s = time.perf_counter() - batch_start
        sync()
        wall_s = time.perf_counter() - batch_start
        if (time.perf_counter() - start) * 1e3 >= warmup_ms:
            return _WarmUp(host_s * 1e3 / batch, wall_s * 1e3 / batch)
        batch = min(batch * 2, QUEUED_CALLS)


def _time_cpu(fn: Callable[[T], object], warm: T, pool: list[T], warmup_ms: float) -> Timing:
    _warm_up(fn, warm, warmup_ms, lambda: None)
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


def _gpu_sleep(ms: float) -> None:
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is not None:
        sleep(int(ms * GPU_CYCLES_PER_MS))


def _time_cuda_events(
    fn: Callable[[T], object], warm: T, pool: list[T], warmup_ms: float, flush_l2: bool
) -> Timing:
    flush = _flush_buffer(_device_of(warm))

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
    warm_up = _warm_up(
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
    chunk_host_ms = [warm_up.host_ms]
    caught_up = 0
    for first in range(0, len(pool), QUEUED_CALLS):
        part = range(first, min(first + QUEUED_CALLS, len(pool)))
        torch.cuda.synchronize()
        # The first chunk knows only the warm-up's host time, which timed calls exceed (a
        # 4096x4096 RMSNorm's first chunk of 32 was flagged in every pass on an idle host, the
        # later ones not): it gets the capped lead; later chunks follow what chunks measured.
        per_call_ms = min(
            statistics.median(chunk_host_ms) if first else math.inf,
            LEAD_GROWTH_CAP * warm_up.host_ms,
        )
        _gpu_sleep(LEAD_MARGIN * per_call_ms * len(part) + 0.05)
        lead = torch.cuda.Event()
        lead.record()
        queued = time.perf_counter()
        for i in part:
            timed_call(pool[i], starts[i], ends[i])
        chunk_host_ms.append((time.perf_counter() - queued) * 1e3 / len(part))
        if lead.query():
            caught_up += len(part)
    torch.cuda.synchronize()
    if caught_up:
        warnings.warn(
            f"{caught_up} of {len(pool)} timed calls may have timed the host: the GPU caught up "
            "with the host's queue (is the machine busy?)",
            stacklevel=3,
        )
    return Timing.from_samples(_elapsed(starts, ends), method + "+lead", caught_up)


def _elapsed(starts: list[torch.cuda.Event], ends: list[torch.cuda.Event]) -> list[float]:
    return [start.elapsed_time(end) for start, end in zip(starts, ends, strict=True)]


def _time_cuda_graph(fn: Callable[[T], object], warm: T, pool: list[T], warmup_ms: float) -> Timing:
    # For kernels of a few microseconds the host launch dominates what events measure. One graph
    # replays the call once per pool entry; a sample is one replay divided by the calls in it.
    # No L2 flush here: the inputs rotate through the pool, which is cold when it exceeds L2.
    _warm_up(fn, warm, warmup_ms, torch.cuda.synchronize)
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


# -- block mode ----------------------------------------------------------------------------------
#
# A measuring worker alternates with the other side in blocks of tens of milliseconds, so that the
# chip's clock (it wanders 1425-1965 MHz under a 700 W cap on an H200) moves little within an
# A,B,B,A quad and falls on both sides alike. A block replays a CUDA graph of one call per input
# set of a small pool: no host in the timing (launching a 19 us RMSNorm through autograd costs the
# host ~36 us, and plain launches timed the host), no L2 flush inside (it would outweigh short
# kernels); the pool spans BLOCK_POOL_BYTES so its sets do not all stay in L2. A call that cannot
# be captured falls back to events around plain calls led by a GPU sleep, flagged when the GPU
# caught up with the host.
#
# Where a unit's buffers sit in device memory moves a memory-bound kernel's time: on an H200,
# RMSNorm 32768x8192's forward read up to 0.9% apart between units of one process built at
# different places (bench/coexist_study.py), and two workers, each placed by its own history,
# differed steadily by ~1% in A/A (bench/worker_pair.py). A relocating block builds its unit
# again behind a padding allocation of random size, so that the place is drawn afresh: kgit
# relocates each side once per quad, and placement becomes a noise that the pair statistics see
# and that falls on both sides alike.


@dataclass
class _BlockTimer:
    """Times one block: `run(n)` runs n repetitions of the prepared unit, CALLS calls each, and
    returns their time in ms (with whether the host may have been timed). Nothing in `run`
    refers back to the timer: a unit replaced by its relocation is freed at once, not later by
    the garbage collector, in the middle of another unit's graph capture."""

    run: Callable[[int], tuple[float, bool]]
    calls: int  # calls in one repetition
    method: str
    keep: list[Any] = field(default_factory=list)  # the pool and graph stay alive here
    rebuild: Callable[[_BlockTimer], _BlockTimer] | None = None  # this unit, at a new place
    unit_ms: float = 1.0  # time of one repetition, as last measured
    host: bool = False  # whether the last block may have timed the host

    def relocated(self) -> _BlockTimer:
        """This unit built again at a new place (itself where there is no device memory)."""
        return self.rebuild(self) if self.rebuild is not None else self

    def time(self, block_ms: float) -> Timing:
        reps = max(1, round(block_ms / max(self.unit_ms, 1e-4)))
        return Timing.from_samples([self.measure(reps)], self.method, int(self.host))

    def measure(self, reps: int) -> float:
        """Time of one call over REPS repetitions; remembers the repetition's time."""
        elapsed, self.host = self.run(reps)
        self.unit_ms = elapsed / reps
        return elapsed / (reps * self.calls)


def _prepare_block(
    make_inputs: Callable[[], T], fn: Callable[[T], object], block_ms: float
) -> _BlockTimer:
    warm = make_inputs()
    device = _device_of(warm)
    count = max(2, min(BLOCK_POOL_MAX, math.ceil(BLOCK_POOL_BYTES / max(nbytes(warm), 1))))
    if device.type != "cuda":  # no cache to defeat at the interpreter's speed: two sets
        return _cpu_block(fn, [warm, make_inputs()])
    torch.cuda.set_device(device)
    # Give back what a plain pass's pools left cached, so that each side's block buffers are
    # allocated from the same state, whatever that process measured before.
    torch.cuda.empty_cache()
    _warm_up(fn, warm, min(block_ms, ESTIMATE_MS), torch.cuda.synchronize)
    count = _pool_size(count, nbytes(warm), device, None)
    make: Callable[[], _BlockTimer] = lambda: _graph_block(make_inputs, fn, count)  # noqa: E731
    try:
        timer = make()
    except Exception as exc:  # a call that syncs, or allocates outside the graph's pool, say
        torch.cuda.synchronize()
        warnings.warn(
            f"the call could not be captured in a CUDA graph ({type(exc).__name__}: {exc}); "
            "blocks time plain launches, which can time the host for short kernels",
            stacklevel=3,
        )
        make = lambda: _events_block(fn, [make_inputs() for _ in range(count)])  # noqa: E731
        timer = _events_block(fn, [warm, *(make_inputs() for _ in range(count - 1))])
    return _relocatable(timer, make, device)


def _relocatable(
    timer: _BlockTimer, make: Callable[[], _BlockTimer], device: torch.device
) -> _BlockTimer:
    def rebuild(old: _BlockTimer) -> _BlockTimer:
        # Built while the old unit still holds its memory, behind a pad of random size: the new
        # buffers cannot land where the old ones were, nor at one fixed offset from them. The
        # caching allocator serves them from what this process already holds; with
        # KGIT_RELOCATE_FROM_DRIVER=1 (an experiment: bench/worker_pair.py --from-driver) the old
        # unit is freed and the cache given back first, so that the new one is fresh device
        # memory, drawn by both sides' processes in turn.
        if os.environ.get(RELOCATE_FROM_DRIVER_ENV) == "1":
            old.keep.clear()
            old.run = _released  # its closure held the pool and graph too
            torch.cuda.synchronize(device)
            torch.cuda.empty_cache()
        free, _total = torch.cuda.mem_get_info(device)
        steps = max(1, min(RELOCATION_PAD_MAX, int(free * RELOCATION_PAD_SHARE)) // (2 * 1024**2))
        pad = torch.empty(
            _placement.randrange(steps) * 2 * 1024**2, dtype=torch.uint8, device=device
        )
        fresh = make()
        fresh.keep.append(pad)
        return _relocatable(fresh, make, device)

    timer.rebuild = rebuild
    return timer


def _released(reps: int) -> tuple[float, bool]:
    raise RuntimeError("this measuring unit was released when it was relocated")


def _cpu_block(fn: Callable[[T], object], pool: list[T]) -> _BlockTimer:
    def run(reps: int) -> tuple[float, bool]:
        start = time.perf_counter()
        for _ in range(reps):
            for inputs in pool:
                fn(inputs)
        return (time.perf_counter() - start) * 1e3, False

    timer = _BlockTimer(run, len(pool), "block-perf_counter", [pool])
    timer.measure(1)  # the estimate of one repetition
    return timer


def _graph_block(
    make_inputs: Callable[[], T], fn: Callable[[T], object], count: int
) -> _BlockTimer:
    # Inputs are made, and the calls warmed, on the capture stream: a backward runs on the stream
    # its forward ran on, and must be captured there.
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        pool = [make_inputs() for _ in range(count)]
        for inputs in pool:
            fn(inputs)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    # No garbage collection during the capture: freeing device memory or another graph there
    # (an object that only the collector frees) invalidates it.
    collecting = gc.isenabled()
    gc.disable()
    try:
        with torch.cuda.graph(graph, stream=stream):
            for inputs in pool:
                fn(inputs)
    finally:
        if collecting:
            gc.enable()

    def run(reps: int) -> tuple[float, bool]:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            graph.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end), False

    timer = _BlockTimer(run, len(pool), "block-cuda-graph", [pool, graph, stream])
    timer.measure(1)
    return timer


def _events_block(fn: Callable[[T], object], pool: list[T]) -> _BlockTimer:
    host_ms = [0.05]  # host time to queue one call, as last measured

    def run(reps: int) -> tuple[float, bool]:
        calls = reps * len(pool)
        torch.cuda.synchronize()
        _gpu_sleep(LEAD_MARGIN * host_ms[0] * calls + 0.05)
        lead, start = torch.cuda.Event(), torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        lead.record()
        start.record()
        queued = time.perf_counter()
        for _ in range(reps):
            for inputs in pool:
                fn(inputs)
        end.record()
        host_ms[0] = (time.perf_counter() - queued) * 1e3 / calls
        caught_up = lead.query()
        end.synchronize()
        return start.elapsed_time(end), caught_up

    timer = _BlockTimer(run, len(pool), "block-cuda-events+lead", [pool])
    timer.measure(1)
    return timer
