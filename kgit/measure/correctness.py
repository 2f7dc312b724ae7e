"""Correctness checks a harness runs before it times anything: SNR, tolerances, poisoned outputs.

SNR = 10·log10(‖ref‖² / ‖out − ref‖²) in dB, computed in float64. A NaN or inf anywhere in the
output never passes, which is what makes poisoning work: an output buffer filled with NaN before
the kernel runs fails the check if the kernel leaves any element unwritten.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import torch

# Seed thresholds for low precision. For 16- and 32-bit types the floor sits well under what
# rounding alone gives (about 52 dB for a bf16 output, 70 dB for fp16, 65 dB for fp32 through
# TF32 tensor cores) and well over what a real bug gives (a skipped K-block or a wrong tile is
# typically under 20 dB).
_SNR_THRESHOLDS_DB: dict[str, float] = {
    "float8_e4m3fn": 25.0,
    "float8_e4m3fnuz": 25.0,
    "float8_e5m2": 20.0,
    "float8_e5m2fnuz": 20.0,
    "float4_e2m1fn_x2": 10.0,
    "bfloat16": 30.0,
    "float16": 35.0,
    "float32": 50.0,
    "float64": 100.0,
}

_TOLERANCES: dict[str, tuple[float, float]] = {
    "bfloat16": (1e-2, 1e-2),
    "float16": (1e-2, 1e-2),
    "float32": (1e-4, 1e-4),
    "float64": (1e-7, 1e-7),
}


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


# SNR sums run over chunks of this many elements: float64 copies of a whole 32768x8192 output
# and its reference (and their difference, squared) took 8 GiB of the card for a 512 MiB tensor.
SNR_CHUNK = 1 << 24


def snr_db(out: torch.Tensor, ref: torch.Tensor) -> float:
    """Signal-to-noise ratio of `out` against `ref` in dB: inf when exact, -inf when non-finite."""
    if out.shape != ref.shape:
        raise ValueError(f"shape mismatch: out {tuple(out.shape)} vs ref {tuple(ref.shape)}")
    flat_out, flat_ref = out.detach().reshape(-1), ref.detach().reshape(-1)
    noise = signal = 0.0
    for start in range(0, flat_out.numel(), SNR_CHUNK):
        out64 = flat_out[start : start + SNR_CHUNK].to(torch.float64)
        ref64 = flat_ref[start : start + SNR_CHUNK].to(device=out64.device, dtype=torch.float64)
        if not bool(torch.isfinite(out64).all()):
            return -math.inf
        noise += float(((out64 - ref64) ** 2).sum())
        signal += float((ref64**2).sum())
    if noise == 0.0:
        return math.inf
    if signal == 0.0:
        return -math.inf
    return 10.0 * math.log10(signal / noise)


def first_mismatch(out: torch.Tensor, ref: torch.Tensor) -> str:
    """Where OUT first leaves REF, as a user can look it up: `at (3, 17): got 0.5, expected
    1.25`. The first element that is not finite or is outside `tolerances` of OUT's dtype (a
    loose 0.1 for the types it has none for); where every element is within them (a low SNR
    from many small errors), the element of the largest difference. In chunks, like `snr_db`."""
    rtol, atol = _TOLERANCES.get(_name(out.dtype), (0.1, 0.1))
    flat_out, flat_ref = out.detach().reshape(-1), ref.detach().reshape(-1)
    worst, worst_at = -1.0, 0
    for start in range(0, flat_out.numel(), SNR_CHUNK):
        out64 = flat_out[start : start + SNR_CHUNK].to(torch.float64)
        ref64 = flat_ref[start : start + SNR_CHUNK].to(device=out64.device, dtype=torch.float64)
        bad = ~torch.isclose(out64, ref64, rtol=rtol, atol=atol) | ~torch.isfinite(out64)
        if bool(bad.any()):
            at = start + int(bad.nonzero()[0, 0])
            return _element("first mismatch", out, flat_out, flat_ref, at)
        diff = (out64 - ref64).abs()
        if diff.numel() and float(diff.max()) > worst:
            worst, worst_at = float(diff.max()), start + int(diff.argmax())
    if worst < 0:
        return "no element to compare"
    return _element(
        f"every element within rtol={rtol:g} atol={atol:g}; largest difference",
        out,
        flat_out,
        flat_ref,
        worst_at,
    )


def _element(
    what: str, out: torch.Tensor, flat_out: torch.Tensor, flat_ref: torch.Tensor, at: int
) -> str:
    index = []
    rest = at
    for size in reversed(out.shape):
        rest, i = divmod(rest, size)
        index.append(i)
    where = ", ".join(str(i) for i in reversed(index))
    got, expected = float(flat_out[at]), float(flat_ref[at])
    return f"{what} at ({where}): got {got:.6g}, expected {expected:.6g}"


def snr_threshold_db(dtype: torch.dtype) -> float:
    """The SNR (dB) a result computed in `dtype` must exceed to pass."""
    try:
        return _SNR_THRESHOLDS_DB[_name(dtype)]
    except KeyError:
        raise ValueError(f"no SNR threshold for {dtype}") from None


def tolerances(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing a result computed in `dtype` with its reference."""
    try:
        return _TOLERANCES[_name(dtype)]
    except KeyError:
        raise ValueError(f"no tolerances for {dtype}") from None


def allclose(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype | None = None) -> bool:
    """`torch.allclose` with the tolerances of `dtype` (default: out's); NaN never passes."""
    rtol, atol = tolerances(dtype or out.dtype)
    ref_cast = ref.detach().to(device=out.device, dtype=torch.float64)
    return bool(torch.allclose(out.detach().to(torch.float64), ref_cast, rtol=rtol, atol=atol))


def reference_dtype(device: torch.device | str) -> torch.dtype:
    """The precision a reference is computed in: float64 on CPU; float32 on GPUs, where float64
    matmul is slow enough to dominate a harness run."""
    return torch.float64 if torch.device(device).type == "cpu" else torch.float32


def poisoned_like(tensor: torch.Tensor) -> torch.Tensor:
    """An uninitialised-looking output buffer: NaN everywhere, so an unwritten element fails."""
    if not tensor.dtype.is_floating_point:
        raise TypeError(f"cannot poison {tensor.dtype}: only floating types hold NaN")
    return torch.full_like(tensor, math.nan)


def check_written(out: torch.Tensor) -> bool:
    """True when every element of a poisoned output was overwritten with a finite value."""
    return bool(torch.isfinite(out).all())


@contextmanager
def poisoned_allocations() -> Iterator[None]:
    """Inside this block, `torch.empty` and friends return NaN-filled memory.

    This poisons the buffers a kernel's wrapper allocates for itself (its output, its grads),
    which `poisoned_like` cannot reach. It rides on PyTorch's deterministic mode in warn-only
    form, so no op is refused; the previous settings come back on exit.
    """
    was_on = torch.are_deterministic_algorithms_enabled()
    was_warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    was_filling = torch.utils.deterministic.fill_uninitialized_memory  # type: ignore[attr-defined]
    _deterministic(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True  # type: ignore[attr-defined]
    try:
        yield
    finally:
        torch.utils.deterministic.fill_uninitialized_memory = was_filling  # type: ignore[attr-defined]
        _deterministic(was_on, warn_only=was_warn_only)


def _deterministic(mode: bool, *, warn_only: bool) -> None:
    """`torch.use_deterministic_algorithms`, without importing torch._inductor when nothing has.

    The public call imports torch._inductor (and with it torch._dynamo and sympy) only to copy
    the flag into inductor's config: seconds of every harness process's first shape (2-3 s here
    with bytecode cached, ~5 s on a host without it), for a compiler this process does not run.
    Where inductor is loaded, or torch lacks the private setter, the public call keeps both in
    step."""
    setter = getattr(torch._C, "_set_deterministic_algorithms", None)
    if setter is None or "torch._inductor.config" in sys.modules:
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)
    else:
        setter(mode, warn_only=warn_only)
