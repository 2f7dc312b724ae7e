"""Issue 13's done-when: `kgit gate audit` on the bundled RMSNorm example (Triton's interpreter on
CPU) reports the surviving mutants of a deliberately weak gate, with file and line; the example's
own gate catches the bug the demo's round 3 plants (a mean over the padded block width)."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from kgit.resources import examples_dir
from tests.conftest import git, run_kgit

# The weak gate: it runs the kernel, and checks only what it returns is shaped and typed right.
WEAK_TEST = """\
import rmsnorm_kernel
import torch


def test_shapes_and_dtypes() -> None:
    x, w = torch.randn(8, 64), torch.ones(64)
    y = rmsnorm_kernel.rmsnorm(x, w)
    assert y.shape == x.shape and y.dtype == x.dtype
"""


@pytest.fixture
def rmsnorm_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = tmp_path / "rmsnorm"
    repo.mkdir()
    for name in ("rmsnorm_kernel.py", "test_rmsnorm.py", "bench_rmsnorm.py"):
        shutil.copy(examples_dir() / "rmsnorm" / name, repo / name)
    (repo / "test_weak.py").write_text(WEAK_TEST)
    (repo / ".gitignore").write_text("__pycache__/\n.pytest_cache/\nmanifest.yaml\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "the example RMSNorm, its tests, a weak test, its harness")
    monkeypatch.chdir(repo)
    return repo


def _init(repo: Path, name: str, test_file: str) -> None:
    manifest = {
        "target_op": "rmsnorm",
        "target_backend": "TRITON",
        "primary_metric": "Forward GB/s",
        "kernel_source": ["rmsnorm_kernel.py"],
        "test_command": f"{sys.executable} -m pytest -q -p no:cacheprovider {test_file}",
        "quick_command": f"{sys.executable} bench_rmsnorm.py",
        "target_shapes": [{"label": "r32x256", "M": 32, "N": 256}],
    }
    (repo / "manifest.yaml").write_text(json.dumps(manifest))
    assert run_kgit("init", name, "-m", "manifest.yaml").code == 0


@pytest.mark.slow
def test_a_weak_gate_on_the_rmsnorm_example_lets_mutants_survive(rmsnorm_repo: Path) -> None:
    _init(rmsnorm_repo, "weak", "test_weak.py")
    result = run_kgit("-c", "weak", "gate", "audit", "--max", "3", "--json")
    assert result.code == 0, result
    data = json.loads(result.out)
    survivors = [m for m in data["mutants"] if m["outcome"] == "survived"]
    assert survivors, data
    assert all(re.fullmatch(r"rmsnorm_kernel\.py:\d+", m["where"]) for m in survivors)
    # The padded-width denominator (the demo's round-3 bug) is drawn first, and passes this gate.
    first = data["mutants"][0]
    assert first["kind"] == "denominator" and first["mutation"] == "`/ N` -> `/ BLOCK_N`"
    assert first["outcome"] == "survived"
    assert f"{first['where']}  denominator  `/ N` -> `/ BLOCK_N`" in result.err
    assert "WARNING" in result.err and "SURVIVED the gate" in result.err
    # The CPU shapes are powers of two and multiples of BLOCK_M: no tail is measured either.
    assert "no target shape exercises a tail" in result.err


@pytest.mark.slow
def test_the_examples_own_gate_catches_the_padded_width_bug(rmsnorm_repo: Path) -> None:
    _init(rmsnorm_repo, "real", "test_rmsnorm.py")
    result = run_kgit("-c", "real", "gate", "audit", "--max", "1", "--json")
    assert result.code == 0, result
    (mutant,) = json.loads(result.out)["mutants"]
    assert mutant["kind"] == "denominator" and mutant["outcome"] == "caught"
    assert mutant["caught_by"].startswith("test_rmsnorm.py::test_fp32_matches_float64[13-100]")
