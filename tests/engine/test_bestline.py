"""The best line moves only by kgit (issue 35, item 5): the hook refuses a commit on it, and a
best line moved by plain git (`--no-verify`, `git branch -f`, `git update-ref`) is named by
every command that builds on it, with the one command that puts it back."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import pytest

from kgit.engine.campaign import Campaign
from tests.conftest import commit, git, run_kgit


def _rolled_back_round(repo: Path) -> str:
    assert run_kgit("round", "start", "slower").code == 0
    (repo / "kernel.txt").write_text("speed: 80\n")
    assert commit(repo, "slower").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0
    tip = git(repo, "rev-parse", "HEAD")
    assert run_kgit("round", "rollback", "--reason", "slower").code == 0
    return tip


def test_the_hook_refuses_a_commit_on_the_best_line(campaign: Path) -> None:
    repo = campaign
    _rolled_back_round(repo)
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/kgit/c1/best"
    (repo / "kernel.txt").write_text("speed: 70\n")
    refused = commit(repo, "tuned on the best line")
    assert refused.returncode == 1, refused
    assert "kgit/c1/best moves only through kgit" in refused.stderr
    assert 'kgit -c c1 round start "HYPOTHESIS"' in refused.stderr
    # What kgit said before committing there: set the edit aside, start a round.
    started = run_kgit("round", "start", "from the best line's edit")
    assert started.code == 1 and "git stash, then kgit round start" in started.err


def test_a_best_line_moved_by_plain_git_is_named_and_refused(campaign: Path) -> None:
    repo = campaign
    _rolled_back_round(repo)
    recorded = git(repo, "rev-parse", "kgit/c1/best")
    (repo / "kernel.txt").write_text("speed: 70\n")
    assert commit(repo, "tuned on the best line", "--no-verify").returncode == 0
    moved = git(repo, "rev-parse", "kgit/c1/best")
    assert moved != recorded
    refused = run_kgit("round", "start", "from the moved line")
    assert refused.code == 1 and "was moved outside kgit" in refused.err
    restore = f"git branch kgit-moved-{moved[:10]} {moved} && git reset --keep {recorded}"
    assert restore in refused.err
    status = run_kgit("status", "--json").json()
    assert isinstance(status, dict)
    assert status["best_moved"]["recorded"] == recorded and status["next_step"] == restore
    assert "moved outside kgit" in run_kgit("status").out
    for command in restore.split(" && "):
        git(repo, *command.split()[1:])
    assert git(repo, "rev-parse", "kgit/c1/best") == recorded
    assert git(repo, "rev-parse", f"kgit-moved-{moved[:10]}") == moved  # nothing lost
    assert run_kgit("round", "start", "from the restored line").code == 0


def test_a_best_line_put_on_a_rolled_back_commit_is_no_accept_to_complete(campaign: Path) -> None:
    """`git branch -f` of the best line onto a round's rolled-back commit was reported as an
    interrupted accept that `kgit round accept` completes."""
    repo = campaign
    assert run_kgit("round", "start", "slower").code == 0
    (repo / "kernel.txt").write_text("speed: 80\n")
    assert commit(repo, "slower").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0  # ROLLED BACK
    recorded = git(repo, "rev-parse", "kgit/c1/best")
    git(repo, "update-ref", "refs/heads/kgit/c1/best", "HEAD")
    status = run_kgit("status", "--json").json()
    assert isinstance(status, dict)
    assert status["open_round"]["interrupted"] is None
    assert status["next_step"].startswith("kgit round rollback")
    assert "accept completes it" not in run_kgit("status").out
    assert run_kgit("round", "accept").code == 1
    assert run_kgit("round", "rollback", "--reason", "slower").code == 0
    assert git(repo, "rev-parse", "kgit/c1/best") == recorded


def test_a_verdict_is_judged_against_the_record_not_the_views_cache(campaign: Path) -> None:
    """The parsed notes kgit caches for its views under .git/kgit/cache/ are files any process
    of the user's may rewrite: with the baseline's stored values cut tenfold there, a slower
    kernel read +700% under the seed's rule, which judges against stored values."""
    import json

    repo = campaign
    assert run_kgit("status").code == 0  # the cache is written
    cache = repo / ".git" / "kgit" / "cache" / "round-notes-c1.json"
    data = json.loads(cache.read_text())
    for note in data["notes"].values():
        for shape in note.get("shapes", []):
            shape["value"] = shape["value"] / 10 if shape.get("value") else shape.get("value")
    cache.write_text(json.dumps(data))
    assert run_kgit("round", "start", "slower").code == 0
    (repo / "kernel.txt").write_text("speed: 80\n")
    assert commit(repo, "slower").returncode == 0
    verdict = run_kgit("-q", "round", "validate")
    assert verdict.code == 0 and "ROLLED BACK" in verdict.out, verdict
    assert run_kgit("round", "accept").code == 1


def test_status_checks_the_best_line_without_reading_every_note(
    campaign: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the lineage's rows cached, `kgit status` parses no round's note to find where the
    record puts the best line: at 10,000 rounds listing them all again cost about a second."""
    repo = campaign
    _rolled_back_round(repo)
    assert run_kgit("status").code == 0  # the lineage's rows cached

    def every_note(*_: object, **__: object) -> NoReturn:
        raise AssertionError("status read every round's note")

    monkeypatch.setattr(Campaign, "all_rounds", every_note)
    status = run_kgit("status", "--json")
    assert status.code == 0, status
    assert status.json()["best_moved"] is None  # type: ignore[index]
    git(repo, "update-ref", "refs/heads/kgit/c1/best", "refs/kgit/c1/rounds/2")
    moved = run_kgit("status", "--json").json()["best_moved"]
    assert moved is not None and moved["round"] == 1  # type: ignore[index]


def _accepted_round(repo: Path, hypothesis: str, speed: int) -> str:
    assert run_kgit("round", "start", hypothesis).code == 0
    (repo / "kernel.txt").write_text(f"speed: {speed}\n")
    assert commit(repo, hypothesis).returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0
    assert run_kgit("round", "accept").code == 0
    return git(repo, "rev-parse", "HEAD")


def test_a_best_line_moved_back_is_refused_whatever_the_views_cache_says(campaign: Path) -> None:
    """The views' caches rewritten to call the last accept rolled back (parsed notes) and to
    leave it out (the lineage's rows), and the best line moved back to the accept before it:
    `kgit status` showed that earlier accept as the best with nothing moved, and a kernel slower
    than the last accept's was built on it, measured against it and accepted."""
    import json

    repo = campaign
    earlier = _accepted_round(repo, "bigger tiles", 130)
    _accepted_round(repo, "unroll", 160)
    assert run_kgit("status").code == 0  # the caches are written
    for cache in (repo / ".git" / "kgit" / "cache").glob("round-notes-c1*.json"):
        data = json.loads(cache.read_text())
        for note in data["notes"].values():
            if note.get("round") == 3:
                note["status"] = "ROLLED BACK"
        cache.write_text(json.dumps(data))
    lineage = repo / ".git" / "kgit" / "cache" / "lineage-c1.json"
    data = json.loads(lineage.read_text())  # its key (notes ref, record) moves with neither
    data["rows"] = [row for row in data["rows"] if row["round"] != 3]
    lineage.write_text(json.dumps(data))
    git(repo, "checkout", "-q", "--detach")
    git(repo, "update-ref", "refs/heads/kgit/c1/best", earlier)
    moved = run_kgit("status", "--json").json()["best_moved"]  # type: ignore[index]
    assert moved is not None and moved["round"] == 3, moved  # status no longer hides it
    started = run_kgit("round", "start", "slower than round-3")
    assert started.code == 1 and "moved outside kgit" in started.err, started
    assert "round-3's accept" in started.err


def test_a_cache_that_calls_a_rolled_back_round_accepted_does_not_move_the_record(
    campaign: Path,
) -> None:
    """The lineage's cached rows rewritten to call the last round (rolled back) accepted, and the
    best line moved onto its commit: the record's own note of that round, read in the same git
    process as the keep-refs after it, says rolled back, and status names the move."""
    import json

    repo = campaign
    _accepted_round(repo, "bigger tiles", 130)
    slower = _rolled_back_round(repo)
    _rolled_back_round(repo)
    assert run_kgit("status").code == 0  # the rows are cached
    lineage = repo / ".git" / "kgit" / "cache" / "lineage-c1.json"
    data = json.loads(lineage.read_text())
    for row in data["rows"]:
        if row["commit"] == slower:
            row["status"] = row["decision"] = "ACCEPTED"
    lineage.write_text(json.dumps(data))
    git(repo, "checkout", "-q", "--detach")
    git(repo, "update-ref", "refs/heads/kgit/c1/best", slower)
    moved = run_kgit("status", "--json").json()["best_moved"]  # type: ignore[index]
    assert moved is not None and moved["round"] == 2 and moved["tip"] == slower, moved
