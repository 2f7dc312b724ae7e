"""`git log` is the review surface (issue 15 item 4): under each round commit plain `git log`
shows a short summary (status, metric vs best and baseline, the worst shape, why), not the ~40
lines of YAML of the round note, which stays where tools read it; a push and a pull carry it."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import git, run_kgit
from tests.engine.remotes import fresh_clone, kgit_in, make_remote, rolled_back, validated


def _notes_under(repo: Path, rev: str) -> list[str]:
    """The note lines plain `git log -1 REV` prints (indented under a `Notes (...)` header)."""
    text = git(repo, "log", "-1", rev)
    _, _, notes = text.partition("\nNotes (")
    assert notes, text
    return [line.strip() for line in notes.splitlines()[1:] if line.strip()]


def _head(lines: list[str]) -> str:
    """The summary's first line without the pointer to the full record it ends with."""
    head, pointer, _ = lines[0].partition(" (full record: git log --notes=kgit/c1/rounds)")
    assert pointer, lines
    return head


def test_git_log_shows_a_short_summary_under_each_round(campaign: Path) -> None:
    repo = campaign
    _, sha = rolled_back(repo, "smaller tiles", 90)
    lines = _notes_under(repo, sha)
    assert 3 <= len(lines) <= 4, lines
    text = "\n".join(lines)
    assert _head(lines) == "kgit c1 round-2: ROLLED BACK"
    assert re.search(r"Forward TFLOPS [0-9.]+ \(quick, \d shapes\): -\d+\.\d\d% vs best, "
                     r"-\d+\.\d\d% vs baseline; worst s\d+ -\d+\.\d\d%", text), text  # fmt: skip
    assert "why: aggregate not improved" in text
    assert "rolled back: slower" in text
    assert "hypothesis" not in text.lower()  # the commit message says it once
    # The full record is where tools read it.
    full = git(repo, "log", "-1", "--notes=kgit/c1/rounds", sha)
    assert "hypothesis: smaller tiles" in full and "shapes:" in full

    message = git(repo, "log", "-1", "--format=%B", sha)
    assert message.count("smaller tiles") == 2  # the subject and one Hypothesis: line


def test_the_summary_follows_the_round_and_travels(campaign: Path) -> None:
    repo = campaign
    _, sha = validated(repo, "bigger tiles", 120)
    assert _head(_notes_under(repo, sha)) == "kgit c1 round-2: VALIDATED"
    assert run_kgit("round", "accept", "--attribution", "fewer programs").code == 0
    lines = _notes_under(repo, sha)
    assert _head(lines) == "kgit c1 round-2: ACCEPTED" and "attribution: fewer programs" in lines
    baseline = _notes_under(repo, "kgit/c1/best~1")
    assert _head(baseline) == "kgit c1 round-1: BASELINE", baseline

    bare = make_remote(repo)
    assert kgit_in(repo, "push").code == 0
    clone = fresh_clone(bare, "clone")
    assert git(clone, "rev-parse", "refs/notes/kgit/c1/log") == git(
        repo, "rev-parse", "refs/notes/kgit/c1/log"
    )
    assert _head(_notes_under(clone, sha)) == "kgit c1 round-2: ACCEPTED"
    # A summary changed by hand is a drift like any other note's.
    git(repo, "notes", "--ref=refs/notes/kgit/c1/log", "add", "-f", "-m", "all good", sha)
    doctor = run_kgit("doctor")
    assert "git log summary of round-2 changed after kgit wrote it" in doctor.out, doctor
    assert run_kgit("doctor", "--fix").code == 0
    assert _head(_notes_under(repo, sha)) == "kgit c1 round-2: ACCEPTED"


def test_plain_git_log_of_a_round_commit_fits_in_fifteen_lines(campaign: Path) -> None:
    """A rolled-back round with every field a user adds (its reason, its lesson) and a FAIL
    shape printed 16 lines under plain `git log -1` (issue 26, item 4): a screen's glance."""
    repo = campaign
    number, sha = validated(repo, "smaller tiles and a wider vector", 90)
    done = kgit_in(
        repo,
        "round",
        "rollback",
        "--reason",
        "spills registers at 64x64 tiles",
        "--lesson",
        "keep 128x128; widen the vector instead",
    )
    assert done.code == 0, done
    text = git(repo, "log", "-1", sha)
    assert len(text.splitlines()) <= 15, text
    notes = _notes_under(repo, sha)
    assert _head(notes) == f"kgit c1 round-{number}: ROLLED BACK"
    joined = "\n".join(notes)
    assert "spills registers" in joined and "keep 128x128" in joined
