"""Block mode: a resident harness's block request, timed on a unit prepared once per call site.

A resident harness alternates with the other side in blocks of tens of milliseconds, so that the
chip's clock (it wanders 1425-1965 MHz under a 700 W cap on an H200) moves little within an
A,B,B,A quad and falls on both sides alike. A block replays a CUDA graph of one call per input
set of a small pool: no host in the timing (launching a 19 us RMSNorm through autograd costs the
host ~36 us, and plain launches timed the host), no L2 flush inside (it would outweigh short
kernels); the pool spans BLOCK_POOL_BYTES so its sets do not all stay in L2. A call that cannot
be captured falls back to events around plain calls led by a GPU sleep, flagged when the GPU
caught up with the host.

Where a unit's buffers sit in device memory moves a memory-bound kernel's time: on an H200,
RMSNorm 32768x8192's forward read up to 0.9% apart between units of one process built at
different places (bench/coexist_study.py), and two workers, each placed by its own history,
differed steadily by ~1% in A/A (bench/worker_pair.py). A relocating block builds its unit
again behind a padding allocation of random size, so that the place is drawn afresh: kgit
relocates each side once per quad, and placement becomes a noise that the pair statistics see
and that falls on both sides alike.

Each side keeps its units within its share of the card (kgit/measure/budget.py): a unit's pool
leaves room for its relocation beside it; when memory is short, a unit's pool holds fewer sets,
a relocation frees the old unit first, and a side keeps one shape's units at a time (the others
are built again on their next block), each said in a warning.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import os
import random
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

import torch

from kgit.launch_hook.sitecustomize import traced_lines
from kgit.measure.budget import Budget, budget, gib, give_back
from kgit.measure.fresh_inputs import fresh_inputs, reseed
from kgit.measure.timing_core import (
    ESTIMATE_MS,
    LEAD_MARGIN,
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


# Block mode (a resident harness's block request): the input pool of a block holds at least
# this many bytes when memory allows, so that its sets do not all sit in L2 (50 MB on an H200).
BLOCK_POOL_BYTES = 128 * 1024**2
BLOCK_POOL_MAX = 32
# A relocated unit sits behind a padding allocation of up to this many bytes (2 MiB steps), and
# never more than this share of the side's memory budget.
RELOCATION_PAD_MAX = 2 * 1024**3
RELOCATION_PAD_SHARE = 0.05
PAD_STEP = 2 * 1024**2
# An experiment (bench/worker_pair.py --units K): each call site keeps K units, built at once at
# K places in device memory and all alive, and its blocks take them in turn, so that each side's
# figure is a mean over K places instead of one.
BLOCK_UNITS_ENV = "KGIT_BLOCK_UNITS"
_placement = random.Random()  # its own: a harness seeding `random` must not fix the places


@dataclass
class _Block:
    """The block request being served: its length and the shape's label; `ordinal` numbers the
    time_fn (and `once_per_shape`) calls of the shape, the same sequence on every block."""

    ms: float
    label: str
    relocate: bool = False  # build each prepared unit again at a new place first
    columns: tuple[str, ...] | None = None  # the CSV columns the verdict reads (None: all)
    ordinal: int = 0

    def next_key(self) -> tuple[str, int]:
        self.ordinal += 1
        return self.label, self.ordinal


_block: ContextVar[_Block | None] = ContextVar("kgit_block", default=None)
# What a resident harness keeps between blocks, per (shape, call site): prepared timers, checked results.
_kept: dict[tuple[str, int], Any] = {}
# Set once memory ran short: from then on a shape's units are built only after every other
# shape's were freed (one shape's units at a time).
_one_shape_at_a_time = [False]


@contextmanager
def block_mode(
    block_ms: float,
    label: str,
    *,
    relocate: bool = False,
    columns: tuple[str, ...] | None = None,
) -> Iterator[None]:
    """Within it, each `time_fn` call times one block of about BLOCK_MS on the inputs, warm
    state and (on CUDA) graph that the same call site prepared on the shape's first block; with
    RELOCATE, on a unit built again first, at a new place in device memory. COLUMNS names the
    CSV columns the verdict reads: a phase none of them reads is passed over (`passes_over`)."""
    token = _block.set(_Block(block_ms, label, relocate, columns))
    try:
        yield
    finally:
        _block.reset(token)


def once_per_shape(compute: Callable[[], T]) -> T:
    """COMPUTE's result; in block mode computed on the shape's first block only (a correctness
    check need not run again on every block of the same kernel in the same process). The lines
    of the kernel it runs are what the target shapes run, for the gate audit, when kgit asks
    (kgit/launch_hook/): the check runs the kernel as the timed calls do, and is not timed."""
    block = _block.get()
    if block is None:
        with traced_lines():
            return compute()
    key = block.next_key()
    if key not in _kept:
        with traced_lines():
            _kept[key] = compute()
    result: T = _kept[key]
    return result


def passes_over(phase: str) -> bool:
    """Whether this block passes the call site of PHASE ("Forward", "Backward") over: a block
    request that names the columns its verdict reads and none of them is PHASE's. The call
    site keeps its place in the shape's sequence (the first block, a whole row, set it), and its
    figures are left NaN. RMSNorm's verdict reads Forward GB/s; its backward (8.9 ms a call at
    32768x8192 on an H200, against 0.34 ms forward) was timed in every block."""
    block = _block.get()
    if block is None or block.columns is None:
        return False
    if any(column.startswith(phase) for column in block.columns):
        return False
    key = block.next_key()
    # Its units (the first block, a whole row, built them) are not what this side's blocks time:
    # freed, they leave the card to what is (an RMSNorm backward's at 32768x8192: ~5 GiB).
    if isinstance(_kept.get(key), _Units):
        del _kept[key]
    return True


def block_timing(make_inputs: Callable[[], T], fn: Callable[[T], object]) -> Timing | None:
    """In block mode, one block of `fn` on the unit this call site prepared on the shape's first
    block (see `time_fn`); None outside block mode."""
    block = _block.get()
    if block is None:
        return None
    key = block.next_key()
    fresh = key not in _kept
    if fresh:
        _kept[key] = _prepared_units(block, make_inputs, fn)
    units: _Units = _kept[key]
    # The unit's own call (the first block's): the check of what a timed call produced draws
    # among the calls of this block, on this block's fresh inputs.
    new_block = getattr(units.fn, "new_block", None)
    if new_block is not None:
        new_block()
    timing = units.next(block.relocate and not fresh).time(block.ms)
    return dataclasses.replace(timing, kept=getattr(units.fn, "kept", None))


def _prepared_units(
    block: _Block, make_inputs: Callable[[], T], fn: Callable[[T], object]
) -> _Units:
    """A call site's units, built within the side's memory: once memory ran short (a unit over
    budget, or a refused allocation), after freeing every other shape's units."""
    count = max(1, int(os.environ.get(BLOCK_UNITS_ENV) or 1))
    if _one_shape_at_a_time[0]:
        _free_units_except(block.label)
    try:
        units = _Units([_prepare_block(make_inputs, fn, block.ms) for _ in range(count)], fn)
    except torch.cuda.OutOfMemoryError:
        if _one_shape_at_a_time[0] or not _free_units_except(block.label):
            raise
        _short_of_memory("an allocation was refused")
        units = _Units([_prepare_block(make_inputs, fn, block.ms) for _ in range(count)], fn)
    if not _one_shape_at_a_time[0] and torch.cuda.is_available() and torch.cuda.is_initialized():
        side = budget(torch.device("cuda", torch.cuda.current_device()))
        if side.allocated > side.limit:
            _short_of_memory(f"its units hold {gib(side.allocated)} of {gib(side.limit)}")
    return units


def _short_of_memory(why: str) -> None:
    _one_shape_at_a_time[0] = True
    warnings.warn(
        f"memory short ({why}): this side keeps one shape's measuring units at a time, and "
        "builds a shape's again on its next block",
        stacklevel=5,
    )


def _free_units_except(label: str) -> bool:
    """Free the measuring units of every shape but LABEL; whether there were any."""
    others = [k for k, v in _kept.items() if k[0] != label and isinstance(v, _Units)]
    for key in others:
        del _kept[key]
    if others:
        give_back(torch.device("cuda"))
    return bool(others)


@dataclass
class _Units:
    """A call site's measuring units (one, but for the BLOCK_UNITS_ENV experiment), taken in
    turn, one a block."""

    timers: list[_BlockTimer]
    fn: Callable[[Any], object]  # the call the units time (the first block's)
    turn: int = 0

    def next(self, relocate: bool) -> _BlockTimer:
        """The unit whose turn it is; with RELOCATE, built again at a new place first (the old
        one is freed here: once the new one is built beside it, or first, when the side's
        memory has no room for both)."""
        at = self.turn % len(self.timers)
        self.turn += 1
        rebuild = self.timers[at].rebuild
        if relocate and rebuild is not None:
            pad_max = rebuild.pad_max()
            if not rebuild.room_beside(self.timers[at].bytes + pad_max):
                self.timers[at] = _BlockTimer.placeholder()  # the old unit goes now
                give_back(rebuild.device)
            self.timers[at] = rebuild(pad_max)
        return self.timers[at]


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
    # Before a block of N repetitions, outside its timing: fresh inputs (kgit/measure/fresh_inputs.py).
    prepare: Callable[[int], None] = lambda _reps: None
    rebuild: _Rebuild | None = None  # this unit, at a new place (None: no device memory)
    unit_ms: float = 1.0  # time of one repetition, as last measured
    host: bool = False  # whether the last block may have timed the host
    bytes: int = 0  # device memory the unit holds

    @classmethod
    def placeholder(cls) -> _BlockTimer:
        """No unit: what stands in a unit's place while it is built again."""
        return cls(lambda _reps: (math.nan, False), 1, "none")

    def time(self, block_ms: float) -> Timing:
        reps = max(1, round(block_ms / max(self.unit_ms, 1e-4)))
        self.prepare(reps)
        return Timing.from_samples([self.measure(reps)], self.method, int(self.host))

    def measure(self, reps: int) -> float:
        """Time of one call over REPS repetitions; remembers the repetition's time."""
        elapsed, self.host = self.run(reps)
        self.unit_ms = elapsed / reps
        return elapsed / (reps * self.calls)


def _prepare_block(
    make_inputs: Callable[[], T], fn: Callable[[T], object], block_ms: float
) -> _BlockTimer:
    before = allocated()
    warm = make_inputs()
    device = device_of(warm)
    count = max(2, min(BLOCK_POOL_MAX, math.ceil(BLOCK_POOL_BYTES / max(nbytes(warm), 1))))
    if device.type != "cuda":  # a fresh input set for every call of every block
        return _cpu_block(make_inputs, fn, warm)
    torch.cuda.set_device(device)
    # Give back what a plain pass's pools left cached, so that each side's block buffers are
    # allocated from the same state, whatever that process measured before.
    give_back(device)
    warm_until_steady(fn, warm, min(block_ms, ESTIMATE_MS), torch.cuda.synchronize)
    # Two units may be alive at once (a relocation builds the new one beside the old).
    count = pool_size(count, set_footprint(warm, before), device, None, copies=2)
    make: Callable[[], _BlockTimer] = lambda: _graph_block(make_inputs, fn, count)  # noqa: E731
    try:
        timer = _measured(make)
    except torch.cuda.OutOfMemoryError:
        raise
    except Exception as exc:  # a call that syncs, or allocates outside the graph's pool, say
        torch.cuda.synchronize()
        warnings.warn(
            f"the call could not be captured in a CUDA graph ({type(exc).__name__}: {exc}); "
            "blocks time plain launches, which can time the host for short kernels",
            stacklevel=5,  # the caller of time_fn
        )
        make = lambda: _events_block(make_inputs, fn, [make_inputs() for _ in range(count)])  # noqa: E731
        timer = _measured(
            lambda: _events_block(
                make_inputs, fn, [warm, *(make_inputs() for _ in range(count - 1))]
            )
        )
    timer.rebuild = _Rebuild(make, device)
    return timer


def _measured(make: Callable[[], _BlockTimer]) -> _BlockTimer:
    """MAKE's unit, with the device memory it took."""
    before = allocated()
    timer = make()
    timer.bytes = allocated() - before
    return timer


@dataclass
class _Rebuild:
    """Builds a unit again at a new place in device memory."""

    make: Callable[[], _BlockTimer]
    device: torch.device

    def pad_max(self) -> int:
        side = budget(self.device)
        return min(RELOCATION_PAD_MAX, int(side.limit * RELOCATION_PAD_SHARE))

    def room_beside(self, unit_bytes: int) -> bool:
        """Whether a new unit of UNIT_BYTES fits beside what the side holds now."""
        side: Budget = budget(self.device)
        return side.spare >= unit_bytes

    def __call__(self, pad_max: int) -> _BlockTimer:
        # Built behind a pad of random size (while the old unit still holds its memory, where
        # the side's budget has room): the new buffers cannot land where the old ones were,
        # nor at one fixed offset from them. (The caching allocator serves them from what this
        # process already holds. Freeing the old unit and emptying the cache first, so that
        # they came fresh from the driver, moved nothing on an H200: bench/worker_pair.py,
        # docs/measured.md, "Verdicts on the H200".)
        steps = max(1, pad_max // PAD_STEP)
        pad = torch.empty(
            _placement.randrange(steps) * PAD_STEP, dtype=torch.uint8, device=self.device
        )
        fresh = _measured(self.make)
        fresh.keep.append(pad)
        fresh.rebuild = self
        return fresh


def _cpu_block(make_inputs: Callable[[], T], fn: Callable[[T], object], warm: T) -> _BlockTimer:
    """One call a repetition, each on a set of its own made before the block: no call of any
    block sees inputs another call saw (a kernel that memoised its outputs on a few sampled
    values of its inputs read +148% when blocks replayed two sets)."""
    sets = [warm]

    def prepare(reps: int) -> None:
        reseed()
        sets[:] = [make_inputs() for _ in range(reps)]

    def run(reps: int) -> tuple[float, bool]:
        start = time.perf_counter()
        for index in range(reps):
            fn(sets[index % len(sets)])
        return (time.perf_counter() - start) * 1e3, False

    timer = _BlockTimer(run, 1, "block-perf_counter", [sets], prepare=prepare)
    timer.measure(1)  # the estimate of one repetition, on the warm-up's set
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
    # The calls a checker keeps are this graph's, freed with its unit (_KeepOne.new_capture).
    new_capture, replaying = getattr(fn, "new_capture", None), getattr(fn, "replaying", None)
    calls = new_capture() if new_capture is not None else None
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
        if replaying is not None:
            replaying(calls)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            graph.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end), False

    timer = _BlockTimer(run, len(pool), "block-cuda-graph", [pool, graph, stream, calls])
    timer.measure(1)
    timer.prepare = fresh_inputs(make_inputs, pool)
    return timer


def _events_block(
    make_inputs: Callable[[], T], fn: Callable[[T], object], pool: list[T]
) -> _BlockTimer:
    host_ms = [0.05]  # host time to queue one call, as last measured

    def run(reps: int) -> tuple[float, bool]:
        calls = reps * len(pool)
        torch.cuda.synchronize()
        gpu_sleep(LEAD_MARGIN * host_ms[0] * calls + 0.05)
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
    timer.prepare = fresh_inputs(make_inputs, pool)
    return timer
