from __future__ import annotations

import math
import subprocess
import sys

import pytest
import torch

from kgit.measure.correctness import (
    allclose,
    check_written,
    first_mismatch,
    poisoned_allocations,
    poisoned_like,
    reference_dtype,
    snr_db,
    snr_threshold_db,
    tolerances,
)


def test_snr_of_known_noise() -> None:
    ref = torch.tensor([3.0, 4.0])  # energy 25
    out = ref + torch.tensor([0.3, 0.4])  # noise energy 0.25: ratio 100
    assert snr_db(out, ref) == pytest.approx(20.0)
    assert snr_db(ref * 1.5, ref) == pytest.approx(10 * math.log10(4))


def test_snr_is_computed_in_float64() -> None:
    ref = torch.ones(1000, dtype=torch.float64)
    out = ref + 1e-9  # below fp32 resolution at 1.0: a float32 computation would say "exact"
    assert snr_db(out, ref) == pytest.approx(180.0, abs=0.01)


def test_exact_is_inf_and_nan_never_passes() -> None:
    ref = torch.randn(16)
    assert snr_db(ref.clone(), ref) == math.inf
    out = ref.clone()
    out[3] = math.nan
    assert snr_db(out, ref) == -math.inf
    out[3] = math.inf
    assert snr_db(out, ref) < snr_threshold_db(torch.float8_e5m2)


def test_snr_rejects_mismatched_shapes() -> None:
    with pytest.raises(ValueError, match="shape mismatch"):
        snr_db(torch.zeros(3), torch.zeros(4))


def test_poisoned_output_catches_an_unwritten_element() -> None:
    ref = torch.randn(8, 8)
    out = poisoned_like(ref)
    out.view(-1)[:-1] = ref.view(-1)[:-1]  # a kernel that misses the last element
    assert not check_written(out)
    assert snr_db(out, ref) == -math.inf
    out.view(-1)[-1] = ref.view(-1)[-1]
    assert check_written(out) and snr_db(out, ref) == math.inf


def test_poisoned_allocations_reach_buffers_an_op_allocates_and_restore() -> None:
    with poisoned_allocations():
        assert torch.isnan(torch.empty(64)).all()
        assert torch.isnan(torch.empty_like(torch.ones(3, dtype=torch.float16))).all()
    assert not torch.are_deterministic_algorithms_enabled()


POISON_IN_A_FRESH_PROCESS = """
import sys, torch
from kgit.measure.correctness import poisoned_allocations
with poisoned_allocations():
    assert torch.are_deterministic_algorithms_enabled()
    assert torch.is_deterministic_algorithms_warn_only_enabled()
    assert torch.isnan(torch.empty(8)).all()
assert not torch.are_deterministic_algorithms_enabled()
print(sorted(m for m in sys.modules if m.startswith(("torch._inductor", "torch._dynamo"))))
"""


def test_poisoning_does_not_import_the_compiler() -> None:
    # torch.use_deterministic_algorithms imports torch._inductor (torch._dynamo, sympy): seconds
    # of every harness process's first shape, measured on an H200 host.
    out = subprocess.run(
        [sys.executable, "-c", POISON_IN_A_FRESH_PROCESS], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_poisoning_keeps_a_loaded_inductor_config_in_step() -> None:
    import torch._inductor.config as inductor_config

    with poisoned_allocations():
        assert inductor_config.deterministic
    assert not inductor_config.deterministic
    assert not torch.are_deterministic_algorithms_enabled()


def test_poisoning_needs_a_floating_type() -> None:
    with pytest.raises(TypeError):
        poisoned_like(torch.zeros(3, dtype=torch.int32))


def test_thresholds_and_tolerances() -> None:
    assert snr_threshold_db(torch.float8_e4m3fn) == 25.0
    assert snr_threshold_db(torch.float8_e5m2) == 20.0
    assert snr_threshold_db(torch.float4_e2m1fn_x2) == 10.0
    assert (
        snr_threshold_db(torch.bfloat16)
        < snr_threshold_db(torch.float16)
        < snr_threshold_db(torch.float32)
    )
    assert tolerances(torch.bfloat16) == (1e-2, 1e-2)
    assert tolerances(torch.float32) == (1e-4, 1e-4)
    with pytest.raises(ValueError):
        snr_threshold_db(torch.int8)


def test_allclose_uses_dtype_tolerances() -> None:
    ref = torch.ones(4, dtype=torch.float64)
    assert allclose((ref + 5e-3).to(torch.bfloat16), ref)
    assert not allclose((ref + 5e-3).float(), ref)
    nan = ref.clone().float()
    nan[0] = math.nan
    assert not allclose(nan, ref)


def test_reference_precision() -> None:
    assert reference_dtype("cpu") == torch.float64
    assert reference_dtype("cuda") == torch.float32


def test_first_mismatch_names_the_element_a_user_can_look_up() -> None:
    ref = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    out = ref.clone()
    out[2, 1] = math.nan
    out[1, 3] = 100.0
    assert first_mismatch(out, ref) == "first mismatch at (1, 3): got 100, expected 7"
    close = ref + 1e-6 * torch.arange(12).reshape(3, 4)  # every element within tolerance
    assert first_mismatch(close, ref).startswith(
        "every element within rtol=0.0001 atol=0.0001; largest difference at (2, 3): got 11"
    )
