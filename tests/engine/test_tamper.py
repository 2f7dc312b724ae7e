"""Notes changed after kgit wrote them (issue 13, hole 4): kgit keeps every note it writes in the
campaign record (`notes/<kind>/<target>` of refs/kgit/<campaign>/campaign), reads its notes from
there, and reports a notes ref that says something else."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import commit, git, record_note, run_kgit

ROUNDS = "refs/notes/kgit/c1/rounds"


def note(repo: Path, ref: str, target: str = "HEAD") -> str:
    return git(repo, "notes", f"--ref={ref}", "show", target)


def forge(repo: Path, ref: str, target: str, text: str) -> None:
    """What a hostile agent (or a hand edit) does: rewrite a note with plain git."""
    git(repo, "notes", f"--ref={ref}", "add", "-f", "-m", text, target)


def validated(repo: Path, hypothesis: str, kernel: str) -> str:
    assert run_kgit("round", "start", hypothesis).code == 0
    (repo / "kernel.txt").write_text(kernel)
    done = commit(repo, hypothesis)
    assert done.returncode == 0, done.stderr
    assert run_kgit("-q", "round", "validate").code == 0
    return git(repo, "rev-parse", "HEAD")


def test_an_open_round_note_edited_to_accepted_is_not_accepted(campaign: Path) -> None:
    """(a) ROLLED BACK -> ACCEPTED in the open round's note, status and decision."""
    repo = campaign
    validated(repo, "slower", "speed: 80\n")
    text = note(repo, ROUNDS).replace("ROLLED BACK", "ACCEPTED")
    forge(repo, ROUNDS, "HEAD", text)
    refused = run_kgit("round", "accept")
    assert refused.code == 1, refused
    assert "note of round-2 changed after kgit wrote it" in refused.err
    assert git(repo, "rev-parse", "kgit/c1/best") != git(repo, "rev-parse", "HEAD")


def test_a_rolled_back_round_edited_to_accepted_does_not_lower_the_bar(campaign: Path) -> None:
    """(a) A closed round's note edited to ACCEPTED once made its slow figures the "best" that
    the next rounds were compared with: a kernel 20% slower than the best line was accepted."""
    repo = campaign
    slow = validated(repo, "much slower", "speed: 60\n")
    assert run_kgit("round", "rollback", "--reason", "slower").code == 0
    forge(repo, ROUNDS, slow, note(repo, ROUNDS, slow).replace("ROLLED BACK", "ACCEPTED"))
    validated(repo, "still slower than the best line", "speed: 80\n")
    verdict = run_kgit("-q", "round", "validate", "--json").json()
    assert verdict["decision"] == "ROLLED BACK", verdict  # type: ignore[index]
    assert run_kgit("round", "accept").code == 1
    assert "speed: 100" in git(repo, "show", "kgit/c1/best:kernel.txt")


def test_a_forged_gate_note_does_not_pass_a_buggy_tree(campaign: Path) -> None:
    """(b) A tree committed with --no-verify, with a bug the tests catch and the harness does
    not, and a passing gate note written by hand for it."""
    repo = campaign
    assert run_kgit("round", "start", "fast but wrong").code == 0
    (repo / "kernel.txt").write_text("speed: 130\nBUG\n")
    assert commit(repo, "fast", "--no-verify").returncode == 0
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    gate = {"kgit": "gate", "campaign": "c1", "passed": True, "command": "check.py",
            "seconds": 1.0, "at": "2026-01-01T00:00:00Z", "schema_version": 1}  # fmt: skip
    forge(repo, "refs/notes/kgit/c1/gate", tree, json.dumps(gate))
    validate = run_kgit("round", "validate")
    assert validate.code == 1 and "correctness gate failed" in validate.err, validate
    assert "was never gated" in validate.err
    assert run_kgit("round", "accept").code == 1
    assert "BUG" not in git(repo, "show", "kgit/c1/best:kernel.txt")


def test_a_changed_note_is_reported_by_doctor_log_and_show(campaign: Path) -> None:
    """(c) kgit reads what it recorded, and says that the notes ref holds something else."""
    repo = campaign
    slow = validated(repo, "slower", "speed: 80\n")
    assert run_kgit("round", "rollback", "--reason", "slower").code == 0
    forged = note(repo, ROUNDS, slow).replace("ROLLED BACK", "ACCEPTED")
    forge(repo, ROUNDS, slow, forged)

    doctor = run_kgit("doctor", "--json")
    assert doctor.code == 1
    problems = doctor.json()["problems"]  # type: ignore[index]
    changed = [p for p in problems if p["kind"] == "note_changed"]  # type: ignore[index]
    assert len(changed) == 1, problems
    assert "note of round-2 changed after kgit wrote it" in changed[0]["problem"]  # type: ignore[index]

    log = run_kgit("log")
    assert "note of round-2 changed after kgit wrote it" in log.out, log
    rows = run_kgit("log", "--json").json()
    row = next(r for r in rows if r["round"] == 2)  # type: ignore[union-attr, index]
    assert row["status"] == "ROLLED BACK" and row["note"] == "changed"  # type: ignore[index]
    shown = run_kgit("show", "2")
    assert "ROLLED BACK" in shown.out and "changed after kgit wrote it" in shown.out, shown
    assert "changed after kgit wrote it" in run_kgit("report").out

    fixed = run_kgit("doctor", "--fix")
    assert fixed.code == 0, fixed
    assert "status: ROLLED BACK" in note(repo, ROUNDS, slow)
    # The changed note stays in the notes ref's reflog (a notes ref holds one commit, not a
    # history: kgit/gitdoor/git_notes.py), and the note kgit wrote in the record's history.
    history = git(repo, "log", "-g", "-p", "--format=%H", ROUNDS)
    assert "status: ACCEPTED" in history
    assert git(repo, "rev-list", "--count", ROUNDS) == "1"


def test_every_note_kgit_writes_is_in_the_campaign_record(campaign: Path) -> None:
    repo = campaign
    validated(repo, "faster", "speed: 120\n")
    assert run_kgit("round", "accept").code == 0
    assert run_kgit("round", "start", "a bug").code == 0
    (repo / "kernel.txt").write_text("speed: 130\nBUG\n")
    assert commit(repo, "bug").returncode == 1  # a failing gate is recorded too
    for kind in ("rounds", "bench", "gate"):
        listed = git(repo, "notes", f"--ref=refs/notes/kgit/c1/{kind}", "list").splitlines()
        recorded = git(repo, "ls-tree", "-r", f"refs/kgit/c1/campaign:notes/{kind}").splitlines()
        assert len(listed) >= 2 if kind != "gate" else len(listed) >= 3
        assert sorted(listed) == sorted(
            f"{line.split()[2]} {line.split()[3]}" for line in recorded
        ), kind


def test_a_note_rewritten_to_the_same_text_is_not_a_change(campaign: Path) -> None:
    repo = campaign
    slow = validated(repo, "slower", "speed: 80\n")
    assert run_kgit("round", "rollback", "--reason", "slower").code == 0
    forge(repo, ROUNDS, slow, note(repo, ROUNDS, slow))  # same bytes, a new notes commit
    assert run_kgit("doctor").code == 0


def test_a_verdict_forged_in_the_record_itself_is_judged_from_the_evidence(campaign: Path) -> None:
    """An agent that rewrites the campaign record's copy of the note (not only the notes ref)
    still meets accept's recomputation from the measurements recorded for the tree."""
    repo = campaign
    tip = validated(repo, "slower", "speed: 80\n")
    record_note(
        repo,
        "rounds",
        tip,
        note(repo, ROUNDS, tip).replace("ROLLED BACK", "ACCEPTED").encode() + b"\n",
    )
    refused = run_kgit("round", "accept")
    assert refused.code == 1 and "stored evidence does not support its verdict" in refused.err
    assert git(repo, "rev-parse", "kgit/c1/best") != tip


def test_finish_does_not_read_notes(
    campaign: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forged baseline note does not change finish's outcome: finish measures the baseline
    commit and the best line again, and runs the suite, whatever any note says."""
    repo = campaign
    validated(repo, "faster", "speed: 120\n")
    assert run_kgit("round", "accept").code == 0
    base = git(repo, "rev-parse", "refs/kgit/c1/rounds/1")
    copy = tmp_path / "forged"
    shutil.copytree(repo, copy, symlinks=True)
    forged = note(copy, ROUNDS, base)
    forged = forged.replace("value: 1", "value: 9")  # every baseline figure far higher
    forge(copy, ROUNDS, base, forged)
    forge(copy, "refs/notes/kgit/c1/gate", git(copy, "rev-parse", "kgit/c1/best^{tree}"), "{}")

    clean = run_kgit("-q", "finish", "--json")
    assert clean.code == 0, clean
    gain = clean.json()["gain_pct"]  # type: ignore[index]
    assert "re-measured from scratch" in clean.json()["independent_of_notes"]  # type: ignore[index]
    monkeypatch.chdir(copy)
    tampered = run_kgit("-q", "finish")
    assert tampered.code == 0, tampered
    assert f"({gain:+.3f}% (first pass))" in tampered.out
    assert "re-gated and re-measured from scratch" in tampered.out
    report = note(copy, "refs/notes/kgit/c1/final", "kgit/c1/best")
    assert "no verdict, gate result or figure was read from notes" in report


def test_notes_removed_from_the_record_are_not_read_from_the_notes_ref(campaign: Path) -> None:
    """Deleting notes/ from the record (to look like a record of an older kgit, which reads its
    notes refs) is refused, not a way back to trusting the notes refs."""
    from kgit.gitdoor import open_repo

    repo = campaign
    kgit_repo = open_repo(repo)
    record = git(repo, "rev-parse", "refs/kgit/c1/campaign")
    listed = kgit_repo.ls_tree(record, ["notes"])
    tree = kgit_repo.tree_with(record, dict.fromkeys(listed))
    stripped = kgit_repo.commit_tree(tree, [record], "kgit c1: notes gone\n")
    kgit_repo.update_ref("refs/kgit/c1/campaign", stripped, record)
    for command in (["log"], ["round", "start", "x"], ["doctor"]):
        refused = run_kgit(*command)
        assert refused.code == 1 and "lost the notes kgit kept in it" in refused.err, refused


def test_a_gate_forged_in_the_record_itself_is_caught_by_finish(campaign: Path) -> None:
    """The limit, stated: an agent that writes refs/kgit/ as kgit does (here a passing gate for
    a tree with a bug) is believed by round accept. finish runs the suite itself and refuses."""
    repo = campaign
    assert run_kgit("round", "start", "fast but wrong").code == 0
    (repo / "kernel.txt").write_text("speed: 130\nBUG\n")
    assert commit(repo, "fast", "--no-verify").returncode == 0
    gate = {"kgit": "gate", "campaign": "c1", "passed": True, "command": "check.py",
            "seconds": 1.0, "at": "2026-01-01T00:00:00Z", "schema_version": 1,
            "where": "clean checkout"}  # fmt: skip
    record_note(repo, "gate", "HEAD^{tree}", json.dumps(gate).encode())
    assert run_kgit("-q", "round", "validate").code == 0
    assert run_kgit("round", "accept").code == 0  # believed: the record is kgit's own word
    refused = run_kgit("-q", "finish")
    assert refused.code == 1 and "test suite failed" in refused.err, refused
    assert "kgit/c1/final" not in git(repo, "for-each-ref", "refs/heads/kgit/c1/")


# An untracked module that shadows one the gate imports: `check.py` reads the kernel through
# pathlib, and the work tree's pathlib.py says there is no BUG.
SHADOW = """\
import importlib.util, sysconfig
_spec = importlib.util.spec_from_file_location(
    "pathlib", sysconfig.get_paths()["stdlib"] + "/pathlib.py")
_real = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_real)


def Path(*parts):
    class Shadow(type(_real.Path())):
        def read_text(self, *args, **kwargs):
            return super().read_text(*args, **kwargs).replace("BUG", "")
    return Shadow(*parts)
"""


def test_an_untracked_file_that_passes_the_hook_does_not_pass_validate(campaign: Path) -> None:
    """An untracked file in the user's work tree (here a module that shadows one the tests
    import; with pytest, a conftest.py) can turn a failing test suite green there. The hook
    gates kgit's clean checkout of the snapshot, where the file is not, and blocks the commit;
    committed anyway (--no-verify), the round has no pass and validate gates it in the clean
    checkout: the buggy kernel, faster and missed by the harness, stays off the best line."""
    repo = campaign
    assert run_kgit("round", "start", "fast but wrong").code == 0
    (repo / "kernel.txt").write_text("speed: 130\nBUG\n")
    (repo / "pathlib.py").write_text(SHADOW)
    blocked = commit(repo, "fast")
    assert blocked.returncode == 1, blocked.stderr
    assert "clean checkout" in blocked.stderr and "correctness gate failed" in blocked.stderr
    done = commit(repo, "fast", "--no-verify")
    assert done.returncode == 0, done.stderr
    validate = run_kgit("round", "validate")
    assert validate.code == 1 and "correctness gate failed" in validate.err, validate
    assert "clean checkout" in validate.err
    assert run_kgit("round", "accept").code == 1
    assert "BUG" not in git(repo, "show", "kgit/c1/best:kernel.txt")
