"""Two kgit processes writing one campaign at the same time lose nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import git, run_kgit

WRITER = """
import sys
from kgit.gitdoor import open_repo
from kgit.engine.campaign import Campaign
from kgit.records.notes import RoundNote, ROLLED_BACK

repo = open_repo()
who, count = sys.argv[1], int(sys.argv[2])
tree = repo.tree_of("HEAD")
for i in range(count):
    commit = repo.commit_tree(tree, [repo.rev_parse("HEAD")], f"{who} {i}\\n")
    with repo.write_lock():
        campaign = Campaign.load(repo, "c1")
        number = campaign.state.next_round
        campaign.write_round(commit, RoundNote(campaign="c1", round=number, status=ROLLED_BACK,
                                               hypothesis=f"{who} {i}", metric="Forward TFLOPS"))
        campaign.write_bench(commit, f"{who},{i}\\r\\n".encode())
        repo.update_ref(campaign.refs.kept(number), commit, None)
        campaign.state.next_round = number + 1
        campaign.save(f"{who} {i}")
"""


def test_two_writers_lose_no_note_and_no_state(campaign: Path) -> None:
    repo, count = campaign, 25
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, who, str(count)], cwd=repo)
        for who in ("alpha", "beta")
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    notes = git(repo, "notes", "--ref=refs/notes/kgit/c1/rounds", "list").splitlines()
    bench = git(repo, "notes", "--ref=refs/notes/kgit/c1/bench", "list").splitlines()
    assert len(notes) == 1 + 2 * count  # the baseline's and every writer's
    assert len(bench) == 1 + 2 * count
    status = run_kgit("status", "--json").json()
    assert status["next_round"] == 2 + 2 * count  # type: ignore[index]
    rounds = [row["round"] for row in run_kgit("log", "--json").json()]  # type: ignore[union-attr, index]
    assert rounds == list(range(1, 2 + 2 * count))


def test_two_round_starts_at_once_open_exactly_one(campaign: Path) -> None:
    repo = campaign
    other = repo.parent / "other"
    git(repo, "worktree", "add", "-q", "--detach", str(other))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "kgit", "-q", "round", "start", f"idea {n}"],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n, cwd in enumerate((repo, other))
    ]
    codes = sorted(p.wait(timeout=60) for p in procs)
    assert codes == [0, 1]
    branches = git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/kgit/c1/")
    assert branches.splitlines() == ["refs/heads/kgit/c1/best", "refs/heads/kgit/c1/round-2"]
