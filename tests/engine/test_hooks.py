"""The installed hooks, exercised through real `git commit`."""

from __future__ import annotations

import stat
from pathlib import Path

from tests.conftest import commit, git, run_kgit


def test_init_installs_executable_shims(kernel_repo: Path) -> None:
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    for name in ("pre-commit", "prepare-commit-msg"):
        hook = kernel_repo / ".git" / "hooks" / name
        assert hook.stat().st_mode & stat.S_IXUSR
        assert "kgit hook shim" in hook.read_text()
    assert "refs/notes/kgit/*" in git(kernel_repo, "config", "--get-all", "notes.rewriteRef")


def test_an_existing_hook_is_chained_not_clobbered(kernel_repo: Path) -> None:
    mine = kernel_repo / ".git" / "hooks" / "pre-commit"
    mine.write_text('#!/bin/sh\necho ran >> "$(git rev-parse --git-dir)/mine.log"\n')
    mine.chmod(0o755)
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    chained = mine.with_name("pre-commit.kgit-chained")
    assert "echo ran" in chained.read_text()
    (kernel_repo / "kernel.txt").write_text("speed: 100\nBUG\n")
    assert commit(kernel_repo, "off a kgit branch").returncode == 0  # not gated off kgit branches
    assert (kernel_repo / ".git" / "mine.log").read_text() == "ran\n"
    run_kgit("hooks", "install")  # reinstalling keeps the chain
    assert chained.exists() and "kgit hook shim" in mine.read_text()


def test_a_failing_chained_hook_still_blocks(kernel_repo: Path) -> None:
    mine = kernel_repo / ".git" / "hooks" / "pre-commit"
    mine.write_text("#!/bin/sh\necho 'lint failed' >&2\nexit 1\n")
    mine.chmod(0o755)
    run_kgit("init", "c1", "-m", "manifest.yaml")
    (kernel_repo / "kernel.txt").write_text("speed: 101\n")
    result = commit(kernel_repo, "x")
    assert result.returncode != 0 and "lint failed" in result.stderr


def test_the_gate_tests_exactly_the_staged_snapshot(campaign: Path) -> None:
    repo = campaign
    run_kgit("round", "start", "stage carefully")
    kernel = repo / "kernel.txt"
    kernel.write_text("speed: 130\n")
    git(repo, "add", "kernel.txt")
    kernel.write_text("speed: 130\nBUG\n")  # unstaged: must not be what the gate sees
    done = commit(repo, "staged part", all_files=False)
    assert done.returncode == 0, done.stderr
    assert kernel.read_text() == "speed: 130\nBUG\n"  # the unstaged edit is back
    assert git(repo, "show", "HEAD:kernel.txt") == "speed: 130"
    # ...and the reverse: a broken staged snapshot is blocked even if the work tree is fine.
    git(repo, "add", "kernel.txt")
    kernel.write_text("speed: 130\n")
    blocked = commit(repo, "broken staged", all_files=False)
    assert blocked.returncode != 0 and "BUG" in blocked.stderr
    assert kernel.read_text() == "speed: 130\n"
    assert not list((repo / ".git" / "kgit" / "patches").glob("*.patch"))


def test_a_commit_beside_an_intent_to_add_file_keeps_every_edit(campaign: Path) -> None:
    # `git add -N` puts an empty entry in the index: setting the unstaged edits aside used to
    # empty the new file, then fail to put the edits back (they were left in a patch).
    repo = campaign
    run_kgit("round", "start", "stage carefully")
    kernel = repo / "kernel.txt"
    kernel.write_text("speed: 130\n")
    git(repo, "add", "kernel.txt")
    kernel.write_text("speed: 130\nBUG\n")
    (repo / "notes.txt").write_text("for later\n")
    git(repo, "add", "-N", "notes.txt")
    done = commit(repo, "staged part", all_files=False)
    assert done.returncode == 0, done.stderr
    assert git(repo, "show", "HEAD:kernel.txt") == "speed: 130"
    assert kernel.read_text() == "speed: 130\nBUG\n"
    assert (repo / "notes.txt").read_text() == "for later\n"
    assert git(repo, "diff", "--name-only", "--diff-filter=A") == "notes.txt"
    assert not list((repo / ".git" / "kgit" / "patches").glob("*"))


def test_amend_keeps_the_round_notes(campaign: Path) -> None:
    repo = campaign
    run_kgit("round", "start", "amend me")
    (repo / "kernel.txt").write_text("speed: 120\n")
    assert commit(repo, "first").returncode == 0
    assert run_kgit("round", "validate").code == 0
    assert commit(repo, "reworded", "--amend").returncode == 0
    note = git(repo, "notes", "--ref=refs/notes/kgit/c1/rounds", "show", "HEAD")
    assert "round: 2" in note
