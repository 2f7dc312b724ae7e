"""Two kgit processes writing one campaign at the same time lose nothing."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from kgit.engine.campaign import SAVE_TRIES, Campaign
from kgit.errors import KgitError
from kgit.gitdoor import Repo, open_repo
from kgit.records.notes import ROLLED_BACK, RoundNote
from tests.conftest import git, run_kgit

WRITER = """
import sys
from kgit.gitdoor import Repo, open_repo
from kgit.engine.campaign import SAVE_TRIES, Campaign
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
    monkeypatch: pytest.MonkeyPatch,
    campaign: Campaign,
    ref: str,
    write: Callable[[], None],
    times: int = 1,
) -> list[str]:
    """Make WRITE happen before each of the first TIMES swaps, between the save's reading of
    REF and its compare-and-swap (what git's `notes.rewriteRef` copy does when another work tree
    amends or rebases: it writes kgit's notes refs without kgit's lock). Returns the refs each
    swap was asked to move."""
    kind = type(campaign.repo)
    real, asked = kind.update_refs, []

    def racing(self: Repo, moves: Sequence[tuple[str, str, str | None]], message: str) -> None:
        asked.append(",".join(r for r, _, _ in moves))
        if len(asked) <= times:
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
    asked = _foreign_write_during(
        monkeypatch, loaded, record, lambda: git(campaign, "update-ref", record, moved)
    )
    with repo.write_lock(), pytest.raises(KgitError, match="moved while kgit was updating"):
        _save_a_round(repo, loaded)
    assert repo.rev_parse(record) == moved
    assert len(asked) == 1  # refused at once, no second swap


def _save_a_round(repo: Repo, loaded: Campaign) -> None:
    """A round-2 note and its kept ref, saved in one transaction (mark_round's shape)."""
    ours = repo.commit_tree(repo.tree_of("HEAD"), [repo.rev_parse("HEAD") or ""], "a round\n")
    note = RoundNote(campaign="c1", round=2, status=ROLLED_BACK, hypothesis="h",
                     metric="Forward TFLOPS")  # fmt: skip
    kept = loaded.refs.kept(2)
    loaded.save("round-2", notes=[loaded.round_note(ours, note)], moves=[(kept, ours, None)])


@pytest.mark.parametrize("how", ["rewound", "kept-ref", "every-try"])
def test_only_a_notes_ref_that_grew_is_swapped_again(
    campaign: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A notes ref rewound (not a descendant of what the save read), a caller's own move taken
    by another writer, or a notes copy before every try: the save stops, after one swap or
    after SAVE_TRIES, and the record ref is where it was."""
    repo = open_repo(campaign)
    loaded = Campaign.load(repo, "c1")
    rounds, kept = loaded.refs.notes("rounds"), loaded.refs.kept(2)
    baseline = next(iter(loaded.recorded("rounds")))
    first = git(campaign, "rev-list", "--max-parents=0", rounds)
    head = git(campaign, "rev-parse", "HEAD")
    writes: dict[str, tuple[str, Callable[[], None], int]] = {
        "rewound": (rounds, lambda: git(campaign, "update-ref", rounds, first), 1),
        "kept-ref": (kept, lambda: git(campaign, "update-ref", kept, head), 1),
        "every-try": (rounds, _copier(campaign, rounds, baseline), SAVE_TRIES),
    }
    ref, write, times = writes[how]
    if how == "rewound":  # a second notes commit, so that there is one to rewind to
        other = git(campaign, "commit-tree", f"{head}^{{tree}}", "-p", head, "-m", "other")
        git(campaign, "notes", f"--ref={rounds}", "add", "-m", "x", other)
    asked = _foreign_write_during(monkeypatch, loaded, ref, write, times)
    record = loaded.record_sha
    with repo.write_lock(), pytest.raises(KgitError, match="moved while kgit was updating"):
        _save_a_round(repo, loaded)
    assert len(asked) == (SAVE_TRIES if how == "every-try" else 1)
    assert repo.rev_parse(loaded.refs.record) == record


def _copier(repo: Path, rounds: str, source: str) -> Callable[[], None]:
    """git's notes copy of SOURCE's note onto a new commit, each call another commit."""
    made: list[str] = []

    def copy() -> None:
        tree = git(repo, "rev-parse", "HEAD^{tree}")
        target = git(repo, "commit-tree", tree, "-p", "HEAD", "-m", f"amended {len(made)}")
        made.append(target)
        git(repo, "notes", f"--ref={rounds}", "copy", source, target)

    return copy
