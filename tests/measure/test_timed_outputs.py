"""What timed calls produced is checked (issue 27, item 1): a kernel that told a timed call from a
checked one (here by its caller; a call count or a capturing stream would do) computed a cheaper,
wrong result only when timed, and every check around the timing saw the honest path (accepted
at +229%). The timing keeps one timed call's output, drawn at random, and the row FAILs on it."""

from __future__ import annotations

import sys
import warnings

import pytest
import torch

from kgit.measure.correctness import snr_threshold_db
from kgit.measure.harness import Settings
from kgit.measure.memory import memory_row


def _reference(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def _timed() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name in ("_time_cpu", "_cpu_block"):
            return True
        frame = frame.f_back
    return False


def _knows_when_timed(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    if _timed():
        return x * w  # no normalisation: cheaper and wrong
    return _reference(x, w)


def _bytes(m: int, n: int, size: int) -> tuple[int, int]:
    return 2 * m * n * size, 3 * m * n * size


def _row(op: object) -> dict[str, object]:
    settings = Settings(torch.device("cpu"), repeats=5)
    shape = {"label": "r64x256", "M": 64, "N": 256}
    return memory_row(shape, settings, op, reference=_reference, bytes_moved=_bytes)  # type: ignore[arg-type]


def test_a_kernel_wrong_only_when_timed_fails_its_shape() -> None:
    with pytest.warns(UserWarning, match="a timed call's output has out SNR"):
        row = _row(_knows_when_timed)
    assert row["Check"] == "FAIL", row
    assert float(row["out_snr"]) < snr_threshold_db(torch.float32)  # type: ignore[arg-type]


def test_an_honest_kernel_passes_with_its_timed_output_checked() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning of any kind
        row = _row(_reference)
    assert row["Check"] == "PASS", row
