"""Final acceptance: `kgit finish` on real repositories, through the hook and the fake harness."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import commit, git, run_kgit
from tests.views.helpers import play_rounds_out_of_order

SUITE = """\
import sys
from pathlib import Path
if "suite: fail" in Path("kernel.txt").read_text():
    print("tests/test_everything.py::test_training_step FAILED")
    sys.exit(1)
print("42 passed")
"""


@pytest.fixture
def suite_campaign(kernel_repo: Path) -> Path:
    """Campaign c1 with a full test suite (acceptance_command), baselined."""
    repo = kernel_repo
    (repo / "suite.py").write_text(SUITE)
    git(repo, "add", "suite.py")
    git(repo, "commit", "-q", "-m", "the project's full suite")
    manifest = repo / "manifest.yaml"
    python = manifest.read_text().split("test_command: ")[1].split(" ")[0]
    manifest.write_text(manifest.read_text() + f"acceptance_command: {python} suite.py\n")
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    assert run_kgit("-q", "baseline").code == 0
    return repo


def accepted_round(repo: Path, hypothesis: str, *kernels: str, extra: str | None = None) -> str:
    """A round of one commit per KERNELS text, validated and accepted; its commit."""
    assert run_kgit("round", "start", hypothesis).code == 0
    for index, text in enumerate(kernels):
        (repo / "kernel.txt").write_text(text)
        if extra and index == 0:
            (repo / extra).write_text("scratch\n")
            git(repo, "add", extra)
        done = commit(repo, f"{hypothesis} ({index + 1})")
        assert done.returncode == 0, done.stderr
    verdict = run_kgit("-q", "round", "validate")
    assert verdict.code == 0 and "ACCEPTED" in verdict.out, verdict
    assert run_kgit("round", "accept").code == 0
    return git(repo, "rev-parse", "HEAD")


def test_finish_accepts_and_leaves_a_branch_to_merge(suite_campaign: Path) -> None:
    repo = suite_campaign
    base = git(repo, "rev-parse", "kgit/c1/best")
    accepted_round(repo, "bigger tiles", "speed: 110\n")
    accepted_round(repo, "unroll K by 2", "speed: 115\n", "speed: 125\n")  # two commits
    assert run_kgit("round", "start", "split K").code == 0
    (repo / "kernel.txt").write_text("speed: 90\n")
    assert commit(repo, "split K").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0
    assert run_kgit("round", "rollback", "--reason", "the reduction costs more").code == 0
    lesson = ["--context", "split-K on square shapes", "--signal", "-28% on every shape"]
    lesson += ["--takeaway", "no split-K below K=4096", "--applicability", "M,N >= K", "--round"]
    assert run_kgit("tips", "add", *lesson, "4").code == 0
    best = git(repo, "rev-parse", "kgit/c1/best")

    result = run_kgit("finish")
    assert result.code == 0, result
    assert "campaign c1 finished" in result.out and "kgit/c1/final" in result.out
    assert "round-3 squashed" in result.out

    # One commit per accepted round, the best line's content, authors kept, results stated.
    final = "kgit/c1/final"
    assert git(repo, "rev-list", "--count", f"{base}..{final}") == "2"
    assert git(repo, "rev-parse", f"{final}^{{tree}}") == git(repo, "rev-parse", f"{best}^{{tree}}")
    assert git(repo, "rev-parse", f"{final}~2") == base
    first, second = git(repo, "log", "--reverse", "--format=%B%x00", f"{base}..{final}").split(
        "\0"
    )[:2]
    assert first.startswith("[optimize] gemm FAKE round-2: bigger tiles (1)")
    assert "Hypothesis: bigger tiles" in first and "Result: ACCEPTED: Forward TFLOPS" in first
    assert "vs baseline" in first
    assert "round-3: unroll K by 2" in second and "Squashes 2 commits" in second
    assert "Kgit-Round: 3" in second and f"Kgit-Round-Commit: {best}" in second
    assert git(repo, "log", "-1", "--format=%an", final) == "Kernel Engineer"

    # The report is in the notes and in the record; the campaign is finished.
    report = git(repo, "notes", "--ref=refs/notes/kgit/c1/final", "show", best)
    assert "Directions that did not work" in report and "split K" in report
    assert "the reduction costs more" in report and "no split-K below K=4096" in report
    assert "42 passed" not in report and "passed" in report
    assert git(repo, "show", "refs/kgit/c1/campaign:final/report.md") == report
    status = run_kgit("status", "--json").json()
    assert status["finished"] is True  # type: ignore[index]
    assert "finished" in run_kgit("status").out
    refused = run_kgit("round", "start", "one more")
    assert refused.code == 1 and "--reopen" in refused.err
    assert run_kgit("finish").code == 1  # already finished
    assert run_kgit("round", "start", "--reopen", "one more").code == 0
    assert run_kgit("status", "--json").json()["finished"] is False  # type: ignore[index]


def test_the_final_branch_follows_the_order_the_best_line_took_the_rounds(
    kernel_repo: Path,
) -> None:
    # Round-3 was accepted before round-2 (rebased onto it): in round order the final branch
    # had no commit to give round-3 and finish refused, "the best line's tip is not an accepted
    # round's commit".
    repo = kernel_repo
    play_rounds_out_of_order(repo)
    # The accepts ran in linked work trees and moved the best line under the main one, which
    # has it checked out: its files followed.
    result = run_kgit("finish", "--json")
    assert result.code == 0, result
    # The report's accepted lineage is the line's order too, not round order.
    assert [r["round"] for r in result.json()["accepted"]] == [3, 2]  # type: ignore[index]
    final, best = "kgit/c1/final", git(repo, "rev-parse", "kgit/c1/best")
    rounds = git(repo, "log", "--reverse", "--format=%(trailers:key=Kgit-Round,valueonly)", final)
    assert rounds.split() == ["3", "2"]
    assert git(repo, "rev-parse", f"{final}^{{tree}}") == git(repo, "rev-parse", f"{best}^{{tree}}")


def test_finish_is_refused_when_the_suite_fails(suite_campaign: Path) -> None:
    repo = suite_campaign
    accepted_round(repo, "faster but breaks training", "speed: 120\nsuite: fail\n")
    result = run_kgit("-q", "finish")
    assert result.code == 1, result
    assert "final acceptance refused" in result.err
    assert "test suite failed" in result.err and "suite.py" in result.err
    # Quiet silences progress, not the reason: the suite's own words come with the refusal.
    assert "test_training_step FAILED" in result.err, result.err
    assert "hint:" in result.err
    assert run_kgit("status", "--json").json()["finished"] is False  # type: ignore[index]
    assert "kgit/c1/final" not in git(repo, "branch", "--list", "kgit/c1/final")


def test_a_round_that_changes_files_outside_kernel_source_is_rolled_back(
    suite_campaign: Path,
) -> None:
    repo = suite_campaign
    assert run_kgit("round", "start", "tiles, and a scratch file").code == 0
    (repo / "kernel.txt").write_text("speed: 120\n")
    (repo / "scratch.txt").write_text("scratch\n")
    git(repo, "add", "scratch.txt")
    assert commit(repo, "tiles").returncode == 0
    data = run_kgit("-q", "round", "validate", "--json").json()
    assert data["decision"] == "ROLLED BACK"  # type: ignore[index]
    assert "changed outside kernel_source (kernel.txt): scratch.txt" in data["reasons"][0]  # type: ignore[index]
    assert run_kgit("round", "accept").code == 1


def test_a_round_that_edits_the_gates_test_is_rolled_back(kernel_repo: Path) -> None:
    """The red team's case: a buggy kernel and a test edited to ignore the bug."""
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    assert run_kgit("-q", "baseline").code == 0
    assert run_kgit("round", "start", "skip the check").code == 0
    (kernel_repo / "kernel.txt").write_text("speed: 150\nBUG\n")
    check = kernel_repo / "check.py"
    check.write_text(check.read_text().replace('if "BUG" in text:', "if False:"))
    assert commit(kernel_repo, "faster").returncode == 0  # the edited test passes the gate
    data = run_kgit("-q", "round", "validate", "--json").json()
    assert data["decision"] == "ROLLED BACK"  # type: ignore[index]
    assert "protected path changed since baseline: check.py" in data["reasons"][0]  # type: ignore[index]


def test_finish_refuses_a_best_line_a_commit_by_hand_moved(suite_campaign: Path) -> None:
    # Rounds cannot bring a file outside kernel_source (validate rolls them back); a commit made
    # on the best line by hand could, and once did: the hook refuses it there, and past the hook
    # (--no-verify) finish refuses a best line no accept put where it is.
    repo = suite_campaign
    accepted_round(repo, "tiles", "speed: 120\n")
    (repo / "scratch.txt").write_text("scratch\n")
    git(repo, "add", "scratch.txt")
    assert commit(repo, "a scratch file, by hand", all_files=False).returncode == 1
    git(repo, "commit", "-q", "--no-verify", "-m", "a scratch file, by hand")
    refused = run_kgit("-q", "finish")
    assert refused.code == 1, refused
    assert "was moved outside kgit" in refused.err and "git reset --keep" in refused.err
    assert run_kgit("status", "--json").json()["finished"] is False  # type: ignore[index]


def test_finish_validates_every_shape_against_the_baseline(suite_campaign: Path) -> None:
    repo = suite_campaign
    representative = run_kgit("status", "--json").json()["representative_shapes"]  # type: ignore[index]
    others = [
        s for s in ("s64", "s128", "s256", "s512", "s1024", "s2048") if s not in representative
    ]
    assert others, representative
    # Faster on the representative shapes (accepted), far slower on one the rounds never measure.
    accepted_round(repo, "tuned for the big shapes", f"speed: 120\nspeed.{others[0]}: 50\n")
    result = run_kgit("-q", "finish")
    assert result.code == 1, result
    assert "full validation against the baseline" in result.err and others[0] in result.err


def test_finish_needs_a_closed_round_and_a_clean_tree(suite_campaign: Path) -> None:
    repo = suite_campaign
    assert run_kgit("round", "start", "open").code == 0
    busy = run_kgit("finish")
    assert busy.code == 1 and "still in progress" in busy.err
    assert run_kgit("round", "rollback", "--reason", "test").code == 0
    (repo / "kernel.txt").write_text("speed: 1\n")
    dirty = run_kgit("finish")
    assert dirty.code == 1 and "uncommitted changes" in dirty.err


def test_a_finish_recorded_meanwhile_refuses_the_second_and_writes_nothing(
    suite_campaign: Path,
) -> None:
    from kgit.engine.campaign import Campaign
    from kgit.engine.rounds.finish import check_finish, record_finish
    from kgit.errors import KgitError
    from kgit.gitdoor import open_repo
    from kgit.progress import Voice

    repo = suite_campaign
    accepted_round(repo, "bigger tiles", "speed: 110\n")
    finishing = check_finish(
        Campaign.load(open_repo(repo), "c1"), Voice(lambda line: None, echo=False)
    )
    assert finishing.finished.state.finished and not finishing.campaign.state.finished
    assert run_kgit("finish").code == 0  # another finish, between the checks and the record
    recorded = git(repo, "rev-parse", "refs/kgit/c1/campaign")
    with pytest.raises(KgitError, match="the campaign changed while kgit finish ran"):
        record_finish(finishing, "a report")
    assert git(repo, "rev-parse", "refs/kgit/c1/campaign") == recorded
