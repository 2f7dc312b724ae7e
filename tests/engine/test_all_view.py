"""`git log --all` and the history browsers built on it: everything kgit records lives under two
ref namespaces that one pair of `--exclude` options hides (docs/disk-and-history.md), leaving the
user's history and the campaign's code branches; kgit's own views keep reading the records."""

from __future__ import annotations

from pathlib import Path

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
