"""Workers in several clones of one remote (`kgit worker --remote`): round numbers reserved by a
push, writes replayed on a record another clone pushed first, and two accepts racing for the
remote's best line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kgit.engine.campaign import Campaign
from kgit.engine.rounds.parallel import rebase_round
from kgit.engine.sharing.publish import Link
from kgit.engine.sharing.replay import ReplayConflict, merge_state
from kgit.errors import KgitError
from kgit.gitdoor import open_repo
from kgit.records.notes import CampaignState, OpenRound
from tests.conftest import commit, git, run_kgit
from tests.engine.remotes import fresh_clone, kgit_in, log, make_remote

# Several kgit processes racing for minutes of CPU: the full suite runs them, the quick one
# (`pytest -m "not slow"`) leaves them out.
pytestmark = pytest.mark.slow

BOOSTS = ["a", "b", "c", "d", "e", "f", "g", "h"]
WORKER = [sys.executable, "-m", "kgit", "-q", "worker", "--json", "--hypotheses"]


def _edit(name: str, factor: float) -> str:
    return f"sed -i 's/^boost.{name}: .*/boost.{name}: {factor}/' kernel.txt"


@pytest.fixture
def clones(kernel_repo: Path) -> tuple[Path, Path, Path]:
    """Campaign c1 on a kernel of `boost.X` lines (changes to different lines merge on a
    rebase), pushed to a bare remote, and two clones of it ready to run rounds: (clone A,
    clone B, the remote)."""
    repo = kernel_repo
    (repo / "kernel.txt").write_text(
        "speed: 100\n\n" + "".join(f"boost.{x}: 1.0\n\n" for x in BOOSTS) + "pass_sleep: 0.05\n"
    )
    git(repo, "commit", "-qam", "boost lines")
    assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
    assert run_kgit("-q", "baseline").code == 0
    bare = make_remote(repo)
    assert kgit_in(repo, "push").code == 0
    return fresh_clone(bare, "clone-a"), fresh_clone(bare, "clone-b"), bare


def _link(clone: Path) -> Link:
    link = Link(open_repo(clone), "c1", "origin")
    link.sync()
    return link


def _tree(clone: Path) -> Path:
    """CLONE's work tree for rounds (a round in flight in another clone is in flight here)."""
    return clone.parent / f"{clone.name}-round"


def _start(clone: Path, link: Link, hypothesis: str, *, sync: bool = True) -> tuple[bool, int]:
    """A round started in CLONE's round work tree (after a pull, with SYNC) and published:
    (kept, its number)."""
    if sync:
        link.sync()
    started = kgit_in(
        clone, "round", "start", hypothesis, "--worktree", str(_tree(clone)), "--json"
    )
    assert started.code == 0, started
    return link.publish(open_repo(_tree(clone))), int(started.json()["round"])  # type: ignore[index]


def _change(clone: Path, link: Link, name: str, factor: float) -> str:
    tree = _tree(clone)
    subprocess.run(_edit(name, factor), shell=True, cwd=tree, check=True)
    assert commit(tree, f"boost {name}").returncode == 0
    assert link.publish(open_repo(tree))  # the gate's note
    return git(tree, "rev-parse", "HEAD")


def _validate(clone: Path, link: Link) -> None:
    link.sync()
    verdict = kgit_in(_tree(clone), "-q", "round", "validate", "--json")
    assert verdict.json()["decision"] == "ACCEPTED", verdict  # type: ignore[index]
    assert link.publish(open_repo(_tree(clone)))


def _accept(clone: Path) -> None:
    done = kgit_in(_tree(clone), "round", "accept")
    assert done.code == 0, done


def _record(repo: Path) -> str:
    return git(repo, "rev-parse", "refs/kgit/c1/campaign")


def _notes(repo: Path) -> str:
    return git(repo, "log", "--notes=kgit/c1/rounds", "--format=%H%n%N", "kgit/c1/best")


def test_a_round_number_taken_by_another_clone_is_given_up(
    clones: tuple[Path, Path, Path],
) -> None:
    a, b, bare = clones
    link_a, link_b = _link(a), _link(b)
    kept_a, number_a = _start(a, link_a, "boost a", sync=False)
    kept_b, number_b = _start(b, link_b, "boost b", sync=False)  # A's start not pulled yet
    assert (kept_a, kept_b) == (True, False) and number_a == number_b
    assert "both clones opened round-" in link_b.conflict
    # B holds the remote's campaign as it is: its next pull is a fast-forward or nothing.
    assert _record(b) == _record(bare) and git(_tree(b), "status", "--porcelain") == ""
    assert kgit_in(b, "pull").code == 0
    kept, again = _start(b, link_b, "boost b")
    assert kept and again == number_a + 1
    assert link_b.counts == {"pushes": 1, "push_refusals": 1, "replayed": 0, "redone": 1}
    assert link_b.report()["conflicts"] == [link_b.conflict]
    assert kgit_in(a, "pull").code == 0
    assert log(a) == log(b)


def test_a_write_another_clone_beat_is_replayed_on_its_record(
    clones: tuple[Path, Path, Path],
) -> None:
    a, b, bare = clones
    link_a, link_b = _link(a), _link(b)
    assert _start(a, link_a, "boost a")[0] and _start(b, link_b, "boost b")[0]
    sha_a, sha_b = _change(a, link_a, "a", 1.2), _change(b, link_b, "b", 1.2)
    _validate(a, link_a)
    before = _record(bare)
    # B's verdict was written on a record older than the remote's: its push is refused, and
    # its write replayed on top of A's.
    kgit_in(_tree(b), "-q", "round", "validate")
    assert link_b.publish(open_repo(_tree(b)))
    assert link_b.counts["replayed"] >= 1 and link_b.counts["redone"] == 0
    assert git(bare, "merge-base", "--is-ancestor", before, _record(bare)) == ""
    for clone in (a, b):
        assert kgit_in(clone, "pull").code == 0
    rows = {row["commit"]: row for row in log(a)}
    assert sha_a in rows and sha_b in rows, rows  # both verdicts are in the one record
    assert log(a) == log(b) and _notes(a) == _notes(b)


def test_two_clones_accepting_at_once_one_wins_the_other_validates_again(
    clones: tuple[Path, Path, Path],
) -> None:
    a, b, bare = clones
    link_a, link_b = _link(a), _link(b)
    _, number_a = _start(a, link_a, "boost a")
    _, number_b = _start(b, link_b, "boost b")
    sha_a, sha_b = _change(a, link_a, "a", 1.2), _change(b, link_b, "b", 1.3)
    _validate(a, link_a)
    _validate(b, link_b)
    # Both accept against the best line they validated on; A publishes first.
    _accept(a)
    _accept(b)
    assert link_a.publish(open_repo(_tree(a)))
    assert not link_b.publish(open_repo(_tree(b)))
    assert "both clones accepted a round" in link_b.conflict
    # B's accept was dropped: the remote's best line holds A's round alone, B's round is open.
    assert git(bare, "rev-parse", "refs/heads/kgit/c1/best") == sha_a
    assert _record(b) == _record(bare)
    statuses = {row["round"]: row["status"] for row in log(b)}
    assert statuses[number_a] == "ACCEPTED" and statuses[number_b] != "ACCEPTED"
    # B rebases onto the new best line, is gated and measured again, and accepted.
    here = open_repo(_tree(b))
    here.switch(f"refs/heads/kgit/c1/round-{number_b}")
    assert rebase_round(Campaign.load(here, "c1"), print) is None
    assert link_b.publish(here)
    _validate(b, link_b)
    _accept(b)
    assert link_b.publish(here)
    best = git(bare, "show", "refs/heads/kgit/c1/best:kernel.txt")
    assert "boost.a: 1.2" in best and "boost.b: 1.3" in best  # no accepted gain lost
    assert kgit_in(a, "pull").code == 0
    assert log(a) == log(b) and _notes(a) == _notes(b)
    assert [r["round"] for r in log(a) if r["status"] == "ACCEPTED"] == [number_a, number_b]
    assert git(bare, "rev-parse", "refs/heads/kgit/c1/best") != sha_b  # rebased: a new commit


def _worker(clone: Path, queue: list[str], device: str) -> subprocess.Popen[str]:
    path = clone.parent / f"{clone.name}-ideas.txt"
    path.write_text("\n".join(queue) + "\n")
    return subprocess.Popen(
        [*WORKER, str(path), "--remote", "origin", "--device", device, "--name", f"w{device}"],
        cwd=clone,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_another_clones_round_rebased_there_follows_here(
    clones: tuple[Path, Path, Path],
) -> None:
    a, b, _bare = clones
    link_a, link_b = _link(a), _link(b)
    _, number = _start(a, link_a, "boost a")
    gated = _change(a, link_a, "a", 1.2)
    _start(b, link_b, "boost b")  # B's pull takes A's round branch, at its gated commit
    assert git(b, "rev-parse", f"kgit/c1/round-{number}") == gated
    _change(b, link_b, "b", 1.3)
    _validate(b, link_b)
    _accept(b)
    assert link_b.publish(open_repo(_tree(b)))
    # A's round follows the new best line: its branch there no longer holds the gated commit.
    link_a.sync()
    here = open_repo(_tree(a))
    assert rebase_round(Campaign.load(here, "c1"), print) is None
    assert link_a.publish(here)
    link_b.sync()  # once refused: B's copy "held commits" the remote's branch did not
    assert git(b, "rev-parse", f"kgit/c1/round-{number}") == git(_tree(a), "rev-parse", "HEAD")
    _validate(a, link_a)
    _accept(a)
    assert link_a.publish(here)
    link_b.sync()  # the closed round's branch goes here too
    assert git(b, "branch", "--list", f"kgit/c1/round-{number}") == ""
    assert kgit_in(b, "doctor").code == 0


def test_a_copy_of_another_clones_round_is_never_pushed_back_over_it(
    clones: tuple[Path, Path, Path],
) -> None:
    a, b, bare = clones
    link_a, link_b = _link(a), _link(b)
    _, number = _start(a, link_a, "boost a")
    link_b.sync()  # B's copy of A's round: its parent
    branch = f"refs/heads/kgit/c1/round-{number}"
    # A commits without the gate (no record write) and pushes: its branch moves forward there.
    subprocess.run(_edit("a", 1.2), shell=True, cwd=_tree(a), check=True)
    assert commit(_tree(a), "boost a", "--no-verify").returncode == 0
    assert link_a.publish(open_repo(_tree(a)))
    moved = git(bare, "rev-parse", branch)
    # B writes its own round and publishes: its old copy of A's branch must not go with it.
    assert _start(b, link_b, "boost b")[0]
    assert git(bare, "rev-parse", branch) == moved
    # A goes on (a gated commit: a record write); B's next write is replayed on it, its copy
    # of A's branch, behind the remote's, is no write of its own to keep.
    latest = _change(a, link_a, "a", 1.3)
    done = kgit_in(_tree(b), "round", "rollback", "--reason", "changed my mind")
    assert done.code == 0, done
    assert link_b.publish(open_repo(_tree(b))), link_b.conflict
    assert git(b, "rev-parse", branch) == git(bare, "rev-parse", branch) == latest


IDEAS = [  # (hypothesis, boost line, factor): five gains, three losses
    ("boost a", "a", 1.1), ("boost b", "b", 1.2), ("slow c", "c", 0.8), ("boost d", "d", 1.1),
    ("boost e", "e", 1.15), ("slow f", "f", 0.7), ("boost g", "g", 1.1), ("slow h", "h", 0.9),
]  # fmt: skip


@pytest.mark.parametrize("count", [2, 4])
def test_workers_in_several_clones_share_one_campaign(
    clones: tuple[Path, Path, Path], count: int
) -> None:
    a, b, bare = clones
    places = [a, b] + [fresh_clone(bare, f"clone-{n}") for n in range(2, count)]
    # Each clone its own file, the ideas dealt out between them (one file shared by several
    # clones: tests/engine/test_shared_claims.py).
    queues = {
        clone: [f"{text} :: {_edit(name, factor)}" for text, name, factor in IDEAS[n::count]]
        for n, clone in enumerate(places)
    }
    procs = [_worker(clone, queues[clone], str(n)) for n, clone in enumerate(places)]
    outcomes, summaries = [], []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        lines = [json.loads(line) for line in out.splitlines()]
        outcomes += [line for line in lines if line["event"] == "round"]
        summaries.append(lines[-1])
    numbers = sorted(o["round"] for o in outcomes)
    assert numbers == list(range(2, 10)), outcomes  # unique, none lost
    accepted = {o["hypothesis"] for o in outcomes if o["status"] == "ACCEPTED"}
    assert accepted == {"boost a", "boost b", "boost d", "boost e", "boost g"}, outcomes
    best = git(bare, "show", "refs/heads/kgit/c1/best:kernel.txt")
    for text, name, factor in IDEAS:  # every accepted gain is on the best line, no loss is
        assert f"boost.{name}: {factor if text in accepted else 1.0}\n" in best, best
    for sharing in (s["sharing"] for s in summaries):  # every refused push ended one way
        assert sharing["remote"] == "origin"
        assert sharing["push_refusals"] == sharing["replayed"] + sharing["redone"], sharing
        assert len(sharing["conflicts"]) == sharing["redone"]
    for clone in places:
        assert kgit_in(clone, "pull").code == 0
    assert [r["round"] for r in log(a)] == list(range(1, 10))
    for clone in places[1:]:
        assert log(clone) == log(a) and _notes(clone) == _notes(a)
    for clone in places:  # no copy of another clone's round left behind
        assert kgit_in(clone, "doctor").code == 0


def _state(*opened: int, next_round: int = 4, **extra: object) -> CampaignState:
    rounds = [OpenRound(n, f"idea {n}", "p" * 40, "now") for n in opened]
    return CampaignState("c1", "b" * 40, "now", next_round=next_round, open_rounds=rounds, **extra)  # type: ignore[arg-type]


def test_state_merge_keeps_both_sides_rounds_and_refuses_a_shared_number() -> None:
    base = _state(2, 3)
    mine = _state(2, next_round=4, abandoned=[{"round": 3}])  # closed 3
    theirs = _state(2, 3, 4, next_round=5)  # opened 4
    merged = merge_state(base, mine, theirs)
    assert [r.number for r in merged.open_rounds] == [2, 4] and merged.next_round == 5
    assert merged.abandoned == [{"round": 3}]
    with pytest.raises(ReplayConflict, match="both clones opened round-4"):
        merge_state(base, _state(2, 3, 4, next_round=5), theirs)
    changed = _state(2, 3)
    changed.open_rounds[0].parent = "q" * 40
    with pytest.raises(ReplayConflict, match="both clones changed round-2"):
        merge_state(base, changed, _state(3))


def test_a_replay_refuses_a_remote_record_that_rewrote_a_closed_round(
    clones: tuple[Path, Path, Path],
) -> None:
    a, b, bare = clones
    link_a, link_b = _link(a), _link(b)
    assert _start(a, link_a, "boost a")[0]
    # Another clone pushes a record commit that changes the baseline's note, with plain git.
    baseline = git(a, "rev-parse", "refs/heads/kgit/c1/best")
    here = open_repo(a)
    record = git(a, "rev-parse", "refs/kgit/c1/campaign")
    forged = here.commit_tree(
        here.tree_with(record, {f"notes/rounds/{baseline}": b"forged\n"}), [record], "forged\n"
    )
    git(a, "push", "-q", "origin", f"{forged}:refs/kgit/c1/campaign")
    before = _record(b)
    started = kgit_in(b, "round", "start", "boost b", "--worktree", str(_tree(b)))
    assert started.code == 0, started
    with pytest.raises(KgitError, match="rewrites what this clone recorded"):
        link_b.publish(open_repo(_tree(b)))
    assert git(bare, "rev-parse", "refs/kgit/c1/campaign") == forged  # nothing pushed
    assert git(b, "merge-base", "--is-ancestor", before, _record(b)) == ""  # B's write is kept
