"""What kgit tells a user to do next must be true: each case is a hint a new user was misled by."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import commit, git, run_kgit


def _status(repo: Path) -> dict:  # type: ignore[type-arg]
    result = run_kgit("status", "--json")
    assert result.code == 0, result
    return result.json()  # type: ignore[return-value]


def test_an_open_round_without_a_commit_shows_no_verdict(campaign: Path) -> None:
    assert run_kgit("round", "start", "bigger tiles").code == 0
    data = _status(campaign)
    # The round's branch still points at the best line's commit: the baseline's verdict is not
    # the round's.
    assert data["open_round"]["verdict"] is None
    assert "verdict" not in run_kgit("status").out
    assert data["next_step"].startswith("edit the kernel")


def test_accept_without_a_commit_says_there_is_none(campaign: Path) -> None:
    assert run_kgit("round", "start", "bigger tiles").code == 0
    base = git(campaign, "rev-parse", "kgit/c1/best")
    result = run_kgit("round", "accept")
    assert result.code == 1
    assert "round-2 has no commit yet" in result.err
    assert base[:10] not in result.err  # it named the baseline's commit as the round's


def test_after_the_gate_failed_on_a_commit_status_says_fix_it(campaign: Path) -> None:
    assert run_kgit("round", "start", "no mask").code == 0
    (campaign / "kernel.txt").write_text("speed: 120\nBUG\n")
    assert commit(campaign, "no mask", "--no-verify").returncode == 0
    assert run_kgit("round", "validate").code != 0  # validate gates the unverified tree
    data = _status(campaign)
    assert data["open_round"]["gate"] == "failed"
    assert data["next_step"].startswith("fix the kernel and commit again")


def test_after_validate_s_gate_failed_accept_and_the_record_say_so(campaign: Path) -> None:
    assert run_kgit("round", "start", "no mask").code == 0
    (campaign / "kernel.txt").write_text("speed: 120\nBUG\n")
    assert commit(campaign, "no mask", "--no-verify").returncode == 0
    assert run_kgit("round", "validate").code != 0
    refused = run_kgit("round", "accept")
    assert refused.code != 0 and "failed on the round's commit at validate" in refused.err
    hint = refused.err.split("hint:", 1)[1]
    assert "fix the kernel" in hint and "kgit round rollback" in hint
    assert "kgit round validate (after the last commit)" not in refused.err
    assert run_kgit("round", "rollback", "--reason", "mask dropped").code == 0
    (reason,) = run_kgit("show", "2", "--json").json()["note"]["reasons"]
    assert "before validation" not in reason
    assert reason.startswith("the correctness gate (`") and "at validate" in reason
    report = run_kgit("report").out
    assert "rolled back before validation" not in report and "at validate" in report


def test_a_rollback_says_why(campaign: Path) -> None:
    assert run_kgit("round", "start", "bigger tiles").code == 0
    (campaign / "kernel.txt").write_text("speed: 90\n")
    assert commit(campaign, "bigger tiles").returncode == 0
    refused = run_kgit("round", "rollback")
    # A missing required option is a usage error (2), as click words its own.
    assert refused.code == 2 and "says why" in refused.err and "--reason" in refused.err
    assert _status(campaign)["open_round"] is not None  # nothing moved
    done = run_kgit("round", "rollback", "--reason", "spills registers; keep tiles at 128")
    assert done.code == 0, done
    shown = run_kgit("show", "2", "--json").json()
    assert "spills registers" in str(shown)


def test_a_finished_campaign_asks_for_no_stagnation_review(campaign: Path) -> None:
    for speed in (90, 80):
        assert run_kgit("round", "start", f"speed {speed}").code == 0
        (campaign / "kernel.txt").write_text(f"speed: {speed}\n")
        assert commit(campaign, f"speed {speed}").returncode == 0
        assert run_kgit("-q", "round", "validate").code == 0
        assert run_kgit("round", "rollback", "--reason", "slower").code == 0
    assert _status(campaign)["stagnation_review_due"] is True
    assert run_kgit("-q", "finish").code == 0
    data = _status(campaign)
    assert data["finished"] and data["stagnation_review_due"] is False
    assert "stagnation" not in run_kgit("status").out


def test_accept_and_rollback_say_their_result_once(campaign: Path) -> None:
    # The result goes to stdout once; stderr carries progress, not the same line again.
    assert run_kgit("round", "start", "faster").code == 0
    (campaign / "kernel.txt").write_text("speed: 150\n")
    assert commit(campaign, "faster").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0
    accepted = run_kgit("round", "accept")
    assert accepted.code == 0, accepted
    assert accepted.out.count("ACCEPTED") == 1 and "ACCEPTED" not in accepted.err
    assert "round-2 ACCEPTED: kgit/c1/best -> " in accepted.out

    assert run_kgit("round", "start", "nothing").code == 0
    rolled = run_kgit("round", "rollback", "--reason", "no change made")
    assert rolled.code == 0, rolled
    assert "ROLLED BACK" not in rolled.err
    assert rolled.out.strip() == "round-3 ROLLED BACK: back on kgit/c1/best (it had no commit)"


def test_kgit_tells_the_harness_that_the_csv_path_is_its_own(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from kgit.engine.measuring.isolation.sealed import harness_world

    campaign = SimpleNamespace(manifest=SimpleNamespace(env={}))
    world = harness_world(campaign, tmp_path)  # type: ignore[arg-type]
    try:
        # kgit's own copy of its measuring code first, then the tree's own code.
        lib, tree = world.env["PYTHONPATH"].split(":")
        assert world.env["KGIT_RUN"] == "1" and (lib, tree) == (str(world.lib), str(tmp_path))
    finally:
        world.close()
