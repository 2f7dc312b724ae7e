"""Helpers for the tests of campaigns between clones: a bare remote on local disk, fresh clones,
and rounds run in whichever clone the test names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import KgitResult, commit, git, run_kgit


def kgit_in(repo: Path, *args: str) -> KgitResult:
    """kgit in process, as if typed in REPO."""
    here = Path.cwd()
    os.chdir(repo)
    try:
        return run_kgit(*args)
    finally:
        os.chdir(here)


def kgit_process(repo: Path, *args: str) -> subprocess.Popen[str]:
    """kgit as its own process in REPO, started now (for races)."""
    return subprocess.Popen(
        [sys.executable, "-m", "kgit", *args],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def make_remote(repo: Path, name: str = "remote.git") -> Path:
    """A bare repository beside REPO, its `origin`, holding REPO's first branch (a plain
    `git clone` checks it out)."""
    bare = repo.parent / name
    git(repo.parent, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    heads = git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/").split()
    main = next(ref for ref in heads if not ref.startswith("refs/heads/kgit/"))
    git(repo, "push", "-q", "origin", f"{main}:{main}")
    git(bare, "symbolic-ref", "HEAD", main)
    return bare


def fresh_clone(bare: Path, name: str, *, ready: bool = True) -> Path:
    """`git clone` of BARE, then `kgit pull`; READY: trusted and with the commit gate."""
    path = bare.parent / name
    git(bare.parent, "clone", "-q", str(bare), str(path))
    pulled = kgit_in(path, "pull")
    assert pulled.code == 0, pulled
    if ready:
        assert kgit_in(path, "trust", "--campaign", "c1", "--yes").code == 0
        assert kgit_in(path, "hooks", "install").code == 0
    return path


def start(repo: Path, hypothesis: str) -> int:
    started = kgit_in(repo, "round", "start", hypothesis, "--json")
    assert started.code == 0, started
    return int(started.json()["round"])  # type: ignore[index]


def change(repo: Path, speed: int, message: str) -> str:
    (repo / "kernel.txt").write_text(f"speed: {speed}\n")
    done = commit(repo, message)
    assert done.returncode == 0, done.stderr
    return git(repo, "rev-parse", "HEAD")


def validated(repo: Path, hypothesis: str, speed: int) -> tuple[int, str]:
    """A round started, changed and validated in REPO: (its number, its commit)."""
    number = start(repo, hypothesis)
    sha = change(repo, speed, hypothesis)
    verdict = kgit_in(repo, "-q", "round", "validate")
    assert verdict.code == 0, verdict
    return number, sha


def accepted(repo: Path, hypothesis: str, speed: int) -> tuple[int, str]:
    number, sha = validated(repo, hypothesis, speed)
    done = kgit_in(repo, "round", "accept")
    assert done.code == 0, done
    return number, sha


def rolled_back(repo: Path, hypothesis: str, speed: int) -> tuple[int, str]:
    number, sha = validated(repo, hypothesis, speed)
    done = kgit_in(repo, "round", "rollback", "--reason", "slower")
    assert done.code == 0, done
    return number, sha


def log(repo: Path) -> list[dict[str, object]]:
    rows = kgit_in(repo, "log", "--json").json()
    assert isinstance(rows, list)
    return rows


def kgit_refs(repo: Path) -> str:
    """Every kgit ref of REPO with its commit (remote-tracking and salvage copies aside)."""
    return git(
        repo,
        "for-each-ref",
        "--format=%(objectname) %(refname)",
        "refs/heads/kgit/",
        "refs/kgit/",
        "refs/notes/kgit/",
        "refs/kgit-tips/",
    )
