"""Two kgit processes writing one campaign at the same time lose nothing."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from kgit.engine.campaign import Campaign
from kgit.errors import KgitError
from kgit.gitdoor import Repo, open_repo
from kgit.records.notes import ROLLED_BACK, RoundNote
from tests.conftest import git, run_kgit

WRITER = """
import sys
from kgit.gitdoor import Repo, open_repo
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


def _foreign_write_during(
    monkeypatch: pytest.MonkeyPatch, campaign: Campaign, ref: str, write: Callable[[], None]
) -> list[str]:
    """Make WRITE happen once, between the save's reading of REF and its compare-and-swap (what
    git's `notes.rewriteRef` copy does when another work tree amends or rebases: it writes
    kgit's notes refs without kgit's lock). Returns the refs each swap was asked to move."""
    kind = type(campaign.repo)
    real, asked = kind.update_refs, []

    def racing(self: Repo, moves: Sequence[tuple[str, str, str | None]], message: str) -> None:
        asked.append(",".join(r for r, _, _ in moves))
        if len(asked) == 1:
            before = campaign.repo.rev_parse(ref)
            write()
            assert campaign.repo.rev_parse(ref) != before, "the foreign write moved nothing"
        real(self, moves, message)

    monkeypatch.setattr(kind, "update_refs", racing)
    return asked


def test_a_notes_copy_during_a_save_is_kept_and_the_save_lands(
    campaign: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's save once lost its swap to the notes copy of another worker's rebase, and the
    worker rolled back a round it had measured faster ('refs/notes/kgit/c1/rounds: is at X but
    expected Y'). Under the write lock only a writer outside kgit moves the notes refs: the save
    builds its notes on what that writer left and swaps again."""
    repo = open_repo(campaign)
    loaded = Campaign.load(repo, "c1")
    baseline = next(iter(loaded.recorded("rounds")))
    other = repo.commit_tree(repo.tree_of("HEAD"), [baseline], "an amended baseline\n")
    ours = repo.commit_tree(repo.tree_of("HEAD"), [baseline], "a round\n")
    rounds = loaded.refs.notes("rounds")
    asked = _foreign_write_during(
        monkeypatch,
        loaded,
        rounds,
        lambda: git(campaign, "notes", f"--ref={rounds}", "copy", baseline, other),
    )
    with repo.write_lock():  # a rolled-back round-2, as the two writers above record theirs
        loaded.write_round(ours, RoundNote(campaign="c1", round=2, status=ROLLED_BACK,
                                           hypothesis="h", metric="Forward TFLOPS"))  # fmt: skip
        repo.update_ref(loaded.refs.kept(2), ours, None)
        loaded.state.next_round = 3
        loaded.save("round-2 closed")
    assert len(asked) == 3  # lost once, swapped again; then the closing save
    listed = git(campaign, "notes", f"--ref={rounds}", "list").split()
    assert ours in listed and other in listed  # our note, and the copy the other writer made
    assert "round: 2" in git(campaign, "notes", f"--ref={rounds}", "show", ours)
    assert run_kgit("doctor", "--json").json()["problems"] == []  # type: ignore[index]


def test_a_record_moved_during_a_save_is_still_refused(
    campaign: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the notes refs are rebuilt: the record ref moved under the lock means a writer that
    bypassed kgit's lock changed the campaign, and the save stops rather than overwrite it."""
    repo = open_repo(campaign)
    loaded = Campaign.load(repo, "c1")
    record = loaded.refs.record
    moved = repo.commit_tree(repo.tree_of(record), [loaded.record_sha], "by hand\n")
    _foreign_write_during(
        monkeypatch, loaded, record, lambda: git(campaign, "update-ref", record, moved)
    )
    with repo.write_lock(), pytest.raises(KgitError, match="moved while kgit was updating"):
        loaded.save("a save")
    assert repo.rev_parse(record) == moved
