"""The round lifecycle end to end: real repositories, real `git commit` through the hook."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import commit, git, run_kgit


def refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(objectname) %(refname)")


def test_a_whole_session(campaign: Path) -> None:
    repo = campaign
    base = git(repo, "rev-parse", "kgit/c1/best")

    # A round that improves: the hook gates the commit, validate accepts, accept fast-forwards.
    assert run_kgit("round", "start", "bigger blocks run faster").code == 0
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/kgit/c1/round-2"
    (repo / "kernel.txt").write_text("speed: 110\n")
    done = commit(repo, "bigger blocks")
    assert done.returncode == 0, done.stderr
    assert "gate: passed" in done.stderr
    message = git(repo, "log", "-1", "--format=%B")
    assert message.startswith("[optimize] gemm FAKE round-2: bigger blocks")
    assert "Kgit-Round: 2" in message and "Hypothesis: bigger blocks run faster" in message
    assert message.count("bigger blocks run faster") == 1  # said once, not again as a trailer
    verdict = run_kgit("round", "validate", "--json")
    assert verdict.code == 0, verdict
    assert verdict.json()["decision"] == "ACCEPTED"  # type: ignore[index]
    round_commit = git(repo, "rev-parse", "HEAD")
    assert run_kgit("round", "accept").code == 0
    assert git(repo, "rev-parse", "kgit/c1/best") == round_commit  # same sha: a fast-forward
    assert git(repo, "rev-parse", f"{round_commit}~1") == base

    # A commit that breaks the test is blocked by the hook, and nothing is recorded.
    assert run_kgit("round", "start", "unroll the K loop").code == 0
    (repo / "kernel.txt").write_text("speed: 120\nBUG\n")
    blocked = commit(repo, "unroll")
    assert blocked.returncode != 0
    assert "kernel.txt has a BUG" in blocked.stderr and "commit was blocked" in blocked.stderr
    assert git(repo, "rev-parse", "HEAD") == round_commit

    # Fixed but slower: validate rolls it back, accept refuses, rollback keeps the commit.
    (repo / "kernel.txt").write_text("speed: 90\n")
    assert commit(repo, "unroll, fixed").returncode == 0
    slow_commit = git(repo, "rev-parse", "HEAD")
    verdict = run_kgit("round", "validate", "--json")
    assert verdict.json()["decision"] == "ROLLED BACK"  # type: ignore[index]
    refused = run_kgit("round", "accept")
    assert refused.code == 1 and "hint: kgit round rollback" in refused.err
    assert run_kgit("round", "rollback", "--reason", "register spills").code == 0
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/kgit/c1/best"
    assert git(repo, "rev-parse", "HEAD") == round_commit
    assert git(repo, "rev-parse", "refs/kgit/c1/rounds/3") == slow_commit
    assert "kgit/c1/round-3" not in refs(repo)
    note = git(repo, "notes", "--ref=refs/notes/kgit/c1/rounds", "show", slow_commit)
    assert "status: ROLLED BACK" in note and "rollback_reason: register spills" in note

    lineage = git(repo, "log", "--notes=kgit/c1/rounds", "kgit/c1/best")
    assert "status: ACCEPTED" in lineage and "status: BASELINE" in lineage
    log = run_kgit("log", "--json").json()
    assert [(r["round"], r["status"]) for r in log] == [  # type: ignore[union-attr, index]
        (1, "BASELINE"),
        (2, "ACCEPTED"),
        (3, "ROLLED BACK"),
    ]
    shown = run_kgit("show", "3")
    assert "register spills" in shown.out and "ROLLED BACK" in shown.out


def test_bench_note_is_byte_exact(campaign: Path) -> None:
    repo = campaign
    run_kgit("round", "start", "CRLF output")
    (repo / "kernel.txt").write_text("speed: 120\ncrlf\n")
    assert commit(repo, "crlf").returncode == 0
    assert run_kgit("round", "validate").code == 0
    stored = git_bytes(repo, "notes", "--ref=refs/notes/kgit/c1/bench", "show", "HEAD")
    assert b" \r\n" in stored  # CR and trailing blank survived
    # The same harness run by hand on the same shapes writes the same bytes.
    import json
    import subprocess
    import sys

    shapes = [s for s in _manifest_shapes(repo) if s["label"] in _representative(repo)]
    (repo.parent / "shapes.json").write_text(json.dumps(shapes))
    subprocess.run(
        [
            sys.executable,
            "harness.py",
            "--summary-csv",
            str(repo.parent / "by-hand.csv"),
            "--shapes",
            str(repo.parent / "shapes.json"),
        ],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    assert stored == (repo.parent / "by-hand.csv").read_bytes()


def git_bytes(repo: Path, *args: str) -> bytes:
    import subprocess

    return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True).stdout


def _manifest_shapes(repo: Path) -> list[dict[str, object]]:
    import yaml

    return yaml.safe_load((repo / "manifest.yaml").read_text())["target_shapes"]  # type: ignore[no-any-return]


def _representative(repo: Path) -> list[str]:
    return run_kgit("status", "--json").json()["representative_shapes"]  # type: ignore[index, return-value]


def test_no_verify_buys_nothing(campaign: Path) -> None:
    repo = campaign
    run_kgit("round", "start", "skip the hook")
    (repo / "kernel.txt").write_text("speed: 150\nBUG\n")
    assert commit(repo, "fast but wrong", "--no-verify").returncode == 0
    refused = run_kgit("round", "validate")
    assert refused.code == 1
    assert "never gated" in refused.err and "correctness gate failed" in refused.err
    # A correct commit made with --no-verify is gated on validate, then accepted.
    (repo / "kernel.txt").write_text("speed: 150\n")
    assert commit(repo, "fast and right", "--no-verify").returncode == 0
    assert run_kgit("round", "validate").code == 0
    assert run_kgit("round", "accept").code == 0


def test_a_protected_harness_change_is_never_accepted(campaign: Path) -> None:
    repo = campaign
    run_kgit("round", "start", "make the harness kinder")
    harness = repo / "harness.py"
    harness.write_text(harness.read_text().replace('"100"', '"500"'))
    assert commit(repo, "tweak harness").returncode == 0
    verdict = run_kgit("round", "validate", "--json").json()
    assert verdict["decision"] == "ROLLED BACK"  # type: ignore[index]
    assert "protected path changed" in verdict["reasons"][0]  # type: ignore[index]
    assert run_kgit("round", "accept").code == 1


def test_refusals_leave_the_repository_unchanged(campaign: Path) -> None:
    repo = campaign
    (repo / "kernel.txt").write_text("speed: 1\n")
    before = refs(repo)
    dirty = run_kgit("round", "start", "anything")
    assert dirty.code == 1 and "uncommitted changes" in dirty.err and "hint:" in dirty.err
    assert refs(repo) == before
    git(repo, "checkout", "-q", "kernel.txt")
    assert run_kgit("round", "start", "one").code == 0
    second = run_kgit("round", "start", "two")
    assert second.code == 1 and "one change at a time" in second.err
    no_commit = run_kgit("round", "validate")
    assert no_commit.code == 1 and "no commit yet" in no_commit.err
    git(repo, "checkout", "-q", "--detach")
    detached = run_kgit("round", "validate")
    assert detached.code == 1 and "detached HEAD" in detached.err
    git(repo, "checkout", "-q", "kgit/c1/best")
    wrong = run_kgit("round", "validate")
    assert wrong.code == 1 and "git checkout kgit/c1/round-2" in wrong.err
    empty = run_kgit("round", "start", "   ")
    assert empty.code == 2
    # A round with no commit can be rolled back; its number is never reused.
    assert run_kgit("round", "rollback", "--reason", "test").code == 0
    assert run_kgit("round", "start", "three").code == 0
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/kgit/c1/round-3"
    lineage = run_kgit("log", "--json").json()
    assert lineage[1]["round"] == 2 and lineage[1]["commit"] is None  # type: ignore[index]
    assert lineage[1]["status"] == "ROLLED BACK"  # type: ignore[index]
    assert "(no commit)" in run_kgit("log").out


def test_small_gains_are_re_measured_under_the_noise_rule(campaign: Path) -> None:
    repo = campaign
    run_kgit("round", "start", "a 1.5% gain")
    (repo / "kernel.txt").write_text("speed: 101.5\n")
    assert commit(repo, "small gain").returncode == 0
    result = run_kgit("round", "validate", "--json")
    data = result.json()
    assert data["runs"] == 3, result  # type: ignore[index]
    assert data["decision"] == "ACCEPTED"  # type: ignore[index]
    assert any("holds under re-measure" in r for r in data["reasons"])  # type: ignore[index, union-attr]
    record = git(repo, "ls-tree", "-r", "--name-only", "refs/kgit/c1/campaign")
    assert "runs/round-2/validation-1/run-3.csv" in record


def test_max_iterations_stops_new_rounds(kernel_repo: Path) -> None:
    manifest = kernel_repo / "manifest.yaml"
    manifest.write_text(manifest.read_text() + "max_iterations: 2\n")
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    assert run_kgit("baseline").code == 0
    assert run_kgit("round", "start", "first").code == 0
    assert run_kgit("round", "rollback", "--reason", "test").code == 0
    stop = run_kgit("round", "start", "second")
    assert stop.code == 1 and "max_iterations (2) reached" in stop.err


def test_status_says_what_to_do_next(campaign: Path) -> None:
    status = run_kgit("status", "--json").json()
    assert status["next_step"] == 'kgit round start "HYPOTHESIS"'  # type: ignore[index]
    assert status["rounds_recorded"] == 1  # type: ignore[index]
    assert len(status["representative_shapes"]) in (3, 4, 5)  # type: ignore[index, arg-type]
    text = run_kgit("status").out
    assert "campaign  c1" in text and "next      kgit round start" in text


def test_stagnation_review_after_two_rollbacks(campaign: Path) -> None:
    repo = campaign
    for speed in (90, 80):
        run_kgit("round", "start", f"try {speed}")
        (repo / "kernel.txt").write_text(f"speed: {speed}\n")
        assert commit(repo, "slower").returncode == 0
        run_kgit("round", "validate")
        assert run_kgit("round", "rollback", "--reason", "test").code == 0
    status = run_kgit("status", "--json").json()
    assert status["consecutive_rollbacks"] == 2  # type: ignore[index]
    assert status["stagnation_review_due"] is True  # type: ignore[index]
    assert "re-profile" in status["escalation"]  # type: ignore[index, operator]


def test_status_follows_every_change_through_its_cache(campaign: Path) -> None:
    repo = campaign
    assert run_kgit("status", "--json").json()["rounds_recorded"] == 1  # type: ignore[index]
    run_kgit("round", "start", "a change")
    (repo / "kernel.txt").write_text("speed: 90\n")
    assert commit(repo, "slower").returncode == 0
    assert run_kgit("status", "--json").json()["open_round"]["verdict"] is None  # type: ignore[index]
    run_kgit("round", "validate")
    status = run_kgit("status", "--json").json()
    assert status["open_round"]["verdict"] == "ROLLED BACK"  # type: ignore[index]
    run_kgit("round", "rollback", "--reason", "test")
    status = run_kgit("status", "--json").json()
    assert (status["rounds_recorded"], status["rolled_back"]) == (2, 1)  # type: ignore[index]
    run_kgit("round", "start", "nothing to commit")
    # Rolled back before a commit: only the record moves.
    run_kgit("round", "rollback", "--reason", "test")
    assert run_kgit("status", "--json").json()["consecutive_rollbacks"] == 2  # type: ignore[index]
    assert (repo / ".git" / "kgit" / "cache" / "lineage-c1.json").exists()
