"""Issue 12, items 2, 4, 5 and 6: what a killed or overtaken command leaves, and how the next
command recovers. Each state is made by killing kgit at the git call in question (see
tests/engine/killing.py), never by mocking git."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgit.engine.campaign import Campaign
from kgit.engine.rounds.accept import accept_round
from kgit.errors import KgitError
from kgit.gitdoor import open_repo
from kgit.progress import Voice
from tests.conftest import commit, git, record_note, run_kgit
from tests.engine.killing import kill_after_call, marked_open

ROUNDS = "refs/notes/kgit/c1/rounds"


def status(repo: Path) -> dict[str, Any]:
    result = run_kgit("status", "--json")
    assert result.code == 0, result
    data: dict[str, Any] = result.json()  # type: ignore[assignment]
    return data


def validated_round(repo: Path, speed: int, hypothesis: str = "a change") -> str:
    """Start a round, commit a kernel at SPEED, validate it; returns the round's commit."""
    assert run_kgit("round", "start", hypothesis).code == 0
    (repo / "kernel.txt").write_text(f"speed: {speed}\n")
    assert commit(repo, hypothesis).returncode == 0
    assert run_kgit("round", "validate").code == 0
    return git(repo, "rev-parse", "HEAD")


def note_status(repo: Path, commit_sha: str) -> str:
    note = git(repo, "notes", f"--ref={ROUNDS}", "show", commit_sha)
    return next(line for line in note.splitlines() if line.startswith("status: "))[8:]


# -- item 2: a start killed between creating the branch and saving the record ------------------


def test_a_start_killed_after_creating_its_branch_is_adopted_by_the_next_start(
    campaign: Path,
) -> None:
    repo = campaign
    kill_after_call(
        repo, "update-ref -m 'kgit: round-2 started' refs/heads", "round", "start", "bigger blocks"
    )
    assert "refs/heads/kgit/c1/round-2" in git(repo, "for-each-ref", "refs/heads/kgit/c1/")
    assert status(repo)["open_round"] is None  # the record was never saved
    again = run_kgit("round", "start", "bigger blocks")
    assert again.code == 0, again
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/kgit/c1/round-2"
    assert status(repo)["open_round"]["round"] == 2


def test_a_start_refuses_a_leftover_branch_holding_unrecorded_commits(campaign: Path) -> None:
    repo = campaign
    git(repo, "checkout", "-q", "-b", "kgit/c1/round-2")
    git(repo, "commit", "-q", "--allow-empty", "--no-verify", "-m", "by hand")
    git(repo, "checkout", "-q", "kgit/c1/best")
    refused = run_kgit("round", "start", "bigger blocks")
    assert refused.code == 1 and "no round recorded it" in refused.err
    assert "hint: keep its commits under another name: git branch -m" in refused.err
    assert "Traceback" not in refused.err


def test_a_start_killed_before_its_checkout_says_to_check_the_branch_out(campaign: Path) -> None:
    repo = campaign
    kill_after_call(repo, "update-ref -m 'kgit: round-2 started: x'", "round", "start", "x")
    now = status(repo)
    assert now["open_round"]["round"] == 2
    assert now["next_step"] == "git checkout kgit/c1/round-2"
    assert "its branch is not checked out" in run_kgit("status").out


# -- item 4: a stale accept must not close a newer round ---------------------------------------


def test_a_stale_accept_does_not_close_the_round_opened_after_it(campaign: Path) -> None:
    repo = campaign
    tip = validated_round(repo, 120)
    # Accept re-runs the gate when the tree's gate note is gone: that is the window in which
    # another process accepts the round and opens the next one.
    record_note(repo, "gate", f"{tip}^{{tree}}", None)
    stale = Campaign.load(open_repo(repo), "c1")
    raced = []

    def say(message: str) -> None:
        if not raced:
            raced.append(run_kgit("round", "accept").code)
            raced.append(run_kgit("round", "start", "the next idea").code)

    try:
        accept_round(stale, Voice(say, echo=False))
        raise AssertionError("the stale accept went through")
    except KgitError as error:
        assert "round-2 was closed by another kgit process" in error.message
    assert raced == [0, 0]
    now = status(repo)
    assert now["open_round"]["round"] == 3
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/kgit/c1/round-3"
    assert git(repo, "rev-parse", "kgit/c1/best") == tip


def test_an_accept_refuses_when_the_round_branch_moved_under_it(campaign: Path) -> None:
    repo = campaign
    tip = validated_round(repo, 120)
    record_note(repo, "gate", f"{tip}^{{tree}}", None)
    stale = Campaign.load(open_repo(repo), "c1")

    def say(message: str) -> None:  # someone commits on the round while the gate runs
        git(repo, "commit", "-q", "--allow-empty", "--no-verify", "-m", "later")

    try:
        accept_round(stale, Voice(say, echo=False))
        raise AssertionError("accept took a tip it did not judge")
    except KgitError as error:
        assert "branch moved while kgit was working on it" in error.message
    assert git(repo, "rev-parse", "kgit/c1/best") != tip
    assert status(repo)["open_round"]["round"] == 2


# -- item 5: an accept killed after moving the best line, then a rollback ----------------------


def test_a_rollback_after_an_interrupted_accept_leaves_no_rolled_back_commit_on_best(
    campaign: Path,
) -> None:
    repo = campaign
    parent = git(repo, "rev-parse", "kgit/c1/best")
    tip = validated_round(repo, 120)
    kill_after_call(repo, "update-ref -m 'kgit: accept round-2'", "round", "accept")
    assert git(repo, "rev-parse", "kgit/c1/best") == tip
    now = status(repo)
    assert now["open_round"]["interrupted"] == "accept"
    assert now["next_step"] == "kgit round accept"
    done = run_kgit("round", "rollback", "--reason", "changed my mind")
    assert done.code == 0, done
    assert "is back at" in done.err
    assert git(repo, "rev-parse", "kgit/c1/best") == parent
    assert note_status(repo, tip) == "ROLLED BACK"
    assert git(repo, "rev-parse", "refs/kgit/c1/rounds/2") == tip
    assert status(repo)["open_round"] is None
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/kgit/c1/best"
    assert run_kgit("doctor").code == 0
    # The next accepted round does not carry it: the best line never held a rolled-back commit.
    assert run_kgit("round", "start", "another").code == 0
    assert git(repo, "rev-parse", "HEAD") == parent


def test_a_validation_run_again_after_an_interrupted_accept_can_still_be_rolled_back(
    campaign: Path,
) -> None:
    repo = campaign
    parent = git(repo, "rev-parse", "kgit/c1/best")
    tip = validated_round(repo, 120)
    kill_after_call(repo, "update-ref -m 'kgit: accept round-2'", "round", "accept")
    # Validated again, now against a best line that holds the round itself (an interleaved
    # comparison finds no gain): the note it records no longer accepts.
    note = git(repo, "notes", f"--ref={ROUNDS}", "show", tip)
    assert "decision: ACCEPTED\n" in note
    again = note.replace("decision: ACCEPTED\n", "decision: ROLLED BACK\n") + "\n"
    record_note(repo, "rounds", tip, again.encode())
    now = status(repo)
    assert now["next_step"].startswith("kgit round rollback"), now
    refused = run_kgit("round", "accept")
    # Refused: the best line holds a commit whose recorded verdict no longer accepts, as if it
    # had been moved there by hand; rollback puts it back.
    assert refused.code == 1 and "was moved outside kgit" in refused.err
    assert run_kgit("round", "rollback", "--reason", "test").code == 0
    assert git(repo, "rev-parse", "kgit/c1/best") == parent


def test_an_accept_after_an_interrupted_accept_completes_it(campaign: Path) -> None:
    repo = campaign
    tip = validated_round(repo, 120)
    kill_after_call(repo, "update-ref -m 'kgit: accept round-2'", "round", "accept")
    marked_open(repo, tip, "ACCEPTED")
    assert note_status(repo, tip) == "ACCEPTED" and status(repo)["open_round"] is not None
    assert run_kgit("round", "accept").code == 0
    assert status(repo)["open_round"] is None
    assert git(repo, "rev-parse", "kgit/c1/best") == tip


def test_an_accept_refuses_a_round_whose_rollback_was_interrupted(campaign: Path) -> None:
    repo = campaign
    tip = validated_round(repo, 120)  # an accepting verdict, rolled back all the same
    marked_open(repo, tip, "ROLLED BACK", "test")
    assert status(repo)["next_step"].startswith("kgit round rollback")
    refused = run_kgit("round", "accept")
    assert refused.code == 1 and "hint: kgit round rollback finishes it" in refused.err
    assert run_kgit("round", "rollback", "--reason", "test").code == 0
    assert note_status(repo, tip) == "ROLLED BACK"
    assert git(repo, "rev-parse", "kgit/c1/best") != tip


# -- item 6: a closed round's branch left checked out ------------------------------------------


def test_a_closed_rounds_branch_left_checked_out_is_explained_blocked_and_swept(
    campaign: Path,
) -> None:
    repo = campaign
    tip = validated_round(repo, 120)
    kill_after_call(repo, "update-ref -m 'kgit: round-2 ACCEPTED'", "round", "accept")
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/kgit/c1/round-2"
    now = status(repo)
    assert now["open_round"] is None and now["closed_round_checked_out"] == 2
    assert now["next_step"] == "git checkout kgit/c1/best"
    assert "round-2 is closed but its branch is checked out" in run_kgit("status").out
    (repo / "kernel.txt").write_text("speed: 130\n")
    blocked = commit(repo, "on a closed round")
    assert blocked.returncode != 0 and "round-2 of campaign c1 is not in progress" in blocked.stderr
    git(repo, "checkout", "-q", "--", "kernel.txt")
    assert run_kgit("round", "start", "the next idea").code == 0
    branches = git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/kgit/c1/")
    assert branches.splitlines() == ["refs/heads/kgit/c1/best", "refs/heads/kgit/c1/round-3"]
    assert git(repo, "rev-parse", "kgit/c1/best") == tip


def test_a_rollback_killed_before_leaving_its_branch_is_recovered_by_the_next_start(
    campaign: Path,
) -> None:
    repo = campaign
    tip = validated_round(repo, 90)
    kill_after_call(
        repo, "update-ref -m 'kgit: round-2 ROLLED BACK", "round", "rollback", "--reason", "test"
    )
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/kgit/c1/round-2"
    assert status(repo)["next_step"] == "git checkout kgit/c1/best"
    assert run_kgit("round", "start", "another idea").code == 0
    assert "round-2" not in git(repo, "for-each-ref", "refs/heads/kgit/c1/")
    assert git(repo, "rev-parse", "refs/kgit/c1/rounds/2") == tip
    assert note_status(repo, tip) == "ROLLED BACK"
