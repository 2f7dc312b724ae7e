"""The installed hooks, exercised through real `git commit`."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

from tests.conftest import commit, git, run_kgit


def test_init_installs_executable_shims(kernel_repo: Path) -> None:
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    for name in ("pre-commit", "prepare-commit-msg"):
        hook = kernel_repo / ".git" / "hooks" / name
        assert hook.stat().st_mode & stat.S_IXUSR
        assert "kgit hook shim" in hook.read_text()
    # kgit's notes do not follow amend or rebase (git's copy writes them without kgit's lock).
    assert _rewrite_refs(kernel_repo) == ""


def _rewrite_refs(repo: Path) -> str:
    found = subprocess.run(
        ["git", "config", "--get-all", "notes.rewriteRef"], cwd=repo, capture_output=True, text=True
    )
    return found.stdout.strip()


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


def test_an_amended_round_has_no_note_until_validated(campaign: Path) -> None:
    """An amend makes a commit kgit has not judged: no verdict is copied onto it. A kgit before
    this set `notes.rewriteRef`, whose copy git wrote without kgit's lock (a worker's save lost
    its swap to another worker's rebase); `kgit hooks install` removes that setting, and only
    it: the user's own rewriteRef values stay."""
    repo = campaign
    git(repo, "config", "--add", "notes.rewriteRef", "refs/notes/kgit/*")  # an older kgit's
    git(repo, "config", "--add", "notes.rewriteRef", "refs/notes/commits")  # the user's
    assert run_kgit("hooks", "install").code == 0
    assert _rewrite_refs(repo) == "refs/notes/commits"
    run_kgit("round", "start", "amend me")
    (repo / "kernel.txt").write_text("speed: 120\n")
    assert commit(repo, "first").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0
    validated = git(repo, "rev-parse", "HEAD")
    assert commit(repo, "reworded", "--amend").returncode == 0
    rounds = "--ref=refs/notes/kgit/c1/rounds"
    assert "round: 2" in git(repo, "notes", rounds, "show", validated)  # kept where it was
    copied = subprocess.run(["git", "notes", rounds, "list", "HEAD"], cwd=repo, capture_output=True)
    assert copied.returncode == 1 and copied.stdout == b""
    assert run_kgit("-q", "round", "validate").code == 0
    assert "round: 2" in git(repo, "notes", rounds, "show", "HEAD")
