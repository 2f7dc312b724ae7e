"""`kgit log` before any round, and a campaign whose round notes were deleted by hand (issue 12,
item 7): an empty table or a clear refusal with a hint, never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgit.views.status_log import github_table
from tests.conftest import commit, git, record_note, run_kgit


def test_an_empty_table_is_its_header() -> None:
    assert github_table(["round", "status"], []) == "| round | status |\n|-------|--------|"


def test_a_table_is_as_wide_as_its_widest_cell() -> None:
    table = github_table(["a", "status"], [["round-12", "x"]])
    assert table == "| a        | status |\n|----------|--------|\n| round-12 | x      |"


def test_log_before_the_baseline_says_there_is_no_round(kernel_repo: Path) -> None:
    assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
    result = run_kgit("log")
    assert result.code == 0, result
    assert result.out.startswith("| round ")
    assert "no round recorded yet: kgit baseline" in result.out
    assert run_kgit("log", "--json").json() == []


@pytest.mark.parametrize("command", [["log"], ["status"], ["round", "validate"]])
def test_deleted_round_notes_are_read_from_the_record(campaign: Path, command: list[str]) -> None:
    """The notes ref deleted by hand: kgit reads every note from the campaign record, says the
    published copies are gone, and `kgit doctor --fix` publishes them again."""
    assert run_kgit("round", "start", "faster").code == 0
    (campaign / "kernel.txt").write_text("speed: 120\n")
    assert commit(campaign, "faster").returncode == 0
    git(campaign, "update-ref", "-d", "refs/notes/kgit/c1/rounds")
    result = run_kgit("-q", *command)
    assert result.code == 0, result
    if command == ["log"]:
        assert "warning: note of round-1 was removed" in result.out
    doctor = run_kgit("doctor", "--json")
    assert doctor.code == 1 and "note_missing" in doctor.out
    assert run_kgit("doctor", "--fix").code == 0
    assert "status: BASELINE" in git(
        campaign, "notes", "--ref=refs/notes/kgit/c1/rounds", "show", "kgit/c1/best"
    )


def test_a_record_without_its_baseline_note_is_refused_with_a_hint(campaign: Path) -> None:
    """The baseline note gone from the record too (a hand edit of refs/kgit/...): a refusal
    with a hint, never a crash, and nothing written."""
    record_note(campaign, "rounds", "HEAD", None)
    before = git(campaign, "for-each-ref")
    for command in (["log"], ["status"]):
        result = run_kgit("-q", *command)
        assert result.code == 1 and "Traceback" not in result.err, result
        assert "refs/notes/kgit/c1/rounds holds no baseline note" in result.err
        assert "hint: restore refs/notes/kgit/c1/rounds" in result.err
    assert git(campaign, "for-each-ref") == before


@pytest.mark.parametrize("text", ["kgit: round\na: [", "just a line someone wrote"])
def test_a_note_garbled_by_hand_is_reported(campaign: Path, text: str) -> None:
    git(campaign, "notes", "--ref=refs/notes/kgit/c1/rounds", "add", "-f", "-m", text, "HEAD")
    result = run_kgit("log")
    assert result.code == 0 and "BASELINE" in result.out, result
    assert "note of round-1 changed after kgit wrote it" in result.out


@pytest.mark.parametrize("text", ["kgit: round\na: [", "just a line someone wrote"])
def test_a_garbled_note_in_the_record_is_refused_with_a_hint(campaign: Path, text: str) -> None:
    record_note(campaign, "rounds", "HEAD", text.encode())
    result = run_kgit("log")
    assert result.code == 1 and "Traceback" not in result.err, result
    assert (
        "round note" in result.err and "hint: a round note was changed outside kgit" in result.err
    )
