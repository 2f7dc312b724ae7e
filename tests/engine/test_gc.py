"""kgit's measuring trees on disk: removed by `kgit finish`, `kgit campaign delete` and `kgit gc`
(the trees of a campaign still running are kept)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import commit, git, run_kgit


def trees_of(repo: Path, name: str = "c1") -> list[str]:
    folder = repo / ".git" / "kgit" / "worktrees" / name
    found = [p for p in folder.rglob(".git") if p.is_file()] if folder.is_dir() else []
    return sorted(str(p.parent.relative_to(folder)) for p in found)


def listed(repo: Path) -> int:
    return len([line for line in git(repo, "worktree", "list").splitlines() if line])


def add_tree(repo: Path, *parts: str) -> Path:
    """A detached work tree where kgit keeps its measuring trees, as a measurement leaves one."""
    path = repo.joinpath(".git", "kgit", "worktrees", *parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    git(repo, "worktree", "add", "-q", "--detach", str(path), "HEAD")
    return path


def faster_round(repo: Path) -> None:
    assert run_kgit("round", "start", "bigger tiles").code == 0
    (repo / "kernel.txt").write_text("speed: 120\n")
    assert commit(repo, "bigger tiles").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0
    assert run_kgit("round", "accept").code == 0


def test_finish_removes_the_campaigns_measuring_trees(campaign: Path) -> None:
    repo = campaign
    faster_round(repo)
    assert trees_of(repo) and listed(repo) > 1  # the baseline's and the round's sides

    finished = run_kgit("finish", "--json")
    assert finished.code == 0, finished
    data = finished.json()
    assert isinstance(data, dict) and data["trees_removed"] >= 2 and data["bytes_freed"] > 0
    assert trees_of(repo) == [] and listed(repo) == 1
    assert not list((repo / ".git" / "kgit" / "worktrees" / "c1").glob("*.built"))

    # A reopened campaign checks its trees out again, sealed as before.
    assert run_kgit("round", "start", "--reopen", "unroll").code == 0
    (repo / "kernel.txt").write_text("speed: 125\n")
    assert commit(repo, "unroll").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0
    assert "candidate" in trees_of(repo)


def test_finish_says_what_it_freed(campaign: Path) -> None:
    faster_round(campaign)
    finished = run_kgit("finish")
    assert finished.code == 0, finished
    assert "measuring trees (" in finished.out and "MB freed)" in finished.out


def test_gc_removes_only_what_nothing_will_measure_in(campaign: Path) -> None:
    repo = campaign
    running = trees_of(repo)
    assert running  # the baseline measured in them
    add_tree(repo, "gone-campaign", "reference")
    add_tree(repo, "c1", "gone-worktree", "candidate")
    before = listed(repo)

    dry = run_kgit("gc", "--dry-run", "--json")
    assert dry.code == 0, dry
    data = dry.json()
    assert isinstance(data, dict) and data["dry_run"] is True
    reasons = {row["path"]: row["reason"] for row in data["leftovers"]}
    assert reasons == {
        ".git/kgit/worktrees/c1/gone-worktree": "work tree gone-worktree is gone",
        ".git/kgit/worktrees/gone-campaign": "no such campaign (deleted)",
    }
    assert data["trees"] == 2 and data["git_worktrees_after"] == before - 2
    assert listed(repo) == before  # nothing removed

    done = run_kgit("gc")
    assert done.code == 0, done
    assert "removed .git/kgit/worktrees/gone-campaign (reference;" in done.out
    assert "freed:" in done.out and "MB" in done.out
    assert f"git worktree list: {before} -> {before - 2} entries" in done.out
    assert not (repo / ".git" / "kgit" / "worktrees" / "gone-campaign").exists()
    assert trees_of(repo) == running and listed(repo) == before - 2

    again = run_kgit("gc")
    assert again.code == 0 and "nothing to remove" in again.out


def test_gc_takes_a_finished_campaigns_trees_and_their_build_marks(campaign: Path) -> None:
    repo = campaign
    assert run_kgit("-q", "finish").code == 0
    folder = add_tree(repo, "c1", "reference").parent
    (folder / "reference.built").write_text(git(repo, "rev-parse", "HEAD"))
    add_tree(repo, "c1", "gone-worktree", "candidate")

    done = run_kgit("gc", "--json")
    assert done.code == 0, done
    data = done.json()
    assert isinstance(data, dict) and data["trees"] == 2  # each tree counted once
    reasons = [row["reason"] for row in data["leftovers"]]
    assert reasons == ["work tree gone-worktree is gone", "campaign finished"]
    assert trees_of(repo) == [] and not (folder / "reference.built").exists()
    assert listed(repo) == 1


def test_gc_forgets_trees_removed_by_hand(campaign: Path) -> None:
    repo = campaign
    shutil.rmtree(add_tree(repo, "c1", "elsewhere", "audit").parent)
    before = listed(repo)
    assert run_kgit("gc").code == 0
    assert listed(repo) == before - 1


def test_a_copied_repository_measures_in_trees_of_its_own(
    campaign: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy's trees name the first repository's records (gone once it finished): the copy
    checks its sides out again rather than measuring in another repository's tree."""
    copy = tmp_path / "copy"
    shutil.copytree(campaign, copy, symlinks=True)
    assert run_kgit("-q", "finish").code == 0  # the first repository's trees and records go
    monkeypatch.chdir(copy)
    faster_round(copy)
    candidate = copy / ".git" / "kgit" / "worktrees" / "c1" / "candidate"
    common = git(candidate, "rev-parse", "--path-format=absolute", "--git-common-dir")
    assert Path(common).resolve() == (copy / ".git").resolve()


MEASURING = """
import sys, time
from kgit.engine.campaign import Campaign
from kgit.engine.measuring.sides.side_trees import measuring_tree
from kgit.gitdoor import open_repo
from kgit.progress import Voice
campaign = Campaign.load(open_repo(), "c1")
measuring_tree(campaign, campaign.best_tip(), "reference", Voice(lambda line: None, echo=False))
print("measuring", flush=True)
time.sleep(float(sys.argv[1]))
"""


def test_gc_leaves_a_tree_a_live_kgit_measures_in(campaign: Path) -> None:
    """A finished campaign's trees go, but not the one a running kgit measures in (a round of
    the campaign reopened meanwhile, an audit): it stays until that process has ended."""
    repo = campaign
    assert run_kgit("-q", "finish").code == 0
    assert trees_of(repo) == []
    measuring = subprocess.Popen(
        [sys.executable, "-c", MEASURING, "60"], cwd=repo, stdout=subprocess.PIPE, text=True
    )
    try:
        assert measuring.stdout is not None and measuring.stdout.readline() == "measuring\n"
        add_tree(repo, "c1", "gone-worktree", "candidate")
        done = run_kgit("gc", "--json")
        assert done.code == 0, done
        data = done.json()
        assert isinstance(data, dict) and data["trees"] == 1
        assert [row["in_use"] for row in data["leftovers"]] == [
            [],
            [{"tree": "reference", "pid": measuring.pid}],
        ]
        assert trees_of(repo) == ["reference"]
        words = run_kgit("gc", "--dry-run").out
        assert f"kept reference: kgit pid {measuring.pid} measures in it" in words, words
        # doctor's repair for a finished campaign's trees is gc, which leaves this one
        problems = run_kgit("doctor", "--json").json()["problems"]  # type: ignore[index]
        assert [p for p in problems if p["kind"] == "leftover_trees"] == [], problems
    finally:
        measuring.kill()
        measuring.wait()
    assert run_kgit("gc").code == 0  # its process ended: nothing holds it now
    assert trees_of(repo) == []


def test_a_mark_naming_a_live_process_that_holds_no_lock_keeps_nothing(campaign: Path) -> None:
    """A holder mark written by hand, naming a live process with its true start time (pid 1
    never ends), once kept a finished campaign's tree forever: gc said "kgit pid N measures in
    it" and doctor asked for a gc that removed nothing. A tree is held by a locked mark only."""
    repo = campaign
    assert run_kgit("-q", "finish").code == 0
    tree = add_tree(repo, "c1", "reference")
    alive = subprocess.Popen(["sleep", "60"])
    try:
        start = Path(f"/proc/{alive.pid}/stat").read_text().rpartition(")")[2].split()[19]
        tree.with_name("reference.holder").write_text(f"{alive.pid}:{start}\n")
        done = run_kgit("gc", "--json")
        assert done.code == 0, done
        data = done.json()
        assert isinstance(data, dict) and data["trees"] == 1, data
        assert [row["in_use"] for row in data["leftovers"]] == [[]]
        assert trees_of(repo) == []
        assert run_kgit("doctor").code == 0
    finally:
        alive.kill()
        alive.wait()


REOPENING = """
import sys
from kgit.engine.campaign import Campaign
from kgit.gitdoor import open_repo
repo = open_repo()
with repo.write_lock():
    print("locked", flush=True)
    sys.stdin.readline()
    current = Campaign.load(repo, "c1")
    current.state.finished = False  # as `kgit round start --reopen` records it
    current.save("round-3 started: reopened")
"""


def test_gc_decides_under_the_lock_and_sees_a_reopen_made_meanwhile(campaign: Path) -> None:
    repo = campaign
    assert run_kgit("-q", "finish").code == 0
    add_tree(repo, "c1", "reference")
    reopening = subprocess.Popen(
        [sys.executable, "-c", REOPENING], cwd=repo, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert reopening.stdout is not None and reopening.stdout.readline() == "locked\n"
    gc = subprocess.Popen(
        [sys.executable, "-m", "kgit", "gc"], cwd=repo, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert gc.stderr is not None and "waiting for" in gc.stderr.readline()
    assert reopening.communicate("go\n")[0] == "" and reopening.returncode == 0
    out, _ = gc.communicate(timeout=120)
    assert gc.returncode == 0 and "nothing to remove" in out, out
    assert trees_of(repo) == ["reference"]  # the reopened campaign's tree stays
