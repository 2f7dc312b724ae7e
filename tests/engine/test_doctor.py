"""`kgit doctor`: each finding made for real (a killed kgit, a hand-made ref), explained, and
repaired by --fix or by the command it prints."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import commit, git, record_note, run_kgit
from tests.engine.killing import kill_after_call, marked_open

ROUNDS = "refs/notes/kgit/c1/rounds"


def doctor(*flags: str) -> tuple[int, dict[str, Any]]:
    result = run_kgit("doctor", "--json", *flags)
    assert result.code in (0, 1) and "Traceback" not in result.err, result
    data: dict[str, Any] = result.json()  # type: ignore[assignment]
    assert data["clean"] == (result.code == 0)
    return result.code, data


def kinds(data: dict[str, Any]) -> list[str]:
    return [finding["kind"] for finding in data["problems"]]


def finding(data: dict[str, Any], kind: str) -> dict[str, Any]:
    found: dict[str, Any] = next(f for f in data["problems"] if f["kind"] == kind)
    return found


def follow(repo: Path, repair: str) -> None:
    """Run a printed repair command as a user would paste it."""
    for part in repair.split(" && "):
        done = subprocess.run(shlex.split(part), cwd=repo, capture_output=True, text=True)
        assert done.returncode == 0, (part, done.stderr)


def validated_round(repo: Path, speed: int) -> str:
    assert run_kgit("round", "start", "a change").code == 0
    (repo / "kernel.txt").write_text(f"speed: {speed}\n")
    assert commit(repo, "a change").returncode == 0
    assert run_kgit("round", "validate").code == 0
    return git(repo, "rev-parse", "HEAD")


def rolled_back_round(repo: Path) -> str:
    tip = validated_round(repo, 90)
    assert run_kgit("round", "rollback", "--reason", "slower").code == 0
    return tip


def test_a_healthy_campaign_is_clean(campaign: Path) -> None:
    assert doctor() == (0, {"campaign": "c1", "clean": True, "problems": [], "fixed": []})
    rolled_back_round(campaign)
    validated_round(campaign, 120)
    assert doctor()[0] == 0
    text = run_kgit("doctor")
    assert text.code == 0 and "no problem found" in text.out


def test_an_orphan_branch_of_a_killed_start(campaign: Path) -> None:
    repo = campaign
    kill_after_call(repo, "update-ref -m 'kgit: round-2 started' refs/heads", "round", "start", "x")
    code, data = doctor()
    assert code == 1 and kinds(data) == ["orphan_branch"]
    assert finding(data, "orphan_branch")["repair"] == "git branch -D kgit/c1/round-2"
    text = run_kgit("doctor")
    assert "killed before it saved the record" in text.out and "--fix repairs 1" in text.out
    assert doctor("--fix")[0] == 0
    assert "round-2" not in git(repo, "for-each-ref", "refs/heads/kgit/c1/")
    assert run_kgit("round", "start", "x").code == 0


def test_a_closed_rounds_branch_left_checked_out(campaign: Path) -> None:
    repo = campaign
    validated_round(repo, 120)
    kill_after_call(repo, "update-ref -m 'kgit: round-2 ACCEPTED'", "round", "accept")
    code, data = doctor()
    assert kinds(data) == ["closed_round_checked_out", "stale_branch"]
    assert finding(data, "closed_round_checked_out")["repair"] == "git checkout kgit/c1/best"
    code, data = doctor("--fix")
    assert code == 0 and len(data["fixed"]) == 2
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/kgit/c1/best"
    assert "round-2" not in git(repo, "for-each-ref", "refs/heads/kgit/c1/")


def test_a_branch_with_unrecorded_commits_is_left_to_the_user(campaign: Path) -> None:
    repo = campaign
    git(repo, "checkout", "-q", "-b", "kgit/c1/round-2")
    git(repo, "commit", "-q", "--allow-empty", "--no-verify", "-m", "by hand")
    git(repo, "checkout", "-q", "kgit/c1/best")
    code, data = doctor("--fix")
    assert code == 1 and kinds(data) == ["unrecorded_branch"] and data["fixed"] == []
    follow(repo, finding(data, "unrecorded_branch")["repair"])
    assert doctor()[0] == 0
    assert "salvage/c1-round-2" in git(repo, "branch", "--list", "salvage/*")


def test_an_interrupted_accept_is_completed(campaign: Path) -> None:
    repo = campaign
    tip = validated_round(repo, 120)
    kill_after_call(repo, "update-ref -m 'kgit: accept round-2'", "round", "accept")
    data = doctor()[1]
    assert kinds(data) == ["interrupted_accept"]
    assert finding(data, "interrupted_accept")["repair"] == "kgit round accept"
    assert doctor("--fix")[0] == 0
    note = git(repo, "notes", f"--ref={ROUNDS}", "show", tip)
    assert "status: ACCEPTED" in note
    assert run_kgit("status", "--json").json()["open_round"] is None  # type: ignore[index]


def test_an_interrupted_rollback_is_completed_with_its_reason(campaign: Path) -> None:
    repo = campaign
    tip = validated_round(repo, 90)
    marked_open(repo, tip, "ROLLED BACK", "register spills")
    data = doctor()[1]
    assert kinds(data) == ["interrupted_rollback"]
    assert doctor("--fix")[0] == 0
    note = git(repo, "notes", f"--ref={ROUNDS}", "show", tip)
    assert "status: ROLLED BACK" in note and "rollback_reason: register spills" in note
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/kgit/c1/best"


def test_a_best_line_on_a_rolled_back_commit(campaign: Path) -> None:
    repo = campaign
    best = git(repo, "rev-parse", "kgit/c1/best")
    rolled = rolled_back_round(repo)
    git(repo, "update-ref", "refs/heads/kgit/c1/best", rolled)  # what issue 12 item 5 left
    code, data = doctor("--fix")
    assert code == 1 and kinds(data) == ["rolled_back_on_best"] and data["fixed"] == []
    repair = finding(data, "rolled_back_on_best")["repair"]
    assert repair == f"git update-ref refs/heads/kgit/c1/best {best} {rolled}"
    follow(repo, repair)
    assert doctor()[0] == 0


def test_a_best_line_moved_by_a_plain_commit(campaign: Path) -> None:
    repo = campaign
    best = git(repo, "rev-parse", "kgit/c1/best")
    git(repo, "checkout", "-q", "kgit/c1/best")
    (repo / "kernel.txt").write_text("speed: 500\n")
    assert commit(repo, "straight onto the best line").returncode == 1  # the hook refuses
    assert commit(repo, "straight onto the best line", "--no-verify").returncode == 0
    data = doctor()[1]
    assert kinds(data) == ["best_not_accepted"]
    assert "it has no round note" in finding(data, "best_not_accepted")["problem"]
    git(repo, "checkout", "-q", "--detach")
    follow(repo, finding(data, "best_not_accepted")["repair"])
    assert git(repo, "rev-parse", "kgit/c1/best") == best
    assert doctor()[0] == 0


def test_a_keep_ref_and_a_note_that_disagree(campaign: Path) -> None:
    repo = campaign
    rolled = rolled_back_round(repo)
    git(repo, "update-ref", "-d", "refs/kgit/c1/rounds/2")
    code, data = doctor()
    assert kinds(data) == ["note_without_kept_ref"]
    assert doctor("--fix")[0] == 0
    assert git(repo, "rev-parse", "refs/kgit/c1/rounds/2") == rolled

    git(repo, "notes", f"--ref={ROUNDS}", "remove", rolled)  # the notes ref alone: put back
    code, data = doctor("--fix")
    assert code == 0 and kinds({"problems": data["fixed"]}) == ["note_missing"], data
    assert "status: ROLLED BACK" in git(repo, "notes", f"--ref={ROUNDS}", "show", rolled)

    record_note(repo, "rounds", rolled, None)  # gone from the record too: nothing to rebuild from
    code, data = doctor("--fix")
    assert code == 1 and kinds(data) == ["kept_ref_without_note"]
    assert "kgit cannot rebuild it" in finding(data, "kept_ref_without_note")["repair"]


def test_saved_gate_patches_are_pointed_to(campaign: Path) -> None:
    repo = campaign
    assert run_kgit("round", "start", "a change").code == 0
    (repo / "kernel.txt").write_text("speed: 120\n")
    patch = git(repo, "diff", "--binary")
    git(repo, "checkout", "--", "kernel.txt")
    saved = repo / ".git" / "kgit" / "patches" / "unstaged-1.patch"
    saved.parent.mkdir(exist_ok=True)
    saved.write_text(patch + "\n")
    code, data = doctor("--fix")
    assert code == 1 and kinds(data) == ["saved_patch"]
    follow(repo, finding(data, "saved_patch")["repair"])
    assert (repo / "kernel.txt").read_text() == "speed: 120\n" and not saved.exists()
    assert doctor()[0] == 0


def test_an_open_round_whose_branch_is_gone(campaign: Path) -> None:
    repo = campaign
    parent = git(repo, "rev-parse", "kgit/c1/best")
    assert run_kgit("round", "start", "a change").code == 0
    git(repo, "checkout", "-q", "kgit/c1/best")
    git(repo, "branch", "-D", "kgit/c1/round-2")
    data = doctor()[1]
    assert kinds(data) == ["open_round_without_branch"]
    assert run_kgit("status", "--json").json()["next_step"] == "kgit doctor --fix"  # type: ignore[index]
    assert doctor("--fix")[0] == 0
    assert git(repo, "rev-parse", "kgit/c1/round-2") == parent


def test_an_interrupted_accept_whose_verdict_no_longer_accepts_is_left_to_rollback(
    campaign: Path,
) -> None:
    repo = campaign
    tip = validated_round(repo, 120)
    kill_after_call(repo, "update-ref -m 'kgit: accept round-2'", "round", "accept")
    note = git(repo, "notes", f"--ref={ROUNDS}", "show", tip)
    again = note.replace("decision: ACCEPTED\n", "decision: ROLLED BACK\n") + "\n"
    record_note(repo, "rounds", tip, again.encode())  # what a validation run again records
    code, data = doctor("--fix")
    assert code == 1 and kinds(data) == ["interrupted_accept"] and data["fixed"] == []
    assert finding(data, "interrupted_accept")["repair"] == "kgit round rollback"
    assert "no longer accepts" in finding(data, "interrupted_accept")["problem"]


def test_a_finished_campaigns_leftover_trees_are_removed(campaign: Path) -> None:
    """Trees a killed finish (or an older kgit) left: found, and --fix or `kgit gc` removes them."""
    repo = campaign
    assert run_kgit("-q", "finish").code == 0
    assert doctor()[0] == 0  # finish removed its trees itself
    folder = repo / ".git" / "kgit" / "worktrees" / "c1"
    git(repo, "worktree", "add", "-q", "--detach", str(folder / "reference"), "HEAD")
    code, data = doctor()
    assert code == 1 and kinds(data) == ["leftover_trees"]
    found = finding(data, "leftover_trees")
    assert found["repair"] == "kgit gc" and "reference" in found["problem"] and found["safe"]
    code, data = doctor("--fix")
    assert [f["kind"] for f in data["fixed"]] == ["leftover_trees"]
    assert not (folder / "reference").exists() and doctor()[0] == 0
    assert len(git(repo, "worktree", "list").splitlines()) == 1
