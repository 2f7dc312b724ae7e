"""What plain timing (kgit/measure/timing.py) and block mode (kgit/measure/timing_blocks.py)
share: the `Timing` result, an input set's size and device, the input pool's size, the warm-up
and the GPU sleep that leads a host-bound loop.

The underscored names are the timing modules' own: nothing outside kgit/measure/timing*.py reads
them.
"""

from __future__ import annotations

import math
import statistics
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import torch

from kgit.measure.budget import budget, gib, memory_share

T = TypeVar("T")


# Input pools fit in what this side's budget leaves (kgit/measure/budget.py), never past the cap.
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
    # One timed call's (inputs, output), drawn at random, for a check of what timed calls
    # produced (kgit/measure/fwdbwd.py); None where nothing was kept.
    kept: object = field(default=None, compare=False, repr=False)

    @classmethod
    def passed_over(cls) -> Timing:
        """No figure: a block whose verdict reads none of this call's columns (`passes_over`)."""
        return cls(math.nan, math.nan, math.nan, (), "passed over")

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


def device_of(inputs: object) -> torch.device:
    for tensor in _tensors(inputs):
        if tensor.device.type == "cuda":
            return tensor.device
    return torch.device("cpu")


def allocated() -> int:
    """Device memory this process's tensors hold now (0 before CUDA is used, and on CPU)."""
    return torch.cuda.memory_allocated() if torch.cuda.is_available() else 0


def set_footprint(inputs: object, allocated_before: int) -> int:
    """Device bytes one input set really holds, measured after a warm-up on it: a backward's
    set holds its forward graph's saved tensors and, once called, its inputs' gradients, which
    its tensors' own size leaves out (an RMSNorm backward set at 32768x8192 bf16: 1 GiB by its
    tensors, 2 GiB on the card)."""
    return max(nbytes(inputs), allocated() - allocated_before)


def pool_size(
    repeats: int, set_bytes: int, device: torch.device, budget_bytes: int | None, copies: int = 1
) -> int:
    """Input sets in a pool: REPEATS when they fit, else what fits in BUDGET_BYTES (default: this
    side's spare device memory, less room for one more set, shared by COPIES pools alive at
    once), with a warning when that is under MIN_POOL."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    if budget_bytes is None:
        if device.type != "cuda":
            return repeats
        side = budget(device)
        room = min(POOL_BYTES_CAP, (side.spare - set_bytes) // copies)
        fits = max(0, room) // max(set_bytes, 1)
        if fits < min(repeats, MIN_POOL):
            warnings.warn(
                f"memory short: {max(1, fits)} input set(s) of {gib(set_bytes)} where "
                f"{min(repeats, MIN_POOL)} were wanted: this side may hold {gib(side.limit)} "
                f"({memory_share():g} of the card's {gib(side.total)}; {gib(side.free)} free) "
                f"and holds {gib(side.allocated)}",
                stacklevel=4,
            )
            return max(1, min(repeats, fits))
        return min(repeats, fits)
    fits = budget_bytes // max(set_bytes, 1)
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


def warm_until_steady(
    fn: Callable[[T], object], inputs: T, warmup_ms: float, sync: Callable[[], None]
) -> _WarmUp:
    # The first call may compile or autotune; the clock only counts once that is over. Batches
    # double so a 5 us kernel and a 50 ms kernel both reach the target without a sync per call,
    # up to QUEUED_CALLS: a batch that fills the driver's launch queue blocks the host on the
    # GPU, and the host would then read as slow as the GPU whatever its own cost.
    # The estimate is the fastest batch's time per call: a batch the host was preempted in reads
    # slow (and would cut the samples short), none reads fast.
    fn(inputs)
    sync()
    start = time.perf_counter()
    batch, host_ms, wall_ms = 1, math.inf, math.inf
    while True:
        batch_start = time.perf_counter()
        for _ in range(batch):
            fn(inputs)
        host_s = time.perf_counter() - batch_start
        sync()
        wall_s = time.perf_counter() - batch_start
        if wall_s * 1e3 / batch < wall_ms:
            host_ms, wall_ms = host_s * 1e3 / batch, wall_s * 1e3 / batch
        if (time.perf_counter() - start) * 1e3 >= warmup_ms:
            return _WarmUp(host_ms, wall_ms)
        batch = min(batch * 2, QUEUED_CALLS)


def gpu_sleep(ms: float) -> None:
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is not None:
        sleep(int(ms * GPU_CYCLES_PER_MS))
