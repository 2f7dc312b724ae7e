"""How many git processes `kgit status` runs: each costs a few milliseconds of its budget
(<= 100 ms at 100 campaigns x 100 rounds, docs/measured.md), so what can be read in one is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import commit, run_kgit


def git_calls(repo: Path, *args: str) -> tuple[list[str], str]:
    """The git subcommands kgit ARGS runs (KGIT_TRACE), and what it printed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or "CONFIG" in k}
    done = subprocess.run(
        [sys.executable, "-m", "kgit", *args],
        cwd=repo,
        env={**env, "KGIT_TRACE": "1"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    traced = [line.split("&& git ", 1)[1] for line in done.stderr.splitlines() if "&& git " in line]
    return [line.split()[0] for line in traced], done.stdout


def test_status_in_a_round_reads_branches_trees_and_notes_in_few_processes(
    campaign: Path,
) -> None:
    """A round in flight with a commit, a round rolled back since the last accept: the branch
    is read when the repository opens, the open round's tip and tree with the round branches,
    the accept's note with the keep-refs after it."""
    repo = campaign
    assert run_kgit("round", "start", "slower").code == 0
    (repo / "kernel.txt").write_text("speed: 80\n")
    assert commit(repo, "slower").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0
    assert run_kgit("round", "rollback", "--reason", "slower").code == 0
    assert run_kgit("round", "start", "faster").code == 0
    (repo / "kernel.txt").write_text("speed: 120\n")
    assert commit(repo, "faster").returncode == 0
    assert run_kgit("status").code == 0  # the lineage's rows cached, as a user finds them
    calls, out = git_calls(repo, "status", "--json")
    shown = json.loads(out)
    assert shown["open_round"]["round"] == 3 and shown["open_round"]["has_commit"]
    assert shown["open_round"]["gate"] == "passed" and shown["best_moved"] is None
    assert shown["next_step"] == "kgit round validate"
    # open_repo (the branch too); the record; the round branches with their tips' trees; the
    # open round's gate note; the trust; the accept's note with the keep-refs since; their notes
    assert calls == [
        "rev-parse",
        "cat-file",
        "for-each-ref",
        "cat-file",
        "config",
        "cat-file",
        "cat-file",
    ], calls
