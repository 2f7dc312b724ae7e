"""Helpers of the review tests: a small campaign played as a user plays it, golden files."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import commit, git, run_kgit

GOLDEN = Path(__file__).resolve().parent / "golden"


def play_rounds(repo: Path) -> None:
    """round-2 accepted (with a weight cache, which rule 11 allows), round-3 rolled back before a
    commit, round-4 slower and rolled back with its root cause and lesson in the commit message."""
    assert run_kgit("round", "start", "bigger blocks run faster").code == 0
    (repo / "kernel.txt").write_text("speed: 110\n_w_cache[id(weight)] = w_t\n")
    done = commit(repo, "bigger blocks\n\nAttribution: fewer programs")
    assert done.returncode == 0, done.stderr
    assert run_kgit("round", "validate").code == 0
    assert run_kgit("round", "accept").code == 0
    assert run_kgit("round", "start", "unroll the K loop").code == 0
    assert run_kgit("round", "rollback", "--reason", "the gate failed on K tails").code == 0
    assert run_kgit("round", "start", "smaller tiles hide latency").code == 0
    (repo / "kernel.txt").write_text("speed: 90\n_w_cache[id(weight)] = w_t\n")
    message = "smaller tiles\n\nRoot-Cause: too many programs\nLesson: keep 128-wide tiles"
    assert commit(repo, message).returncode == 0
    assert run_kgit("round", "validate").code == 0
    assert run_kgit("round", "rollback", "--reason", "slower on every shape").code == 0


def play_rounds_out_of_order(repo: Path) -> None:
    """Campaign c1 on REPO (a kernel_repo) where round-3 (x1.2) is accepted before round-2
    (x1.1), which is then rebased onto it and accepted: the best line's first-parent history is
    baseline, round-3, round-2, as with parallel workers."""
    from kgit.engine.campaign import Campaign
    from kgit.engine.rounds.parallel import rebase_round
    from kgit.gitdoor import open_repo
    from tests.engine.remotes import kgit_in

    # One line per round, blank lines between them, so that the rebase merges the two changes.
    (repo / "kernel.txt").write_text("speed: 100\n\nboost.a: 1.0\n\nboost.b: 1.0\n")
    git(repo, "commit", "-qam", "boost lines")
    assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
    assert run_kgit("baseline").code == 0
    trees = {name: repo.parent / f"order-{name}" for name in "ab"}
    for name, factor in (("a", "1.1"), ("b", "1.2")):
        assert run_kgit("round", "start", f"boost {name}", "--worktree", str(trees[name])).code == 0
        kernel = trees[name] / "kernel.txt"
        kernel.write_text(
            kernel.read_text().replace(f"boost.{name}: 1.0", f"boost.{name}: {factor}")
        )
        assert commit(trees[name], f"boost {name}").returncode == 0
    assert kgit_in(trees["b"], "-q", "round", "validate").code == 0
    assert kgit_in(trees["b"], "round", "accept").code == 0
    assert rebase_round(Campaign.load(open_repo(trees["a"]), "c1"), print) is None
    assert kgit_in(trees["a"], "-q", "round", "validate").code == 0
    assert kgit_in(trees["a"], "round", "accept").code == 0


_SHA = re.compile(r"\b[0-9a-f]{10,40}\b")
_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def masked(text: str) -> str:
    """Golden-stable text: commit shas and dates replaced."""
    return _DATE.sub("<date>", _SHA.sub("<sha>", text))


def check_golden(name: str, text: str, update: bool) -> None:
    path = GOLDEN / name
    if update:
        path.write_text(text)
    golden = path.read_text()
    if text != golden:
        import difflib

        diff = "".join(difflib.unified_diff(golden.splitlines(True), text.splitlines(True)))
        raise AssertionError(f"{name} differs from its golden file (KGIT_UPDATE_GOLDEN=1):\n{diff}")
