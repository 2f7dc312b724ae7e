"""Rounds in parallel: rounds in flight at once in work trees of their own, workers sharing a
queue, and two accepts racing for the best line."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kgit.engine.campaign import Campaign
from kgit.engine.rounds.parallel import rebase_round
from kgit.gitdoor import open_repo
from tests.conftest import commit, git, run_kgit
from tests.engine.remotes import kgit_in, kgit_process

# Several kgit processes racing for minutes of CPU: the full suite runs them, the quick one
# (`pytest -m "not slow"`) leaves them out.
pytestmark = pytest.mark.slow

KGIT_WORKER = [sys.executable, "-m", "kgit", "-q", "worker", "--hypotheses"]
BOOSTS = ["a", "b", "c", "d", "e", "f", "g", "h"]


@pytest.fixture
def boosted(kernel_repo: Path) -> Path:
    return _boosted(kernel_repo, "")


def _boosted(repo: Path, extra: str) -> Path:
    """Campaign c1 on a kernel whose speed is 100 times one `boost.X` line per hypothesis, blank
    lines between them (changes to different lines merge on a rebase), and EXTRA lines."""
    (repo / "kernel.txt").write_text(
        "speed: 100\n\n" + "".join(f"boost.{x}: 1.0\n\n" for x in BOOSTS) + extra
    )
    git(repo, "commit", "-qam", "boost lines")
    assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
    done = run_kgit("baseline")
    assert done.code == 0, done
    return repo


def _edit(name: str, factor: float) -> str:
    return f"sed -i 's/^boost.{name}: .*/boost.{name}: {factor}/' kernel.txt"


def test_two_rounds_in_flight_then_one_accept_makes_the_other_stale(boosted: Path) -> None:
    repo = boosted
    trees = [repo.parent / "wt-a", repo.parent / "wt-b"]
    numbers = []
    for tree, name in zip(trees, "ab", strict=True):
        started = run_kgit("round", "start", f"boost {name}", "--worktree", str(tree), "--json")
        assert started.code == 0, started
        numbers.append(started.json()["round"])  # type: ignore[index]
    assert numbers == [2, 3]
    assert run_kgit("status", "--json").json()["rounds_in_flight"] == [2, 3]  # type: ignore[index]
    for tree, name in zip(trees, "ab", strict=True):
        subprocess.run(_edit(name, 1.2), shell=True, cwd=tree, check=True)
        done = commit(tree, f"boost {name}")
        assert done.returncode == 0 and "gate: passed" in done.stderr, done.stderr
        verdict = kgit_in(tree, "-q", "round", "validate", "--json")
        assert verdict.json()["decision"] == "ACCEPTED", verdict  # type: ignore[index]
    assert kgit_in(trees[0], "round", "accept").code == 0
    stale = kgit_in(trees[1], "round", "accept")
    assert stale.code == 1 and "does not build on" in stale.err, stale
    # In the main work tree, on the best line, two rounds in flight are not guessed between.
    assert kgit_in(trees[1], "round", "validate").code == 1
    # The round's own tree: rebase onto the new best, validate again (gated again), accept.
    campaign = Campaign.load(open_repo(trees[1]), "c1")
    assert rebase_round(campaign, print) is None
    # The rebased commit has no verdict yet: no note of the old commit is copied onto it (git's
    # copy, unlocked, once made another worker's save lose its swap).
    rounds = "--ref=refs/notes/kgit/c1/rounds"
    assert (
        subprocess.run(
            ["git", "notes", rounds, "list", "HEAD"], cwd=trees[1], capture_output=True
        ).returncode
        == 1
    )
    assert "git notes copy" not in git(repo, "reflog", "show", "refs/notes/kgit/c1/rounds")
    again = kgit_in(trees[1], "-q", "round", "validate", "--json")
    assert again.json()["decision"] == "ACCEPTED", again  # type: ignore[index]
    assert kgit_in(trees[1], "round", "accept").code == 0
    text = git(repo, "show", "kgit/c1/best:kernel.txt")
    assert "boost.a: 1.2" in text and "boost.b: 1.2" in text  # no accepted gain lost
    assert git(trees[1], "status", "--porcelain") == ""
    assert run_kgit("doctor", "--json").json()["problems"] == []  # type: ignore[index]


def test_two_accepts_race_one_wins_the_other_is_refused(boosted: Path) -> None:
    repo = boosted
    trees = [repo.parent / "race-a", repo.parent / "race-b"]
    for tree, name in zip(trees, "ab", strict=True):
        assert run_kgit("round", "start", f"boost {name}", "--worktree", str(tree)).code == 0
        subprocess.run(_edit(name, 1.3), shell=True, cwd=tree, check=True)
        assert commit(tree, f"boost {name}").returncode == 0
        assert kgit_in(tree, "-q", "round", "validate").code == 0
    procs = [kgit_process(tree, "round", "accept") for tree in trees]
    ends = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in procs]
    assert sorted(code for code, _ in ends) == [0, 1], ends
    loser = next(err for code, err in ends if code == 1)
    assert "does not build on" in loser or "measured against" in loser, loser
    log = run_kgit("log", "--json").json()
    statuses = {row["round"]: row["status"] for row in log}  # type: ignore[union-attr, index]
    assert sorted(statuses.values()).count("ACCEPTED") == 1  # one accept, never two
    assert run_kgit("status", "--json").json()["rounds_in_flight"] != []  # type: ignore[index]


def _queue(repo: Path) -> Path:
    """Eight hypotheses: four gains, two losses, one a gate failure, one that changes nothing."""
    lines = [
        f"boost a by 10% :: {_edit('a', 1.1)}",
        f"boost b by 20% :: {_edit('b', 1.2)}",
        f"slow c by 20% :: {_edit('c', 0.8)}",
        json.dumps({"hypothesis": "boost d by 15%", "command": _edit("d", 1.15)}),
        "# a comment",
        "a bug :: echo BUG >> kernel.txt",
        f"boost f by 10% :: {_edit('f', 1.1)}",
        f"slow g by 30% :: {_edit('g', 0.7)}",
        "nothing at all :: true",
    ]
    path = repo.parent / "ideas.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _workers(repo: Path, queue: Path, devices: list[str]) -> list[dict[str, object]]:
    procs = [
        subprocess.Popen(
            [*KGIT_WORKER, str(queue), "--device", device, "--name", f"w{n}", "--json"],
            cwd=repo,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n, device in enumerate(devices)
    ]
    outcomes = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        lines = [json.loads(line) for line in out.splitlines()]
        assert lines[-1]["event"] == "done"
        outcomes += [line for line in lines if line["event"] == "round"]
    return outcomes


@pytest.mark.parametrize("devices", [["0", "1"], ["0", "1", "2", "3"]])
def test_workers_share_a_queue_and_lose_nothing(boosted: Path, devices: list[str]) -> None:
    repo = boosted
    outcomes = _workers(repo, _queue(repo), devices)
    numbers = sorted(o["round"] for o in outcomes)  # type: ignore[type-var]
    assert numbers == list(range(2, 10))  # every line once, round numbers unique, none lost
    by_hypothesis = {o["hypothesis"]: o for o in outcomes}
    accepted = {h for h, o in by_hypothesis.items() if o["status"] == "ACCEPTED"}
    gains = {"boost a by 10%", "boost b by 20%", "boost d by 15%", "boost f by 10%"}
    # Once in CI (4 workers on 2 loaded cores) a gain was not accepted: say why if it recurs.
    why = {h: (by_hypothesis[h]["status"], by_hypothesis[h].get("reason")) for h in gains}
    assert accepted == gains, why
    assert "gate" in str(by_hypothesis["a bug"]["reason"])
    assert "changed nothing" in str(by_hypothesis["nothing at all"]["reason"])
    log = run_kgit("log", "--json").json()
    assert [row["round"] for row in log] == list(range(1, 10))  # type: ignore[union-attr, index]
    statuses = [row["status"] for row in log]  # type: ignore[union-attr, index]
    assert statuses.count("ACCEPTED") == 4 and statuses.count("ROLLED BACK") == 4
    # Lineage: every accepted commit is on the best line, no rolled-back one is, and the best
    # line's kernel holds every accepted gain.
    best = git(repo, "rev-parse", "kgit/c1/best")
    line = set(git(repo, "rev-list", best).split())
    for o in outcomes:
        on_line = o["commit"] in line
        assert on_line == (o["status"] == "ACCEPTED"), o
    kernel = git(repo, "show", "kgit/c1/best:kernel.txt")
    for name, factor in (("a", "1.1"), ("b", "1.2"), ("d", "1.15"), ("f", "1.1")):
        assert f"boost.{name}: {factor}" in kernel
    status = run_kgit("status", "--json").json()
    assert status["rounds_in_flight"] == [] and status["next_round"] == 10  # type: ignore[index]
    assert run_kgit("doctor", "--json").json()["problems"] == []  # type: ignore[index]
    again = _workers(repo, _queue(repo), devices[:1])  # the queue is done: nothing tried twice
    assert again == []


def test_workers_on_one_device_never_time_at_once(kernel_repo: Path) -> None:
    repo = _boosted(kernel_repo, "hold\npass_sleep: 0.3\n")  # passes log when they time
    queue = repo.parent / "q.txt"
    queue.write_text("".join(f"boost {x} :: {_edit(x, 1.05)}\n" for x in "abcd"))
    outcomes = _workers(repo, queue, ["0", "0"])
    assert len(outcomes) == 4
    spans, logs = [], list((repo / ".git/kgit/worktrees/c1").glob("*/events.log"))
    assert {log.parent.name for log in logs} == {"w0", "w1"}  # each worker measured
    for log in logs:
        events = [line.split() for line in log.read_text().splitlines()]
        starts = [float(t) for t, _, e in events if e == "pass-start"]
        ends = [float(t) for t, _, e in events if e == "pass-end"]
        spans += list(zip(starts, ends, strict=True))
    spans.sort()
    assert len(spans) >= 4
    assert all(end <= nxt for (_, end), (nxt, _) in itertools.pairwise(spans)), spans


def test_a_state_from_before_parallel_rounds_reads_its_open_round() -> None:
    from kgit.records.notes import CampaignState

    old = {"schema_version": 1, "name": "c1", "base": "b" * 40, "created": "t", "next_round": 4}
    opened = {"number": 3, "hypothesis": "h", "parent": "a" * 40, "started_at": "t"}
    state = CampaignState.from_json(json.dumps({**old, "open_round": opened}).encode())
    assert [r.number for r in state.open_rounds] == [3] and state.open_round is not None
    assert json.loads(state.to_json())["schema_version"] == 2
    closed = CampaignState.from_json(json.dumps({**old, "open_round": None}).encode())
    assert closed.open_rounds == [] and closed.open_round is None


def test_a_round_measured_on_another_device_says_so(
    kernel_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _boosted(kernel_repo, "gpu: FakeGPU\n")  # the fake harness names its device's UUID
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert run_kgit("round", "start", "boost a").code == 0
    subprocess.run(_edit("a", 1.2), shell=True, cwd=repo, check=True)
    assert commit(repo, "boost a").returncode == 0
    verdict = run_kgit("-q", "round", "validate", "--json").json()
    reasons = verdict["reasons"]  # type: ignore[index]
    assert verdict["decision"] == "ACCEPTED"  # type: ignore[index]
    assert any(
        "GPU-fake-1" in r and "best-line values measured on GPU-fake-0" in r for r in reasons
    )
    assert any("vs baseline compares GPU-fake-1" in r for r in reasons)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # the baseline's device: nothing to say
    assert run_kgit("round", "accept").code == 0
    assert run_kgit("round", "start", "boost b").code == 0
    subprocess.run(_edit("b", 1.2), shell=True, cwd=repo, check=True)
    assert commit(repo, "boost b").returncode == 0
    same = run_kgit("-q", "round", "validate", "--json").json()
    assert not any("GPU-fake-1 with" in r for r in same["reasons"])  # type: ignore[index]
    assert any("best-line values measured on GPU-fake-1" in r for r in same["reasons"])  # type: ignore[index]


def test_a_round_is_judged_against_the_best_line_as_accepted_not_in_round_order(
    boosted: Path,
) -> None:
    # Round 3 is accepted before round 2, which is then rebased and accepted on top of it: the
    # best line holds both gains, and the stored best values must be round 2's (the last on
    # the line), not round 3's (the highest number), or a 10% loss reads as a gain.
    repo = boosted
    trees = {name: repo.parent / f"order-{name}" for name in "ab"}
    for name, tree in trees.items():
        assert run_kgit("round", "start", f"boost {name}", "--worktree", str(tree)).code == 0
        subprocess.run(_edit(name, 1.2), shell=True, cwd=tree, check=True)
        assert commit(tree, f"boost {name}").returncode == 0
    assert kgit_in(trees["b"], "-q", "round", "validate").code == 0
    assert kgit_in(trees["b"], "round", "accept").code == 0
    assert rebase_round(Campaign.load(open_repo(trees["a"]), "c1"), print) is None
    assert kgit_in(trees["a"], "-q", "round", "validate").code == 0
    assert kgit_in(trees["a"], "round", "accept").code == 0
    assert run_kgit("round", "start", "slow c", "--worktree", str(trees["b"])).code == 0
    subprocess.run(_edit("c", 0.9), shell=True, cwd=trees["b"], check=True)
    assert commit(trees["b"], "slow c").returncode == 0
    verdict = kgit_in(trees["b"], "-q", "round", "validate", "--json").json()
    assert verdict["decision"] == "ROLLED BACK", verdict  # type: ignore[index]
    assert round(verdict["delta_vs_best_pct"]) == -10  # type: ignore[index, arg-type]
