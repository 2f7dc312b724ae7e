"""Killing kgit at a chosen git call: `KGIT_TEST_KILL_AT_GIT_CALL` (read in kgit/gitdoor/runner.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

KILLED = 137


def kgit_process(
    repo: Path, *args: str, kill_at: str | None = None, trace: bool = False
) -> subprocess.CompletedProcess[str]:
    """`python -m kgit ARGS` as its own process, armed to die at KILL_AT ("N" or "N:after")."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GIT_", "KGIT_")) or k.startswith("GIT_CONFIG")
    }
    if kill_at is not None:
        env["KGIT_TEST_KILL_AT_GIT_CALL"] = kill_at
    if trace:
        env["KGIT_TRACE"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "kgit", "-q", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def git_calls(repo: Path, *args: str) -> list[str]:
    """The git calls `kgit ARGS` makes from REPO's present state, as traced (run in a copy, so
    REPO is left as it is)."""
    copy = repo.parent / f"{repo.name}-trace"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(repo, copy, symlinks=True)
    try:
        done = kgit_process(copy, *args, trace=True)
        assert done.returncode == 0, done.stderr
        return [line for line in done.stderr.splitlines() if line.startswith("+ (cd ")]
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def kill_after_call(repo: Path, needle: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `kgit ARGS` in REPO and kill it right after its first git call containing NEEDLE."""
    calls = git_calls(repo, *args)
    index = next(i for i, call in enumerate(calls, 1) if needle in call)
    killed = kgit_process(repo, *args, kill_at=f"{index}:after")
    assert killed.returncode == KILLED, killed
    return killed
