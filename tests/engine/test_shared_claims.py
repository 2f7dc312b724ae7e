"""One hypotheses file shared by workers of several clones through a remote: claims in the
campaign record, taken with a round's start under the record's compare-and-swap; a claim race
lost and retried; the rounds a dead worker left, taken back; and a worker's own round that
another clone wrote too."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kgit.engine.campaign import Campaign
from kgit.engine.rounds.hypotheses import Hypothesis, parse_line
from kgit.engine.rounds.round import start_round
from kgit.engine.rounds.shared_hypotheses import Claimed, SharedQueue, clone_id
from kgit.engine.rounds.worker import WorkerSetup, one_round, worker_tree
from kgit.engine.sharing.publish import Link
from kgit.gitdoor import open_repo
from kgit.records.claims import Claim
from tests.conftest import git, run_kgit
from tests.engine.remotes import fresh_clone, kgit_in, log, make_remote

BOOSTS = ["a", "b", "c", "d", "e", "f"]


def _edit(name: str, factor: float) -> str:
    return f"sed -i 's/^boost.{name}: .*/boost.{name}: {factor}/' kernel.txt"


@pytest.fixture
def clones(kernel_repo: Path) -> tuple[Path, Path, Path]:
    """Campaign c1 on a kernel of `boost.X` lines, pushed to a bare remote, and two clones
    ready to run rounds: (clone A, clone B, the remote)."""
    repo = kernel_repo
    (repo / "kernel.txt").write_text(
        "speed: 100\n\n" + "".join(f"boost.{x}: 1.0\n\n" for x in BOOSTS)
    )
    git(repo, "commit", "-qam", "boost lines")
    assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
    assert run_kgit("-q", "baseline").code == 0
    bare = make_remote(repo)
    assert kgit_in(repo, "push").code == 0
    return fresh_clone(bare, "clone-a"), fresh_clone(bare, "clone-b"), bare


def _lines(*names: str) -> list[Hypothesis]:
    found = [
        parse_line(f"boost {x} :: {_edit(x, 1.2)}", n, Path.cwd()) for n, x in enumerate(names, 1)
    ]
    return [item for item in found if item is not None]


class Worker:
    """A worker's engine parts in CLONE, called step by step: its link, queue and work tree."""

    def __init__(self, clone: Path, name: str, items: list[Hypothesis]) -> None:
        self.repo = open_repo(clone)
        self.setup = WorkerSetup("c1", name, None, remote="origin")
        self.link = Link(self.repo, "c1", "origin")
        self.queue = SharedQueue(self.repo, "c1", items, name)
        self.tree = worker_tree(self.repo, "c1", name)

    def next(self) -> Hypothesis | None:
        return self.queue.next(set())

    def start(self, item: Hypothesis) -> int:
        """ITEM's round started here with its claim, not yet published: its number."""
        campaign = Campaign.load(self.repo, "c1")
        started = start_round(
            campaign, item.text, worktree=self.tree, with_files=self.queue.claim(item)
        )
        return started.round

    def publish(self) -> bool:
        return self.link.publish(open_repo(self.tree))

    def round(
        self, item: Hypothesis, say: Callable[[str], None] = print
    ) -> dict[str, object] | None:
        """ITEM's whole round, as `kgit worker` runs it (None: its line was claimed first)."""
        return one_round(
            self.repo, self.setup, self.tree, item, say, self.link, self.queue.claim(item)
        )


def _claims(repo: Path) -> list[Claim]:
    """The claims in REPO's campaign record (a bare remote too), read with plain git."""
    listing = git(repo, "ls-tree", "refs/kgit/c1/campaign", "claims/").splitlines()
    return [Claim.from_text(git(repo, "cat-file", "blob", line.split()[2])) for line in listing]


def _remote_claims(bare: Path) -> dict[int, str]:
    """Round -> `worker:hypothesis` of each claim in the remote's record."""
    return {c.round: f"{c.worker}:{c.hypothesis}" for c in _claims(bare)}


def _record(repo: Path) -> str:
    return git(repo, "rev-parse", "refs/kgit/c1/campaign")


def test_a_claim_travels_with_its_rounds_start(clones: tuple[Path, Path, Path]) -> None:
    a, b, bare = clones
    items = _lines("a", "b")
    first, second = Worker(a, "wa", items), Worker(b, "wb", items)
    first.link.sync()
    taken = first.next()
    assert taken is not None and taken.text == "boost a"
    assert first.start(taken) == 2 and first.publish()
    assert _remote_claims(bare) == {2: "wa:boost a"}
    (claim,) = _claims(bare)
    assert claim.clone == clone_id(open_repo(a)) and claim.line == 1
    start = git(bare, "log", "-1", "--format=%s", "refs/kgit/c1/campaign")
    assert start == "kgit c1: round-2 started: boost a"  # the claim is in the start's commit
    # B's record, once pulled, holds A's claim: it takes the next line.
    assert second.next() is not None and second.next() == taken  # not pulled yet
    second.link.sync()
    nxt = second.next()
    assert nxt is not None and nxt.text == "boost b"
    assert second.start(nxt) == 3 and second.publish()
    assert _remote_claims(bare) == {2: "wa:boost a", 3: "wb:boost b"}
    first.link.sync()
    assert first.next() is None and second.next() is None  # both lines claimed, seen by both


def test_a_lost_claim_race_is_retried_on_the_next_line(clones: tuple[Path, Path, Path]) -> None:
    a, b, bare = clones
    items = _lines("a", "b")
    first, second = Worker(a, "wa", items), Worker(b, "wb", items)
    for worker in (first, second):
        worker.link.sync()
    assert first.next() == second.next() == items[0]  # both go for line 1 at once
    assert second.start(items[0]) == 2  # B's start and claim, in its record, not yet pushed
    assert first.start(items[0]) == 2 and first.publish()  # A's push wins
    won = _record(bare)
    assert not second.publish()  # B's push is refused; its start is dropped, claim and all
    assert "both clones" in second.link.conflict, second.link.conflict
    assert _record(b) == won and _remote_claims(bare) == {2: "wa:boost a"}
    assert second.link.counts["push_refusals"] == 1 and second.link.counts["redone"] == 1
    # B's worker tries line 1 again from the record it now holds: claimed, nothing is started.
    said: list[str] = []
    assert second.round(items[0], said.append) is None
    assert said == ["wb: 'boost a' was claimed first (round-2, by wa on "
                    f"{clone_id(open_repo(a))}); taking the next line"]  # fmt: skip
    assert _record(bare) == _record(b) == won
    assert second.next() == items[1]
    assert second.start(items[1]) == 3 and second.publish()
    assert _remote_claims(bare) == {2: "wa:boost a", 3: "wb:boost b"}
    rounds = git(bare, "log", "--format=%s", f"{won}..refs/kgit/c1/campaign")
    assert rounds == "kgit c1: round-3 started: boost b"  # no round of B's opened for line 1


def test_two_workers_of_one_clone_never_claim_one_line(clones: tuple[Path, Path, Path]) -> None:
    a, _b, bare = clones
    items = _lines("a", "b")
    first, second = Worker(a, "w0", items), Worker(a, "w1", items)
    assert first.next() == second.next() == items[0]
    assert first.start(items[0]) == 2
    before = _record(a)
    with pytest.raises(Claimed, match=r"'boost a' was claimed first \(round-2, by w0"):
        second.start(items[0])  # the claim is checked under the write lock, in the record
    assert _record(a) == before  # nothing written, no number taken
    assert git(a, "branch", "--list", "kgit/c1/round-3") == ""
    assert second.next() == items[1] and second.start(items[1]) == 3
    assert second.publish() and _remote_claims(bare) == {2: "w0:boost a", 3: "w1:boost b"}


def test_a_patch_line_is_one_claim_wherever_each_clone_keeps_the_file(tmp_path: Path) -> None:
    texts = {}
    for place in ("host-a", "host-b"):
        folder = tmp_path / place
        folder.mkdir()
        (folder / "swizzle.patch").write_text("--- a/k\n+++ b/k\n")
        (folder / "other.patch").write_text(f"--- a/k\n+++ b/k {place}\n")
        line = parse_line('{"hypothesis": "swizzle", "patch": "swizzle.patch"}', 1, folder)
        other = parse_line('{"hypothesis": "swizzle", "patch": "other.patch"}', 2, folder)
        assert line is not None and other is not None
        texts[place] = (line, other)
    (a, a_other), (b, b_other) = texts["host-a"], texts["host-b"]
    assert a.key != b.key  # this clone's ledger keys by the path, as before
    assert a.shared_key() == b.shared_key()  # the record's claim, by the patch's bytes
    assert a_other.shared_key() != b_other.shared_key() != a.shared_key()
    command = parse_line(f"boost a :: {_edit('a', 1.2)}", 1, tmp_path)
    assert command is not None and command.shared_key() == command.key


# -- a worker's own round, written in another clone too -------------------------------------


def _kgit(repo: Path, *args: str) -> str:
    """kgit as its own process in REPO (another clone, acting while a worker runs here)."""
    done = subprocess.run(
        [sys.executable, "-m", "kgit", "-q", *args], cwd=repo, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _while_measuring(act: Callable[[], None], said: list[str]) -> Callable[[str], None]:
    """A worker's `say` that runs ACT as the worker's harness first reports: another clone acts
    while this one measures its round, before it records and pushes its verdict."""

    def say(message: str) -> None:
        first = message.startswith("harness:") and not any(m.startswith("harness:") for m in said)
        said.append(message)
        if first:
            act()

    return say


def _roll_back_in(clone: Path, number: int, reason: str) -> None:
    """Someone in CLONE rolls back round NUMBER (another clone's worker's) and pushes."""
    _kgit(clone, "pull")
    git(clone, "checkout", "-q", f"kgit/c1/round-{number}")
    _kgit(clone, "round", "rollback", "--reason", reason)
    _kgit(clone, "push")


@pytest.mark.slow
def test_a_round_rolled_back_in_another_clone_ends_the_workers_turn_losing_nothing(
    clones: tuple[Path, Path, Path],
) -> None:
    a, b, bare = clones
    items = _lines("a", "b")
    worker = Worker(a, "wa", items)

    said: list[str] = []
    act = functools.partial(_roll_back_in, b, 2, "stopped by hand in clone B")
    outcome = worker.round(items[0], _while_measuring(act, said))
    assert outcome is not None, said
    assert outcome["status"] == "ROLLED BACK" and outcome["closed_elsewhere"] is True
    reason = str(outcome["reason"])
    assert reason.startswith("closed in another clone (ROLLED BACK: stopped by hand in clone B)")
    # A's verdict, which B's rollback beat to the remote, is kept here, not lost.
    kept = reason.rsplit("kept under ", 1)[1]
    assert kept.startswith("refs/kgit-salvage/c1/"), reason
    commit = str(outcome["commit"])
    verdict = git(a, "show", f"{kept}kgit/c1/campaign:notes/rounds/{commit}")
    assert "status: VALIDATED" in verdict and "hypothesis: boost a" in verdict
    # The clone holds the remote's record, in which B's rollback of round 2 stands.
    assert _record(a) == _record(bare)
    note = git(bare, "show", f"refs/kgit/c1/campaign:notes/rounds/{commit}")
    assert "status: ROLLED BACK" in note and "stopped by hand in clone B" in note
    assert any("another clone wrote it too" in m for m in said), said
    # The worker goes on with its next line.
    nxt = worker.next()
    assert nxt == items[1]
    done = worker.round(nxt)
    assert done is not None and done["status"] == "ACCEPTED" and done["round"] == 3, done
    assert kgit_in(a, "doctor").code == 0


@pytest.mark.slow
def test_a_round_validated_in_another_clone_too_is_validated_again_from_the_remotes_copy(
    clones: tuple[Path, Path, Path],
) -> None:
    a, b, bare = clones
    items = _lines("a")
    worker = Worker(a, "wa", items)

    def validate_there() -> None:  # someone in clone B validates A's round 2 too, and pushes
        _kgit(b, "pull")
        git(b, "checkout", "-q", "kgit/c1/round-2")
        _kgit(b, "round", "validate")
        _kgit(b, "push")

    said: list[str] = []
    outcome = worker.round(items[0], _while_measuring(validate_there, said))
    assert outcome is not None and outcome["status"] == "ACCEPTED", (outcome, said)
    assert "closed_elsewhere" not in outcome
    dropped = [m for m in said if "another clone wrote it too" in m]
    assert len(dropped) == 1 and "kept under refs/kgit-salvage/c1/" in dropped[0], said
    # A validated again from the remote's copy: its evidence pools with B's validation.
    assert any("pooling with 1 earlier validation" in m for m in said), said
    commit = str(outcome["commit"])
    tree = git(bare, "rev-parse", f"{commit}^{{tree}}")
    evidence = git(bare, "show", f"refs/kgit/c1/campaign:evidence/round-2/{tree}.json")
    assert '"validations": 2' in evidence
    assert git(bare, "rev-parse", "refs/heads/kgit/c1/best") == commit
    assert _record(a) == _record(bare)


@pytest.mark.slow
def test_a_round_closed_in_another_clone_between_two_steps_is_seen_at_the_next_pull(
    clones: tuple[Path, Path, Path],
) -> None:
    a, b, bare = clones
    items = _lines("a", "b")
    worker = Worker(a, "wa", items)
    pulls, pull = [], worker.link.sync

    def sync() -> None:  # the round's third pull (before its accept): B has rolled it back
        pulls.append(len(pulls))
        if len(pulls) == 3:
            _roll_back_in(b, 2, "not this one")
        pull()

    worker.link.sync = sync  # type: ignore[method-assign]
    said: list[str] = []
    outcome = worker.round(items[0], said.append)
    assert outcome is not None and len(pulls) == 3, said
    assert outcome["status"] == "ROLLED BACK" and outcome["closed_elsewhere"] is True
    assert outcome["reason"] == "closed in another clone (ROLLED BACK: not this one)"
    # Nothing of A's was dropped: its verdict was pushed before B's rollback, which kept it.
    assert git(a, "for-each-ref", "refs/kgit-salvage/") == ""
    note = git(bare, "show", f"refs/kgit/c1/campaign:notes/rounds/{outcome['commit']}")
    assert "status: ROLLED BACK" in note and "aggregate:" in note
    assert _record(a) == _record(bare) and git(worker.tree, "status", "--porcelain") == ""
    nxt = worker.next()
    assert nxt == items[1]
    done = worker.round(nxt)
    assert done is not None and done["status"] == "ACCEPTED", done


# -- whole campaigns: `kgit worker --remote` processes in several clones ------------------------

WORKER = [sys.executable, "-m", "kgit", "-q", "worker", "--json", "--remote", "origin"]
GAINS = {"boost a": 1.1, "boost b": 1.2, "boost d": 1.1, "boost f": 1.25}
IDEAS = [("boost a", "a", 1.1), ("boost b", "b", 1.2), ("slow c", "c", 0.8),
         ("boost d", "d", 1.1), ("slow e", "e", 0.7)]  # fmt: skip
# Line 1's change, in a clone whose worker has DIE_HERE set: it says its pid, then waits to be
# killed (its round started and claimed, the change not made yet).
DYING = 'if [ -n "$DIE_HERE" ]; then echo $$ > "$DIE_HERE"; exec sleep 600; fi; '


def _queue(repo: Path, clone: Path) -> Path:
    """The one hypotheses file, as CLONE's host keeps its own copy: five command lines and a
    patch line (`boost f`, its patch beside the file); REPO is the campaign's first clone."""
    folder = clone.parent / f"{clone.name}-ideas"
    folder.mkdir(exist_ok=True)
    kernel = repo / "kernel.txt"
    text = kernel.read_text()
    kernel.write_text(text.replace("boost.f: 1.0", "boost.f: 1.25"))
    diff = subprocess.run(["git", "diff", "-U1"], cwd=repo, capture_output=True, text=True)
    (folder / "boost-f.patch").write_text(diff.stdout)  # as git wrote it: `git()` strips it
    kernel.write_text(text)
    lines = [f"{t} :: {DYING if n == 0 else ''}{_edit(x, f)}" for n, (t, x, f) in enumerate(IDEAS)]
    lines.append('{"hypothesis": "boost f", "patch": "boost-f.patch"}')
    (folder / "ideas.txt").write_text("\n".join(lines) + "\n")
    return folder / "ideas.txt"


def _worker(
    clone: Path, queue: Path, name: str, *extra: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*WORKER, "--hypotheses", str(queue), "--device", "cpu", "--name", name, *extra],
        cwd=clone,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _ended(procs: list[subprocess.Popen[str]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each worker's rounds and summaries, once all have ended."""
    outcomes, summaries = [], []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        lines = [json.loads(line) for line in out.splitlines()]
        outcomes += [line for line in lines if line["event"] == "round"]
        summaries.append(lines[-1])
    return outcomes, summaries


def _every_line_once(outcomes: list[dict[str, Any]], bare: Path) -> None:
    """Each line of the file tested to the end by exactly one round, its gains on the best line."""
    texts = [o["hypothesis"] for o in outcomes]
    assert sorted(texts) == sorted([t for t, _x, _f in IDEAS] + ["boost f"]), outcomes
    numbers = [o["round"] for o in outcomes]
    assert len(set(numbers)) == len(numbers), outcomes
    accepted = {o["hypothesis"] for o in outcomes if o["status"] == "ACCEPTED"}
    assert accepted == set(GAINS), outcomes
    best = git(bare, "show", "refs/heads/kgit/c1/best:kernel.txt").splitlines()
    for text, factor in GAINS.items():
        assert f"boost.{text[-1]}: {factor}" in best, best
    claimed = _remote_claims(bare)
    assert {n: h.split(":", 1)[1] for n, h in claimed.items() if n in numbers} == {
        o["round"]: o["hypothesis"] for o in outcomes
    }


def _same_everywhere(places: list[Path]) -> None:
    for clone in places:
        assert kgit_in(clone, "pull").code == 0
    for clone in places[1:]:
        assert log(clone) == log(places[0])
    for clone in places:
        assert kgit_in(clone, "doctor").code == 0


@pytest.mark.slow
def test_three_clones_share_one_hypotheses_file_each_line_once(
    kernel_repo: Path, clones: tuple[Path, Path, Path]
) -> None:
    a, b, bare = clones
    places = [a, b, fresh_clone(bare, "clone-c")]
    procs = [_worker(c, _queue(kernel_repo, c), f"w{n}") for n, c in enumerate(places)]
    outcomes, summaries = _ended(procs)
    _every_line_once(outcomes, bare)
    for clone, summary in zip(places, summaries, strict=True):
        assert summary["claims"]["clone"] == clone_id(open_repo(clone))
        assert summary["claims"]["taken_back"] == []
    # Pulled first: a clone whose worker ended early has not seen the others' last rounds (CI
    # once read rounds 1-4 and 6 of 7 in clone A before its pull).
    _same_everywhere(places)
    assert [r["round"] for r in log(a)] == list(range(1, len(outcomes) + 2))  # no round lost


def _die_holding_line_one(clone: Path, queue: Path) -> int:
    """A worker in CLONE that claims line 1, opens its round and is killed (SIGKILL) before it
    changes anything: the round it leaves in flight."""
    pid_file = clone.parent / "dying.pid"
    proc = _worker(clone, queue, "w", env={"DIE_HERE": str(pid_file)})
    deadline = time.monotonic() + 120
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    proc.kill()
    proc.communicate()
    (claim,) = _claims(clone)
    assert claim.hypothesis == "boost a" and claim.clone == clone_id(open_repo(clone))
    return claim.round


@pytest.mark.slow
def test_a_worker_restarted_in_its_clone_takes_back_the_line_its_dead_process_held(
    kernel_repo: Path, clones: tuple[Path, Path, Path]
) -> None:
    a, b, bare = clones
    queues = {clone: _queue(kernel_repo, clone) for clone in (a, b)}
    dead = _die_holding_line_one(b, queues[b])
    # A's worker runs the file: line 1 is claimed, its round in flight, so A leaves it.
    outcomes, _ = _ended([_worker(a, queues[a], "w")])
    assert "boost a" not in [o["hypothesis"] for o in outcomes]
    assert kgit_in(a, "pull").code == 0
    status = kgit_in(a, "status", "--json").json()
    assert status["rounds_in_flight"] == [dead]  # type: ignore[index]
    # B's worker, restarted under its name, rolls back what its dead process left and runs line 1.
    again, summaries = _ended([_worker(b, queues[b], "w")])
    assert summaries[0]["claims"]["taken_back"] == [dead]
    assert [o["hypothesis"] for o in again] == ["boost a"]
    _every_line_once(outcomes + again, bare)
    rows = {row["round"]: row for row in log(b)}
    assert rows[dead]["status"] == "ROLLED BACK"
    _same_everywhere([a, b])


@pytest.mark.slow
def test_the_line_of_a_clone_that_is_gone_is_taken_over_from_another(
    kernel_repo: Path, clones: tuple[Path, Path, Path]
) -> None:
    a, b, bare = clones
    dead = _die_holding_line_one(b, _queue(kernel_repo, b))
    gone = clone_id(open_repo(b))
    queue = _queue(kernel_repo, a)
    wrong = _worker(a, queue, "w", "--take-over", "elsewhere:/nowhere")
    _out, err = wrong.communicate(timeout=120)
    assert wrong.returncode == 2 and f"clones whose workers hold rounds in flight: {gone}" in err
    outcomes, summaries = _ended([_worker(a, queue, "w", "--take-over", gone)])
    assert summaries[0]["claims"]["taken_back"] == [dead]
    _every_line_once(outcomes, bare)
    note = [row for row in log(a) if row["round"] == dead]
    assert note and note[0]["status"] == "ROLLED BACK", note
    _same_everywhere([a])


def test_take_over_needs_a_file_shared_through_a_remote(campaign: Path) -> None:
    queue = campaign.parent / "ideas.txt"
    queue.write_text(f"boost a :: {_edit('a', 1.2)}\n")
    git(campaign, "remote", "add", "origin", str(campaign.parent / "remote.git"))
    for where in (["--hypotheses", str(queue)], ["--hypotheses", "-", "--remote", "origin"]):
        refused = run_kgit("worker", *where, "--take-over", "host:/gone")
        assert refused.code == 2, refused
        assert "hint: kgit worker --remote REMOTE --hypotheses FILE --take-over" in refused.err


def test_the_summary_says_what_the_shared_queue_did() -> None:
    from dataclasses import replace

    from kgit.records.worker_results import WorkerClaims, WorkerSummary
    from kgit.views.commands import render_worker_summary

    summary = WorkerSummary(
        campaign="c1", worker="w0", device="0", worktree="w", rounds=3, accepted=1,
        rolled_back=2, seconds=12.0, rounds_per_hour=900.0, sharing={"remote": None},
        claims=WorkerClaims("host-a:/src/k", 2, (4, 7)),
    )  # fmt: skip
    assert render_worker_summary(summary).splitlines()[1:] == [
        "clone host-a:/src/k: 2 line(s) claimed first by another worker; rolled back as their "
        "workers ended: round-4, round-7"
    ]
    assert len(render_worker_summary(replace(summary, claims=None)).splitlines()) == 1
