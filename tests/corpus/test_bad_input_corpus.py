"""The bad-input corpus (tests/corpus/cases.py) through the CLI: each case exits 2 (bad usage) or
1 (a refused state), says what is wrong with a `hint:`, prints no traceback, and changes nothing
on disk: refs and notes, HEAD, the index, the work tree, .git/config, hooks and .git/kgit/.

Two repositories are built once per session and copied for each case, so ~150 cases run in
seconds.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import CHECK, HERE, git, run_kgit
from tests.corpus.cases import CAMPAIGN, CASES, GOOD_TEXT, REPO, Case, Fifo, Link


def test_the_corpus_is_big_enough_and_says_why_it_refuses() -> None:
    assert len(CASES) >= 100
    assert len({case.id for case in CASES}) == len(CASES)
    assert all(case.code in (1, 2) for case in CASES)
    assert all(case.why for case in CASES if case.code == 1)
    assert sum(case.subprocess for case in CASES) >= 3


def _build(root: Path, with_campaign: bool) -> Path:
    repo = root / ("campaign" if with_campaign else "repo")
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "kernel.txt").write_text("speed: 100\n")
    (repo / "check.py").write_text(CHECK)
    shutil.copy(HERE / "fake_harness.py", repo / "harness.py")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "kernel, test and harness")
    (repo / "good.yaml").write_text(GOOD_TEXT.replace("python ", f"{sys.executable} "))
    if with_campaign:
        os.chdir(repo)
        assert run_kgit("init", "c1", "-m", "good.yaml", "--no-input").code == 0
        assert run_kgit("-q", "baseline").code == 0
        assert run_kgit("log").code == 0  # the views' cache is warm, as in a used campaign
    return repo


@pytest.fixture(scope="session")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    root = tmp_path_factory.mktemp("corpus")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GIT_CONFIG_GLOBAL", str(root / "gitconfig"))
        patch.setenv("GIT_CONFIG_NOSYSTEM", "1")
        (root / "gitconfig").write_text(
            "[user]\n\tname = Kernel Engineer\n\temail = dev@example.com\n"
            "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
        )
        patch.chdir(root)
        yield {REPO: _build(root, False), CAMPAIGN: _build(root, True)}


def _digest(path: Path) -> str:
    if path.is_symlink():
        return "link:" + os.readlink(path)
    if not path.is_file():
        return "special"  # a FIFO: reading it would block
    return hashlib.sha1(path.read_bytes()).hexdigest()


def disk_state(repo: Path) -> dict[str, str]:
    """Everything a command could change that a failed one must not."""
    state = {
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "HEAD": git(repo, "symbolic-ref", "-q", "HEAD") or git(repo, "rev-parse", "HEAD"),
        "index": git(repo, "ls-files", "-s"),
    }
    dot_git = repo / ".git"
    for top, dirs, names in os.walk(repo):
        here = Path(top)
        if here == repo:
            dirs.remove(".git")
        for name in [*names, *(d for d in dirs if (here / d).is_symlink())]:
            state[str((here / name).relative_to(repo))] = _digest(here / name)
    kept = [dot_git / "config", *(dot_git / "hooks").iterdir()]
    kept += [p for p in (dot_git / "kgit").rglob("*") if p.is_file()]
    for path in kept:
        if "cache" not in path.relative_to(dot_git).parts:
            state[str(path.relative_to(repo))] = _digest(path)
    state["kgit files"] = " ".join(sorted(str(p) for p in (dot_git / "kgit").rglob("*")))
    return state


def _write(repo: Path, files: dict[str, str | bytes | Link | Fifo]) -> None:
    for relative, data in files.items():
        path = repo / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, Link):
            path.symlink_to(data.target)
        elif isinstance(data, Fifo):
            os.mkfifo(path)
        elif isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data)


def _run(case: Case, repo: Path) -> tuple[int, str]:
    if not case.subprocess:
        result = run_kgit(*case.args)
        return result.code, result.out + result.err
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or "CONFIG" in k}
    proc = subprocess.run(
        [sys.executable, "-m", "kgit", *case.args],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_bad_input_is_refused_cleanly(
    case: Case, templates: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(templates[case.where], repo, symlinks=True)
    _write(repo, case.files)
    monkeypatch.chdir(repo)
    before = disk_state(repo)
    code, output = _run(case, repo)
    assert "Traceback" not in output, output
    assert code == case.code, output
    assert "\nhint: " in f"\n{output}", output
    assert case.says in output, output
    assert disk_state(repo) == before


def test_disk_state_sees_every_kind_of_change(
    templates: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The corpus's 'nothing changed' would be empty words if disk_state missed a change."""
    repo = tmp_path / "repo"
    shutil.copytree(templates[CAMPAIGN], repo, symlinks=True)
    changes = [
        lambda: git(repo, "update-ref", "refs/kgit/c1/rounds/9", "HEAD"),
        lambda: git(repo, "notes", "--ref=refs/notes/kgit/c1/gate", "add", "-m", "x", "HEAD"),
        lambda: git(repo, "checkout", "-q", "-b", "elsewhere"),
        lambda: (repo / "kernel.txt").write_text("speed: 1\n"),
        lambda: git(repo, "add", "kernel.txt"),
        lambda: (repo / "new-file").write_text(""),
        lambda: git(repo, "config", "notes.rewriteRef", "refs/notes/other"),
        lambda: (repo / ".git/hooks/pre-commit").write_text("#!/bin/sh\n"),
        lambda: (repo / ".git/kgit/patches").mkdir(),
        lambda: (repo / ".git/kgit/patches/p.diff").write_text("x"),
    ]
    for change in changes:
        before = disk_state(repo)
        change()
        assert disk_state(repo) != before
