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


def marked_open(repo: Path, tip: str, status: str, reason: str | None = None) -> None:
    """What a kgit that closed a round in two record commits (the note marked and the commit
    kept, then the round closed) left when killed between them: TIP's note marked STATUS, with
    REASON for a rollback, and the round still open. kgit now closes a round in one commit, so
    no kill leaves it; a record written before still may, and accept and rollback complete it."""
    from kgit.engine.campaign import Campaign
    from kgit.gitdoor import open_repo

    campaign = Campaign.load(open_repo(repo), "c1")
    note = campaign.read_round(tip)
    assert note is not None
    note.status = status
    note.decision = note.decision or status
    if reason is not None:
        note.rollback_reason = reason
    kept = campaign.refs.kept(note.round)
    with campaign.repo.write_lock():
        campaign.save(
            f"round-{note.round} marked {status}",
            notes=[campaign.round_note(tip, note)],
            moves=[(kept, tip, campaign.repo.rev_parse(kept))],
        )
