"""Forward + backward of a differentiable op: its SNR against a reference, and its timings.

Correctness runs first, on its own inputs, with every buffer the op allocates poisoned. Timing
then uses fresh inputs per timed call (see `time_fn`); the backward pool holds one forward graph
per timed call, built before any timing starts.
"""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from kgit.measure.correctness import first_mismatch, poisoned_allocations, reference_dtype, snr_db
from kgit.measure.timing import Timing, once_per_shape, passes_over, time_fn

Op = Callable[..., torch.Tensor]
MakeInputs = Callable[[], list[torch.Tensor]]


@dataclass(frozen=True)
class Rate:
    """A throughput at the median time, and the population stddev of per-sample throughputs."""

    value: float
    std: float


def rate(work: float, timing: Timing, per_ms: Callable[[float, float], float]) -> Rate:
    """`per_ms(work, ms)` at the median time, and its spread over the timed samples."""
    per_sample = [per_ms(work, ms) for ms in timing.samples]
    if not per_sample:  # a call passed over in a block
        return Rate(math.nan, math.nan)
    return Rate(per_ms(work, timing.median_ms), statistics.pstdev(per_sample))


def _leaves(inputs: Sequence[torch.Tensor], dtype: torch.dtype | None = None) -> list[torch.Tensor]:
    return [x.detach().to(dtype or x.dtype).clone().requires_grad_(True) for x in inputs]


def forward_backward_snr(
    op: Op,
    reference: Op,
    inputs: Sequence[torch.Tensor],
    *,
    threshold_db: float | None = None,
    names: Sequence[str] = (),
) -> list[float]:
    """SNR (dB) of the output, then of each input's gradient, against `reference` run in the
    device's reference precision on the same values and the same output gradient. A measuring
    resident harness checks each shape once: its later blocks time the same kernel.

    With THRESHOLD_DB, each result under it is explained in a warning (the harness prints it
    under the shape's label): its SNR and where it first differs from the reference, named by
    NAMES (`out_snr`, `dx_snr`, ...) where given. A FAIL row's figures are NaN: without this,
    a failed check said nothing of what failed."""
    return once_per_shape(lambda: _forward_backward_snr(op, reference, inputs, threshold_db, names))


def _forward_backward_snr(
    op: Op,
    reference: Op,
    inputs: Sequence[torch.Tensor],
    threshold_db: float | None,
    names: Sequence[str],
) -> list[float]:
    leaves = _leaves(inputs)
    with poisoned_allocations():
        out = op(*leaves)
        grad_out = torch.randn(out.shape, device=out.device).to(out.dtype)
        out.backward(grad_out)
    ref_dtype = reference_dtype(out.device)
    ref_leaves = _leaves(inputs, ref_dtype)
    ref_out = reference(*ref_leaves)
    ref_out.backward(grad_out.to(ref_dtype))
    pairs: list[tuple[torch.Tensor | None, torch.Tensor | None]] = [(out, ref_out)]
    pairs += [(leaf.grad, ref.grad) for leaf, ref in zip(leaves, ref_leaves, strict=True)]
    snrs = [-math.inf if got is None or want is None else snr_db(got, want) for got, want in pairs]
    if threshold_db is not None:
        for i, ((got, want), snr) in enumerate(zip(pairs, snrs, strict=True)):
            if snr < threshold_db:
                name = names[i] if i < len(names) else ("out" if i == 0 else f"input {i}'s grad")
                _explain_failure(name, snr, threshold_db, got, want)
    return snrs


def _explain_failure(
    name: str, snr: float, threshold_db: float, got: torch.Tensor | None, want: torch.Tensor | None
) -> None:
    if got is None or want is None:
        where = "no gradient" + (" from the kernel" if got is None else " from the reference")
    else:
        where = first_mismatch(got, want)
    warnings.warn(
        f"check FAIL: {name} {snr:.1f} dB, under the {threshold_db:g} dB it needs; {where}",
        stacklevel=3,
    )


def wrong_after_timing(
    op: Op, reference: Op, inputs: Sequence[torch.Tensor], threshold_db: float
) -> float | None:
    """The SNR (dB) of one more call's output, on fresh INPUTS after the shape was timed, when it
    is under THRESHOLD_DB (with a warning that says what that means); None when it passes.

    The check before timing sees a shape's first call; this one sees a call like the timed ones,
    after them, with nothing poisoned: a result kept from an earlier call (a cache keyed on the
    shapes) or work skipped once the kernel is "warm" (a call counter) fails here, under the
    physical floor as well as over it."""
    snr = once_per_shape(lambda: _output_snr(op, reference, inputs))
    if snr >= threshold_db:
        return None
    warnings.warn(
        f"a call after timing, on fresh inputs, has out SNR {snr:.1f} dB (under "
        f"{threshold_db:g}) where the first call passed: the kernel returns a result kept "
        "from an earlier call, or skips work once warm",
        stacklevel=2,
    )
    return snr


def _output_snr(op: Op, reference: Op, inputs: Sequence[torch.Tensor]) -> float:
    out = op(*_leaves(inputs))
    ref_out = reference(*_leaves(inputs, reference_dtype(out.device)))
    return snr_db(out, ref_out)


class _KeepOne:
    """CALL, keeping one call's (inputs, output) drawn at random from the system's random source
    (nothing in the process can predict it): among the calls captured into a CUDA graph once
    there are any (those its replays run, drawn again for every block), else among the calls
    made since `new_block` (reservoir sampling).

    A kernel that tells a timed call from a checked one (its caller, a call count, a capturing
    stream) and computes a cheaper, wrong result only when timed passed every check around the
    timing, which ran the honest path (accepted at +229%). The kept output is one a timed call
    produced; in block mode, one of the block just timed, on its fresh inputs."""

    def __init__(self, call: Callable[[list[torch.Tensor]], torch.Tensor]) -> None:
        self.call, self.seen = call, 0
        self.captured: list[tuple[list[torch.Tensor], torch.Tensor]] = []
        self.drawn: tuple[list[torch.Tensor], torch.Tensor] | None = None
        self._draw = random.SystemRandom()
        self._cuda = torch.cuda.is_available() and torch.cuda.is_initialized()

    def __call__(self, inputs: list[torch.Tensor]) -> torch.Tensor:
        out = self.call(inputs)
        if self._cuda and torch.cuda.is_current_stream_capturing():
            self.captured.append((inputs, out))
        elif not self.captured:
            self.seen += 1
            if self._draw.randrange(self.seen) == 0:
                self.drawn = (inputs, out)
        return out

    def new_block(self) -> None:
        """A block starts: what is kept comes from its calls."""
        self.seen, self.drawn = 0, None

    def new_capture(self) -> list[tuple[list[torch.Tensor], torch.Tensor]]:
        """A CUDA graph is about to be captured: the calls kept are its own from now on, in a
        list its unit holds (`replaying` brings it back). Appended to one list, every rebuilt
        unit's calls stayed referenced here: each relocation of an RMSNorm unit at 32768x8192
        kept its old pool's inputs and outputs alive, and a side planned for 19.8 GiB held 36 GiB
        after a few dozen blocks (3 of 12 unchanged rounds ran out of memory on an H100)."""
        self.captured = []
        return self.captured

    def replaying(self, calls: list[tuple[list[torch.Tensor], torch.Tensor]]) -> None:
        """The unit whose graph captured CALLS is the one timed now."""
        self.captured = calls

    @property
    def kept(self) -> tuple[list[torch.Tensor], torch.Tensor] | None:
        return self._draw.choice(self.captured) if self.captured else self.drawn


def time_forward(op: Op, make_inputs: MakeInputs, *, repeats: int, warmup_ms: float) -> Timing:
    """Forward time as in a training step: inputs require grad, so autograd records the call.
    NaN in a block whose verdict reads no forward column. The timing keeps one timed call's
    inputs and output (`kept`) for `wrong_when_timed`."""
    if passes_over("Forward"):
        return Timing.passed_over()

    def make() -> list[torch.Tensor]:
        return _leaves(make_inputs())

    keep = _KeepOne(lambda xs: op(*xs))
    timing = time_fn(make, keep, repeats=repeats, warmup_ms=warmup_ms)
    # In a later block the unit times the first block's call: its kept call is the timing's.
    return dataclasses.replace(timing, kept=keep.kept if keep.kept is not None else timing.kept)


def wrong_when_timed(timing: Timing, reference: Op, threshold_db: float) -> float | None:
    """The SNR (dB) of the output one timed call produced (kept by `time_forward`, drawn at
    random) against REFERENCE on that call's inputs, when it is under THRESHOLD_DB (with a
    warning that says what that means); None when it passes or nothing was kept."""
    if not isinstance(timing.kept, tuple):
        return None
    inputs, out = timing.kept
    with torch.no_grad():
        ref_out = reference(*_leaves(inputs, reference_dtype(out.device)))
        snr = snr_db(out.detach(), ref_out)
    if snr >= threshold_db:
        return None
    warnings.warn(
        f"a timed call's output has out SNR {snr:.1f} dB (under {threshold_db:g}) where the "
        "checked calls passed: the kernel computes something else when it is timed",
        stacklevel=2,
    )
    return snr


def time_backward(op: Op, make_inputs: MakeInputs, *, repeats: int, warmup_ms: float) -> Timing:
    """Backward time: each timed call runs the backward of its own forward graph, through
    `torch.autograd.grad` (gradients returned, never accumulated into `.grad`). NaN in a block
    whose verdict reads no backward column.

    `out.backward()` stored the gradients in the inputs' `.grad`; a kernel whose backward
    writes them into its saved inputs and returns those (Liger-Kernel's SwiGLU) made `.grad`
    alias the inputs' own storage, and the warm-up's next backward of the same graph, adding
    into it in place, raised in autograd: every shape FAILed at baseline."""
    if passes_over("Backward"):
        return Timing.passed_over()

    def make() -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
        leaves = _leaves(make_inputs())
        out = op(*leaves)
        return out, torch.randn_like(out), leaves

    def backward(unit: tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]) -> None:
        out, grad_out, leaves = unit
        # retain_graph lets the warm-up replay the same graph; timed calls each have their own.
        torch.autograd.grad(out, leaves, grad_out, retain_graph=True, allow_unused=True)

    return time_fn(make, backward, repeats=repeats, warmup_ms=warmup_ms)
