"""The README's first command: `kgit demo` runs a whole campaign on the example kernel."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_demo_runs_a_whole_campaign_on_cpu(tmp_path: Path) -> None:
    where = tmp_path / "demo"
    done = subprocess.run(
        [sys.executable, "-m", "kgit", "demo", "--cpu", "--dir", str(where)],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "commit was blocked" in done.stdout
    log = subprocess.run(
        [sys.executable, "-m", "kgit", "log", "--json"],
        cwd=where,
        capture_output=True,
        text=True,
        check=True,
    )
    rounds = [(row["round"], row["status"]) for row in json.loads(log.stdout)]
    assert rounds[0] == (1, "BASELINE")
    assert rounds[1] == (2, "ACCEPTED")  # the improvement is large (3-5x) next to CPU noise
    assert rounds[2:] == [(3, "ROLLED BACK"), (4, "ROLLED BACK")]
    best = subprocess.run(
        ["git", "log", "--format=%s", "kgit/gemm_triton_cpu_demo/best"],
        cwd=where,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert best.splitlines()[0].startswith("[optimize] gemm TRITON round-2:")


@pytest.mark.slow
def test_the_memory_bound_demo_runs_on_cpu(tmp_path: Path) -> None:
    where = tmp_path / "demo"
    done = subprocess.run(
        [sys.executable, "-m", "kgit", "demo", "--kernel", "rmsnorm", "--cpu", "--dir", str(where)],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    log = subprocess.run(
        [sys.executable, "-m", "kgit", "log", "--json"],
        cwd=where,
        capture_output=True,
        text=True,
        check=True,
    )
    rounds = [(row["round"], row["status"]) for row in json.loads(log.stdout)]
    assert rounds == [(1, "BASELINE"), (2, "ACCEPTED"), (3, "ROLLED BACK"), (4, "ROLLED BACK")]
