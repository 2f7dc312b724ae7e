"""Accept is compare-and-swap on the best line: two accepts at once in one clone, two clones
accepting and pushing at once, a push racing an accept, a best line moved under an open round."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git
from tests.engine.remotes import (
    accepted,
    fresh_clone,
    kgit_in,
    kgit_process,
    kgit_refs,
    log,
    validated,
)

# Several kgit processes racing for minutes of CPU: the full suite runs them, the quick one
# (`pytest -m "not slow"`) leaves them out.
pytestmark = pytest.mark.slow


def _finish(procs: list[subprocess.Popen[str]]) -> list[tuple[int, str]]:
    done = []
    for proc in procs:
        _out, err = proc.communicate(timeout=180)
        done.append((proc.returncode, err))
    return done


def test_two_accepts_at_once_one_wins(campaign: Path) -> None:
    repo = campaign
    for trial in range(3):
        number, sha = validated(repo, f"idea {trial}", 130 + 10 * trial)
        results = _finish([kgit_process(repo, "round", "accept") for _ in range(2)])
        codes = sorted(code for code, _ in results)
        assert codes == [0, 1], results
        loser = next(err for code, err in results if code == 1)
        assert "closed by another kgit process" in loser or "no round in progress" in loser, loser
        assert "completing an interrupted accept" not in loser
        assert git(repo, "rev-parse", "kgit/c1/best") == sha
        accepts = [r for r in log(repo) if r["round"] == number]
        assert [r["status"] for r in accepts] == ["ACCEPTED"]  # one record, not two
        assert kgit_in(repo, "doctor").code == 0


def _accept_and_push(repo: Path) -> subprocess.Popen[str]:
    script = (
        "import sys\nfrom kgit.cli import main\n"
        "code = main(['-q', 'round', 'accept'])\n"
        "sys.exit(code or main(['push']))\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", script], cwd=repo, stderr=subprocess.PIPE, text=True
    )


def test_two_clones_accepting_and_pushing_at_once_one_wins(shared: tuple[Path, Path]) -> None:
    repo, bare = shared
    clone = fresh_clone(bare, "clone")
    mine, my_sha = validated(repo, "mine", 130)
    theirs, their_sha = validated(clone, "theirs", 140)
    assert mine == theirs
    results = _finish([_accept_and_push(repo), _accept_and_push(clone)])
    assert sorted(code for code, _ in results) == [0, 1], results
    loser_err = next(err for code, err in results if code == 1)
    assert "hint: kgit pull" in loser_err, loser_err
    winner = repo if results[0][0] == 0 else clone
    assert git(bare, "rev-parse", "refs/heads/kgit/c1/best") in (my_sha, their_sha)
    assert git(bare, "rev-parse", "refs/kgit/c1/campaign") == git(
        winner, "rev-parse", "refs/kgit/c1/campaign"
    )
    third = fresh_clone(bare, "third", ready=False)  # the remote is whole: its pull checks it
    assert log(third) == log(winner)


def test_a_push_that_lost_the_race_after_its_fetch_is_refused_by_the_lease(
    shared: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remote moves between kgit push's fetch and its push: --force-with-lease refuses."""
    import kgit.engine.sharing.push as push_module

    repo, bare = shared
    clone = fresh_clone(bare, "clone")
    accepted(repo, "mine", 130)
    accepted(clone, "theirs", 140)
    real_fetch = push_module.fetch

    def fetch_then_lose_the_race(kgit_repo: object, remote: str) -> None:
        real_fetch(kgit_repo, remote)  # type: ignore[arg-type]
        other = subprocess.run(
            [sys.executable, "-m", "kgit", "push"], cwd=clone, capture_output=True, text=True
        )
        assert other.returncode == 0, other.stderr

    monkeypatch.setattr(push_module, "fetch", fetch_then_lose_the_race)
    before = git(bare, "rev-parse", "refs/kgit/c1/campaign")
    refused = kgit_in(repo, "push")
    assert refused.code == 1, refused
    assert "moved there since kgit fetched it" in refused.err and "stale info" in refused.err
    assert "kgit pull origin" in refused.err
    assert git(bare, "rev-parse", "refs/kgit/c1/campaign") != before  # the other push won...
    assert git(bare, "rev-parse", "refs/kgit/c1/campaign") == git(
        clone, "rev-parse", "refs/kgit/c1/campaign"
    )  # ...whole: no ref of the refused push landed
    assert git(bare, "rev-parse", "refs/heads/kgit/c1/best") == git(clone, "rev-parse", "HEAD")


def test_a_push_racing_an_accept_publishes_a_whole_state(shared: tuple[Path, Path]) -> None:
    repo, bare = shared
    for trial in range(3):
        validated(repo, f"race {trial}", 130 + 10 * trial)
        results = _finish([kgit_process(repo, "round", "accept"), kgit_process(repo, "push")])
        assert [code for code, _ in results] == [0, 0], results
        # Whatever the push saw, the remote holds one consistent state: a fresh clone's pull
        # checks that its best line was accepted by its record.
        check = fresh_clone(bare, f"check-{trial}", ready=False)
        assert kgit_in(check, "doctor").code == 0
        assert kgit_in(repo, "push").code == 0
    assert kgit_refs(fresh_clone(bare, "last", ready=False)) == kgit_refs(repo)


def test_accept_refuses_when_the_best_line_moved_under_the_round(campaign: Path) -> None:
    repo = campaign
    number, _sha = validated(repo, "wider loads", 130)
    parent = git(repo, "rev-parse", "HEAD~1")
    # Someone moves the best line outside this round (a plain git push into this clone).
    other = git(repo, "commit-tree", f"{parent}^{{tree}}", "-p", parent, "-m", "other best")
    git(repo, "update-ref", "refs/heads/kgit/c1/best", other, parent)
    refused = kgit_in(repo, "round", "accept")
    assert refused.code == 1, refused
    # No accept put the best line there: it is refused as moved outside kgit (issue 35), with
    # the command line that puts it back, before any stale-base question.
    assert f"was moved outside kgit: it is at {other[:10]}" in refused.err
    assert f"the record puts it at {parent[:10]}" in refused.err
    assert f"git update-ref refs/heads/kgit/c1/best {parent} {other}" in refused.err
    assert git(repo, "rev-parse", "kgit/c1/best") == other

    # The hinted way: the best line put back where the record says (the other commit kept on
    # a branch of its own), then the round's accept goes through.
    restore = f"git branch kgit-moved-{other[:10]} {other} && git update-ref"
    assert restore in refused.err
    git(repo, "branch", f"kgit-moved-{other[:10]}", other)
    git(repo, "update-ref", "refs/heads/kgit/c1/best", parent, other)
    done = kgit_in(repo, "round", "accept", "--json")
    assert done.code == 0, done
    assert git(repo, "rev-parse", "kgit/c1/best~1") == parent
    assert [r["status"] for r in log(repo) if r["round"] == number] == ["ACCEPTED"]
