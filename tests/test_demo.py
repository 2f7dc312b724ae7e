"""The README's first command: `kgit demo` runs a whole campaign on a bundled example kernel."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["gemm", "rmsnorm"])
def test_demo_runs_a_whole_campaign_on_cpu(tmp_path: Path, kernel: str) -> None:
    where = tmp_path / "demo"
    done = subprocess.run(
        [sys.executable, "-m", "kgit", "demo", "--kernel", kernel, "--cpu", "--dir", str(where)],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "commit was blocked" in done.stdout
    # It ends as a campaign ends: final acceptance from scratch, then the report.
    finished = "finish re-gated and re-measured from scratch" in done.stdout
    assert finished or "final acceptance refused" in done.stdout + done.stderr
    assert "<html" in (where / "report.html").read_text()[:2000].lower()
    log = subprocess.run(
        [sys.executable, "-m", "kgit", "log", "--json"],
        cwd=where,
        capture_output=True,
        text=True,
        check=True,
    )
    rounds = [(row["round"], row["status"]) for row in json.loads(log.stdout)]
    # On CPU both planted changes are large (2-5x) next to the interpreter's noise.
    assert rounds == [(1, "BASELINE"), (2, "ACCEPTED"), (3, "ROLLED BACK"), (4, "ROLLED BACK")]
    best = subprocess.run(
        ["git", "log", "--format=%s", f"kgit/{kernel}_triton_cpu_demo/best"],
        cwd=where,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert best.splitlines()[0].startswith(f"[optimize] {kernel} TRITON round-2:")


def test_the_demo_asks_torch_for_the_gpu_not_nvidia_smi(monkeypatch: pytest.MonkeyPatch) -> None:
    # torch.cuda answers on ROCm too; the question runs in a child process, so the CLI never
    # imports torch. Here the child "sees" a GPU, then none.
    from kgit import demo

    monkeypatch.setattr(demo, "_ASK_TORCH", "print('torch says'); print('AMD Instinct MI300X')")
    demo._gpu_name.cache_clear()
    assert demo.has_gpu() and demo._gpu_name() == "AMD Instinct MI300X"
    monkeypatch.setattr(demo, "_ASK_TORCH", "print('')")
    demo._gpu_name.cache_clear()
    assert not demo.has_gpu()
    demo._gpu_name.cache_clear()
