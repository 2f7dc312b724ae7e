"""kgit's gate through the pre-commit framework (.pre-commit-hooks.yaml), as a team using it
would add it: `pre-commit try-repo` runs the hook from this repository."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import git, run_kgit

PROJECT = Path(__file__).resolve().parents[2]


def _try_repo(repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    executable = shutil.which("pre-commit")
    assert executable, "pre-commit is a test dependency (pip install -e '.[test]')"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or "CONFIG" in k}
    env["PRE_COMMIT_HOME"] = str(home)
    return subprocess.run(
        [executable, "try-repo", str(PROJECT), "kgit-gate", "--verbose"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.skipif(
    not (PROJECT / ".git").exists(), reason="try-repo needs kgit's own git checkout"
)
def test_the_framework_runs_the_gate_on_a_round_branch_and_nothing_elsewhere(
    campaign: Path, tmp_path: Path
) -> None:
    home = tmp_path / "pre-commit-home"
    git(campaign, "checkout", "-q", "-b", "notes")  # a branch of the user's (a best line refuses)
    (campaign / "notes.txt").write_text("not a round\n")
    git(campaign, "add", "notes.txt")
    off_round = _try_repo(campaign, home)
    assert off_round.returncode == 0, off_round.stdout + off_round.stderr
    assert "kgit correctness gate" in off_round.stdout and "Passed" in off_round.stdout
    git(campaign, "commit", "-q", "-m", "notes")

    assert run_kgit("round", "start", "a kernel with a bug").code == 0
    (campaign / "kernel.txt").write_text("speed: 200\nBUG\n")
    git(campaign, "add", "kernel.txt")
    blocked = _try_repo(campaign, home)
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert "Failed" in blocked.stdout and "FAILED (kernel.txt has a BUG)" in blocked.stdout

    (campaign / "kernel.txt").write_text("speed: 200\n")
    git(campaign, "add", "kernel.txt")
    gated = _try_repo(campaign, home)
    assert gated.returncode == 0, gated.stdout + gated.stderr
    assert "Passed" in gated.stdout
