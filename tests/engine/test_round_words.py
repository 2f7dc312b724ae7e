"""Attribution and lessons have flags (issue 15 item 3): `round accept --attribution --lesson`,
`round rollback --reason --lesson`, kept in the round's note, shown by `kgit log` and the report,
and the report says nothing where nothing was recorded."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import git, run_kgit
from tests.engine.remotes import change, start, validated


def test_words_given_when_closing_rounds_are_kept_and_shown(campaign: Path) -> None:
    repo = campaign
    _, accepted = validated(repo, "bigger tiles", 120)
    done = run_kgit(
        "round", "accept", "--attribution", "fewer programs", "--lesson", "tiles matter"
    )
    assert done.code == 0, done
    _, rejected = validated(repo, "smaller tiles", 90)
    done = run_kgit("round", "rollback", "--reason", "launch overhead", "--lesson", "keep 128")
    assert done.code == 0, done
    start(repo, "unroll K")
    done = run_kgit("round", "rollback", "--reason", "no idea", "--lesson", "profile first")
    assert done.code == 0, done
    start(repo, "nothing to say")
    change(repo, 80, "slower")
    assert run_kgit("-q", "round", "validate").code == 0
    assert run_kgit("round", "rollback", "--reason", "slower").code == 0

    note = git(repo, "cat-file", "blob", f"refs/kgit/c1/campaign:notes/rounds/{accepted}")
    assert "attribution: fewer programs" in note and "lesson: tiles matter" in note
    note = git(repo, "cat-file", "blob", f"refs/kgit/c1/campaign:notes/rounds/{rejected}")
    assert "rollback_reason: launch overhead" in note and "lesson: keep 128" in note

    log = run_kgit("log")
    assert "round-2: attribution: fewer programs; lesson: tiles matter" in log.out, log
    assert "round-3: reason: launch overhead; lesson: keep 128" in log.out
    assert "round-4: reason: no idea; lesson: profile first" in log.out
    rows = {r["round"]: r for r in run_kgit("log", "--json").json()}  # type: ignore[union-attr]
    assert rows[2]["attribution"] == "fewer programs" and rows[4]["lesson"] == "profile first"

    report = run_kgit("report")
    assert report.code == 0, report
    assert "Attribution: fewer programs" in report.out and "Lesson: tiles matter" in report.out
    assert "Lesson: keep 128" in report.out and "Lesson: profile first" in report.out
    for field in ("Attribution", "Next direction", "Lesson", "Root cause"):
        assert f"{field}: not recorded" not in report.out
    shown = run_kgit("show", "5", "--json").json()["summary"]  # type: ignore[index]
    assert shown["attribution"] is None and shown["rollback"]["lesson"] is None
    assert "Lesson" not in run_kgit("show", "5").out
