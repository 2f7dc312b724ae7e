"""The installed hooks, exercised through real `git commit`."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest

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


def _count_gates(repo: Path, counter: Path) -> None:
    """The fixture's gate, counting its runs in COUNTER (outside the repository)."""
    check = (repo / "check.py").read_text()
    (repo / "check.py").write_text(
        f"with open({str(counter)!r}, 'a') as f:\n    f.write('run\\n')\n" + check
    )


def test_the_gate_runs_once_a_round(kernel_repo: Path, tmp_path: Path) -> None:
    """A round ran the gate at commit (the hook, in the work tree) and again at validate (in
    kgit's clean checkout): a quarter to two fifths of a real round's wall time (issue 26,
    item 3). The hook now gates a clean checkout of the staged tree, and validate and accept
    trust that pass, bound to the tree."""
    repo, counter = kernel_repo, tmp_path / "gate-runs"
    _count_gates(repo, counter)
    git(repo, "commit", "-qam", "count gate runs")
    assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
    assert run_kgit("-q", "baseline").code == 0
    runs = len(counter.read_text().splitlines())
    assert run_kgit("round", "start", "bigger tiles").code == 0
    (repo / "kernel.txt").write_text("speed: 120\n")
    done = commit(repo, "bigger tiles")
    assert done.returncode == 0, done.stderr
    assert "in kgit's clean checkout" in done.stderr
    assert len(counter.read_text().splitlines()) == runs + 1
    validated = run_kgit("round", "validate")
    assert validated.code == 0, validated
    assert run_kgit("round", "accept").code == 0
    assert len(counter.read_text().splitlines()) == runs + 1, "validate or accept gated again"


def test_the_hook_gates_the_snapshot_without_the_work_trees_ignored_files(
    kernel_repo: Path,
) -> None:
    """The hook's pass is the one validate trusts, so it must not see what the snapshot does
    not hold: a git-ignored module that the tests import when present turned a failing gate
    green in the user's work tree."""
    repo = kernel_repo
    check = (repo / "check.py").read_text()
    (repo / "check.py").write_text(
        "try:\n    import gate_shortcut  # kept out of git by some projects\n"
        "    raise SystemExit(0)\nexcept ImportError:\n    pass\n" + check
    )
    git(repo, "commit", "-qam", "a gate that honours a local module")
    assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
    assert run_kgit("-q", "baseline").code == 0
    (repo / ".git" / "info" / "exclude").write_text("gate_shortcut.py\n")
    (repo / "gate_shortcut.py").write_text("")
    assert run_kgit("round", "start", "a kernel that is wrong").code == 0
    (repo / "kernel.txt").write_text("speed: 120\nBUG\n")
    blocked = commit(repo, "wrong kernel")
    assert blocked.returncode == 1, blocked.stderr
    assert "correctness gate failed" in blocked.stderr


def test_hooks_go_where_core_hookspath_says_read_from_a_subfolder(
    kernel_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where git looks for hooks is read once, when kgit opens the repository, with the rest of
    its layout (one git process fewer on `kgit status`): a relative core.hooksPath, read from a
    subfolder, is the repository's folder, not the subfolder's."""
    git(kernel_repo, "config", "core.hooksPath", "githooks")
    (kernel_repo / "sub").mkdir()
    monkeypatch.chdir(kernel_repo / "sub")
    assert run_kgit("init", "c1", "-m", "../manifest.yaml").code == 0
    assert "kgit hook shim" in (kernel_repo / "githooks" / "pre-commit").read_text()
    assert not (kernel_repo / "sub" / "githooks").exists()
    assert not (kernel_repo / ".git" / "hooks" / "pre-commit").exists()
    status = json.loads(run_kgit("status", "--json").out)
    assert status["gate_installed"] is True
    (kernel_repo / "githooks" / "pre-commit").unlink()
    assert json.loads(run_kgit("status", "--json").out)["gate_installed"] is False
