"""Whole campaigns on real open-source Triton kernels, in their own repository layouts.

Each folder under `projects/` is a user's repository as kgit meets it: a kernel vendored from
an open-source project (its licence and NOTICE beside it), the project's own tests in a
`tests/` folder with a conftest.py, pytest told where they are (a pyproject.toml or a
pytest.ini), and a quick harness built on kgit.measure. Here each is copied into a fresh git
repository and taken through init, baseline and one round by the CLI, as a user types it, with
every default on (the interleaved policy, the gate audit): on CPU, Triton's interpreter runs
the kernels (TRITON_INTERPRET=1). `bench/realworld.py` runs the same campaigns on a GPU.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from kgit.records.notes import ACCEPTING

PROJECTS = Path(__file__).resolve().parent / "projects"


@dataclass(frozen=True)
class RealCampaign:
    """A vendored project, its campaign's manifest fields and the round played on it."""

    folder: str
    op: str
    kernel: str
    test_command: str  # after the python executable
    quick_command: str  # after the python executable
    cpu_shapes: list[dict[str, object]]
    hypothesis: str
    edit: tuple[str, str]  # lines of the kernel, and what replaces them wherever they are


def _rows(op: str, sizes: list[tuple[int, int]]) -> list[dict[str, object]]:
    return [{"label": f"{op}_{m}x{n}", "M": m, "N": n, "dtype": "fp32"} for m, n in sizes]


SOFTMAX = RealCampaign(
    folder="liger_softmax",
    op="softmax",
    kernel="src/liger_kernel/ops/softmax.py",
    # A bare pytest: the folder comes from pyproject.toml's testpaths.
    test_command="-m pytest -q",
    quick_command="benchmark/quick_softmax.py",
    # Rows past 65536 columns take the multi-block kernels, the others the single-block ones.
    cpu_shapes=_rows("softmax", [(8, 1000), (16, 4096), (2, 70000)]),
    hypothesis="multi-block rows in 16K tiles: less masked padding in a row's last tile",
    edit=("MAX_FUSED_SIZE = 65536", "MAX_FUSED_SIZE = 16384"),
)

SWIGLU = RealCampaign(
    folder="liger_swiglu",
    op="swiglu",
    kernel="liger_kernel/ops/swiglu.py",
    # The test folder named on the command line (pytest.ini says no testpaths).
    test_command="-m pytest -q tests",
    quick_command="bench_swiglu.py",
    cpu_shapes=_rows("swiglu", [(4, 512), (8, 2000), (16, 8192)]),
    # A GPU knob: Triton's interpreter ignores num_warps, so on CPU this round is an A/A test.
    hypothesis="half the warps per row: more rows resident per SM",
    edit=(
        "    BLOCK_SIZE, num_warps = calculate_settings(n_cols)\n",
        "    BLOCK_SIZE, num_warps = calculate_settings(n_cols)\n    num_warps = max(num_warps // 2, 1)\n",
    ),
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or "CONFIG" in k}
    env["TRITON_INTERPRET"] = "1"  # a CPU machine: Triton's interpreter runs the kernels
    return env


def _run(repo: Path, *args: str, expect: int | None = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=repo, env=_env(), capture_output=True, text=True, timeout=900)
    if expect is not None:
        assert done.returncode == expect, f"{shlex.join(args)}\n{done.stdout}\n{done.stderr}"
    return done


def _kgit(repo: Path, *args: str, expect: int | None = 0) -> subprocess.CompletedProcess[str]:
    return _run(repo, sys.executable, "-m", "kgit", *args, expect=expect)


def _project_repo(campaign: RealCampaign, tmp_path: Path) -> Path:
    repo = tmp_path / campaign.folder
    shutil.copytree(PROJECTS / campaign.folder, repo, ignore=shutil.ignore_patterns("__pycache__"))
    _run(repo, "git", "init", "-q")
    _run(repo, "git", "add", ".")
    _run(repo, "git", "commit", "-q", "-m", f"vendored {campaign.op} kernel, tests and harness")
    return repo


def _manifest(campaign: RealCampaign, path: Path) -> Path:
    python = shlex.quote(sys.executable)
    manifest = {
        "target_op": campaign.op,
        "target_backend": "TRITON",
        "target_lang": "triton",
        "target_gpu": "CPU (Triton interpreter)",
        "primary_metric": "Forward GB/s",
        "kernel_source": [campaign.kernel],
        "test_command": f"{python} {campaign.test_command}",
        "quick_command": f"{python} {campaign.quick_command}",
        "timeout_s": 900,
        "max_iterations": 20,
        # kgit demo's CPU settings: the default policy (interleaved) with fewer quads and a
        # gate audit on four mutants (each costs one run of the project's tests).
        "gate_audit_mutants": 4,
        "interleaved": {"min_quads": 4, "calibration_quads": 6, "calibration_processes": 2},
        "target_shapes": campaign.cpu_shapes,
    }
    path.write_text(json.dumps(manifest, indent=2) + "\n")  # JSON is YAML too
    return path


def _edit(repo: Path, campaign: RealCampaign) -> None:
    path = repo / campaign.kernel
    old, new = campaign.edit
    text = path.read_text()
    assert old in text, f"{old!r} is not in {campaign.kernel}"
    path.write_text(text.replace(old, new))


@pytest.mark.slow
@pytest.mark.parametrize("campaign", [SOFTMAX, SWIGLU], ids=lambda c: c.folder)
def test_a_real_kernel_campaign_reaches_a_verdict(tmp_path: Path, campaign: RealCampaign) -> None:
    repo = _project_repo(campaign, tmp_path)
    manifest = _manifest(campaign, tmp_path / "manifest.yaml")
    name = f"{campaign.op}_triton_cpu"
    _kgit(repo, "init", name, "--manifest", str(manifest))
    baseline = _kgit(repo, "baseline")
    assert "baseline recorded" in baseline.stdout, baseline.stdout + baseline.stderr
    assert "gate audit:" in baseline.stdout, baseline.stdout

    _kgit(repo, "round", "start", campaign.hypothesis)
    _edit(repo, campaign)
    committed = _run(repo, "git", "commit", "-q", "-a", "-m", campaign.hypothesis)
    assert "gate: passed" in committed.stderr, committed.stderr
    _kgit(repo, "round", "validate")
    verdict = json.loads(_kgit(repo, "status", "--json").stdout)["open_round"]["verdict"]
    if verdict in ACCEPTING:
        _kgit(repo, "round", "accept")
    else:
        _kgit(repo, "round", "rollback", "--reason", "not faster on the interpreter")

    rounds = [
        (row["round"], row["status"]) for row in json.loads(_kgit(repo, "log", "--json").stdout)
    ]
    assert rounds[1:] == [(2, verdict)]
