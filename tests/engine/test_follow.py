"""The best line moved from another work tree (a round accepted there, a worker's accept, a pull):
the work tree that has it checked out, the user's main one, gets its files when it was clean and
is left alone, with a word, when it held changes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Built, commit, git, run_kgit
from tests.engine.remotes import kgit_in, make_remote


@pytest.fixture
def boosted(kernel_repo: Path, built: Built, tmp_path: Path) -> Path:
    """Campaign c1, baselined, on a kernel with one `boost.X` line per round to come."""
    repo = kernel_repo

    def build() -> None:
        (repo / "kernel.txt").write_text("speed: 100\n\nboost.a: 1.0\n\nboost.b: 1.0\n")
        git(repo, "commit", "-qam", "boost lines")
        assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
        assert run_kgit("-q", "baseline").code == 0

    built.lay("boosted_ab", tmp_path, build)
    return repo


def _validated_in(repo: Path, name: str) -> Path:
    """Round `boost NAME` started from REPO in a work tree of its own, committed and validated
    there; the work tree."""
    tree = repo.parent / f"tree-{name}"
    assert kgit_in(repo, "round", "start", f"boost {name}", "--worktree", str(tree)).code == 0
    kernel = tree / "kernel.txt"
    kernel.write_text(kernel.read_text().replace(f"boost.{name}: 1.0", f"boost.{name}: 1.2"))
    assert commit(tree, f"boost {name}").returncode == 0
    assert kgit_in(tree, "-q", "round", "validate").code == 0
    return tree


def test_an_accept_in_another_work_tree_brings_the_main_one_along(boosted: Path) -> None:
    repo = boosted
    tree = _validated_in(repo, "a")
    accepted = kgit_in(tree, "round", "accept", "--json")
    assert accepted.code == 0, accepted
    # The main work tree has the best line checked out: git moved the ref under it, and kgit
    # brought its index and files along.
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""
    assert "boost.a: 1.2" in (repo / "kernel.txt").read_text()
    best = git(repo, "rev-parse", "kgit/c1/best")
    assert accepted.json()["work_trees"] == [  # type: ignore[index]
        {"path": str(repo), "followed": True, "files_at": best}
    ]
    finished = run_kgit("finish")
    assert finished.code == 0, finished


def test_a_main_work_tree_with_local_changes_is_left_alone_and_said(boosted: Path) -> None:
    repo = boosted
    tree = _validated_in(repo, "a")
    mine = (repo / "kernel.txt").read_text() + "# my note\n"
    (repo / "kernel.txt").write_text(mine)
    old = git(repo, "rev-parse", "HEAD")
    accepted = kgit_in(tree, "round", "accept")
    assert accepted.code == 0, accepted
    assert (repo / "kernel.txt").read_text() == mine  # never lose a user's edits
    said = f"{repo} has kgit/c1/best checked out with local changes: its files stay at {old[:10]}"
    assert said in accepted.err, accepted
    # The hint, followed there, keeps the edit and takes the new tip.
    assert f"hint: there: git diff {old[:10]} > FILE" in accepted.err
    patch = repo.parent / "mine.patch"
    patch.write_text(git(repo, "diff", old[:10]) + "\n")
    git(repo, "reset", "-q", "--hard")
    git(repo, "apply", "--3way", str(patch))
    assert (repo / "kernel.txt").read_text() == mine.replace("boost.a: 1.0", "boost.a: 1.2")


def test_a_workers_accept_brings_the_main_work_tree_along(boosted: Path) -> None:
    repo = boosted
    queue = repo.parent / "ideas.txt"
    queue.write_text("boost b :: sed -i 's/^boost.b: .*/boost.b: 1.2/' kernel.txt\n")
    worker = [sys.executable, "-m", "kgit", "-q", "worker", "--hypotheses", str(queue)]
    done = subprocess.run(
        [*worker, "--device", "0", "--name", "w0"], cwd=repo, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "boost.b: 1.2" in git(repo, "show", "kgit/c1/best:kernel.txt"), done.stdout + done.stderr
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""
    assert "boost.b: 1.2" in (repo / "kernel.txt").read_text()


def test_a_pull_in_another_work_tree_brings_the_main_one_along(boosted: Path) -> None:
    repo = boosted
    bare = make_remote(repo)
    assert run_kgit("push").code == 0
    clone = repo.parent / "clone"
    git(repo.parent, "clone", "-q", str(bare), str(clone))
    assert kgit_in(clone, "pull").code == 0
    assert kgit_in(clone, "trust", "--campaign", "c1", "--yes").code == 0
    assert kgit_in(clone, "hooks", "install").code == 0
    tree = _validated_in(clone, "a")
    assert kgit_in(tree, "round", "accept").code == 0
    assert kgit_in(clone, "push").code == 0
    side = repo.parent / "side"
    git(repo, "worktree", "add", "-q", "--detach", str(side))
    (repo / "kernel.txt").write_text((repo / "kernel.txt").read_text() + "# my note\n")
    refused = kgit_in(side, "pull")
    assert refused.code == 1 and f"checked out in {repo} with uncommitted changes" in refused.err
    git(repo, "checkout", "-q", "--", "kernel.txt")
    pulled = kgit_in(side, "pull")
    assert pulled.code == 0, pulled
    assert git(repo, "rev-parse", "HEAD") == git(clone, "rev-parse", "kgit/c1/best")
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""
    assert "boost.a: 1.2" in (repo / "kernel.txt").read_text()
