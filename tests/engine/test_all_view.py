"""`git log --all` and the history browsers built on it: everything kgit records lives under two
ref namespaces that one pair of `--exclude` options hides (docs/disk-and-history.md), leaving the
user's history and the campaign's code branches; kgit's own views keep reading the records."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from kgit.records.names import NOTE_KINDS
from tests.conftest import git
from tests.engine.remotes import accepted, fresh_clone, kgit_in, make_remote, rolled_back

# The exclusion docs/disk-and-history.md documents: `--exclude` must come before `--all`.
HIDE_RECORDS = ("--exclude=refs/kgit*", "--exclude=refs/notes/kgit/*", "--all")


def authors(repo: Path, *revs: str) -> list[str]:
    return git(repo, "log", "--format=%an %s", *revs).splitlines()


def test_kgits_records_leave_the_all_view_with_two_excludes(campaign: Path) -> None:
    repo = campaign
    accepted(repo, "bigger tiles", 120)
    rolled_back(repo, "smaller tiles", 90)
    lesson = ["--context", "small tiles", "--signal", "-10%", "--takeaway", "keep 128"]
    assert kgit_in(repo, "tips", "add", *lesson, "--applicability", "all", "--round", "3").code == 0
    bare = make_remote(repo)
    assert kgit_in(repo, "push").code == 0
    clone = fresh_clone(bare, "clone")  # its records arrive under refs/kgit-remotes/ too

    for where in (repo, clone):
        everything = authors(where, "--all")
        assert sum(line.startswith("kgit ") for line in everything) > 10  # the flood
        shown = authors(where, *HIDE_RECORDS)
        assert shown and not [line for line in shown if line.startswith("kgit ")], shown
        # The user's commits stay, the accepted round's on the best line among them.
        assert any("bigger tiles" in line for line in shown)

    # kgit's views read what the browser no longer shows.
    rows = kgit_in(repo, "log", "--json").json()
    assert isinstance(rows, list) and [row["round"] for row in rows] == [1, 2, 3]
    doctor = kgit_in(repo, "doctor", "--json")
    assert doctor.code == 0, doctor


def records(repo: Path) -> list[str]:
    """The subjects of the commits `git log --all` lists and the two excludes hide: kgit's."""
    shown = set(git(repo, "log", "--format=%H", *HIDE_RECORDS).split())
    every = [
        line.split(" ", 1) for line in git(repo, "log", "--all", "--format=%H %s").splitlines()
    ]
    return [subject for sha, subject in every if sha not in shown]


def test_a_round_adds_its_record_commits_and_no_notes_commit_to_the_all_view(
    campaign: Path,
) -> None:
    """A round used to add 11 commits to `git log --all`: 5 record commits (its note marked and
    the round closed in two) and 6 notes commits, one per kind per write. Now the closing is
    one record commit and a notes ref holds one commit, whatever was written."""
    repo = campaign
    before = records(repo)
    accepted(repo, "bigger tiles", 120)
    after_accept = records(repo)
    rolled_back(repo, "smaller tiles", 90)
    after_rollback = records(repo)

    accept = Counter(after_accept) - Counter(before)
    gate = next(subject for subject in accept if subject.startswith("kgit c1: gate of tree "))
    assert accept == Counter(
        [
            "kgit c1: round-2 started: bigger tiles",
            gate,
            "kgit c1: round-2: ACCEPTED",  # validate's verdict
            "kgit c1: round-2 ACCEPTED",  # the note marked and the round closed, one commit
        ]
    ), after_accept
    rollback = Counter(after_rollback) - Counter(after_accept)
    assert sum(rollback.values()) == 4, after_rollback
    assert "kgit c1: round-3 ROLLED BACK: slower" in rollback
    notes = [line for line in after_rollback if line == "Notes added by kgit"]
    written = git(repo, "for-each-ref", "--format=%(refname)", "refs/notes/kgit/c1/").split()
    assert len(notes) == len(written) == len(NOTE_KINDS) - 1  # no final note before a finish
    for ref in written:
        assert git(repo, "rev-list", "--count", ref) == "1", ref
