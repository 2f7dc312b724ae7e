"""A campaign between clones: kgit push, kgit pull, a clone without hooks, colliding rounds."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import commit, git
from tests.engine.remotes import (
    accepted,
    fresh_clone,
    kgit_in,
    kgit_refs,
    log,
    rolled_back,
    start,
    validated,
)


def test_push_then_pull_into_a_fresh_clone_shows_the_whole_lineage(
    shared: tuple[Path, Path],
) -> None:
    repo, bare = shared
    clone = fresh_clone(bare, "clone", ready=False)
    assert log(clone) == log(repo)
    assert kgit_refs(clone) == kgit_refs(repo)
    lineage = git(clone, "log", "--notes=kgit/c1/rounds", "kgit/c1/best")
    assert "status: ACCEPTED" in lineage and "status: BASELINE" in lineage
    rolled = git(clone, "rev-parse", "refs/kgit/c1/rounds/3")
    assert "status: ROLLED BACK" in git(clone, "log", "-1", "--notes=kgit/c1/rounds", rolled)
    bench = git(clone, "notes", "--ref=refs/notes/kgit/c1/bench", "show", rolled)
    assert bench == git(repo, "notes", "--ref=refs/notes/kgit/c1/bench", "show", rolled)

    # Nothing installed, nothing trusted: status says so and what to do, in that order.
    status = kgit_in(clone, "status", "--json").json()
    assert status["trusted"] is False and status["gate_installed"] is False  # type: ignore[index]
    assert status["next_step"] == "kgit trust --campaign c1"  # type: ignore[index]
    text = kgit_in(clone, "status").out
    assert "commit gate is not installed in this clone" in text
    assert "kgit trust, then kgit hooks install" in text
    assert not (clone / ".git" / "hooks" / "pre-commit").exists()
    assert "notes.rewriteref" not in git(clone, "config", "--list", "--local")

    assert kgit_in(clone, "trust", "--campaign", "c1", "--yes").code == 0
    assert kgit_in(clone, "status", "--json").json()["next_step"] == "kgit hooks install"  # type: ignore[index]
    assert kgit_in(clone, "hooks", "install").code == 0
    status = kgit_in(clone, "status", "--json").json()
    assert status["gate_installed"] is True  # type: ignore[index]
    assert "gate is not installed" not in kgit_in(clone, "status").out

    again = kgit_in(clone, "pull", "--json")
    assert again.code == 0 and again.json()["campaigns"][0]["result"] == "up to date"  # type: ignore[index]


def test_a_plain_clone_is_told_to_pull_not_to_init(shared: tuple[Path, Path]) -> None:
    _repo, bare = shared
    plain = bare.parent / "plain"
    git(bare.parent, "clone", "-q", str(bare), str(plain))
    refused = kgit_in(plain, "status")
    assert refused.code == 2
    assert "hint: kgit pull origin (it holds campaign(s) c1)" in refused.err, refused


def test_round_start_says_when_no_hook_gates_the_commit(shared: tuple[Path, Path]) -> None:
    _repo, bare = shared
    clone = fresh_clone(bare, "clone", ready=False)
    assert kgit_in(clone, "trust", "--campaign", "c1", "--yes").code == 0
    started = kgit_in(clone, "round", "start", "wider loads")
    assert started.code == 0, started
    assert "the hook gates it" not in started.out
    assert "no commit gate in this clone, kgit hooks install" in started.out
    (clone / "kernel.txt").write_text("speed: 130\nBUG\n")
    assert commit(clone, "ungated").returncode == 0  # nothing gates it here...
    refused = kgit_in(clone, "-q", "round", "validate")
    assert refused.code == 1 and "correctness gate failed" in refused.err  # ...validate does


def test_rounds_made_in_a_clone_come_back_with_pull(shared: tuple[Path, Path]) -> None:
    repo, bare = shared
    clone = fresh_clone(bare, "clone")
    number, sha = accepted(clone, "unroll K by 2", 130)
    assert number == 4
    rolled_back(clone, "unroll K by 8", 100)
    assert kgit_in(clone, "push").code == 0

    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/kgit/c1/best"
    pulled = kgit_in(repo, "pull", "--json")
    assert pulled.code == 0, pulled
    assert pulled.json()["campaigns"][0]["result"] == "fast-forward"  # type: ignore[index]
    assert log(repo) == log(clone)
    assert [r["round"] for r in log(repo)] == [1, 2, 3, 4, 5]
    # The best line checked out here moved with its files, and the work tree is clean.
    assert git(repo, "rev-parse", "HEAD") == sha
    assert (repo / "kernel.txt").read_text() == "speed: 130\n"
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""
    assert kgit_in(repo, "doctor").code == 0
    # The next round here takes the next number.
    assert start(repo, "split K") == 6


def test_colliding_rounds_are_refused_then_set_aside(shared: tuple[Path, Path]) -> None:
    repo, bare = shared
    clone = fresh_clone(bare, "clone")
    theirs, their_sha = accepted(clone, "theirs: unroll", 130)
    assert kgit_in(clone, "push").code == 0
    mine, my_sha = accepted(repo, "mine: vectorize", 125)
    assert theirs == mine == 4

    refused = kgit_in(repo, "push")
    assert refused.code == 1 and "hint: kgit pull origin -c c1" in refused.err, refused
    before = kgit_refs(repo)
    refused = kgit_in(repo, "pull")
    assert refused.code == 1, refused
    assert "both recorded round(s) 4" in refused.err
    assert (
        '"mine: vectorize" ACCEPTED' in refused.err and '"theirs: unroll" ACCEPTED' in refused.err
    )
    assert "--take-remote" in refused.err
    assert kgit_refs(repo) == before  # nothing moved

    taken = kgit_in(repo, "pull", "--take-remote", "--json")
    assert taken.code == 0, taken
    salvaged = taken.json()["campaigns"][0]["salvaged"]  # type: ignore[index]
    assert git(repo, "rev-parse", f"{salvaged}kgit/c1/rounds/4") == my_sha
    assert git(repo, "rev-parse", f"{salvaged}heads/kgit/c1/best") == my_sha
    set_aside = taken.json()["campaigns"][0]["set_aside"]  # type: ignore[index]
    assert set_aside == [
        {"round": 4, "commit": my_sha, "hypothesis": "mine: vectorize", "status": "ACCEPTED"}
    ]
    assert log(repo) == log(clone)
    assert git(repo, "rev-parse", "HEAD") == their_sha
    assert kgit_in(repo, "doctor").code == 0
    numbers = [r["round"] for r in log(repo)]
    assert len(numbers) == len(set(numbers))
    assert start(repo, "mine: vectorize, again") == 5


def test_pushing_an_open_round_reserves_its_number(shared: tuple[Path, Path]) -> None:
    repo, bare = shared
    clone = fresh_clone(bare, "clone")
    assert start(clone, "theirs") == 4
    assert kgit_in(clone, "push").code == 0
    assert start(repo, "mine") == 4
    refused = kgit_in(repo, "push")
    assert refused.code == 1 and "kgit pull" in refused.err
    refused = kgit_in(repo, "pull")
    assert refused.code == 1
    assert 'here round-4 "mine" in progress, on origin round-4 "theirs" in progress' in refused.err


def test_validated_round_pulled_where_it_is_open_keeps_its_verdict(
    shared: tuple[Path, Path],
) -> None:
    """A round pushed while open (validated in one clone) is finished in the other."""
    repo, bare = shared
    clone = fresh_clone(bare, "clone")
    number, sha = validated(clone, "wider loads", 130)
    assert kgit_in(clone, "push").code == 0
    git(clone, "checkout", "-q", "kgit/c1/best")

    assert kgit_in(repo, "pull").code == 0
    assert kgit_in(repo, "status", "--json").json()["open_round"]["round"] == number  # type: ignore[index]
    git(repo, "checkout", "-q", f"kgit/c1/round-{number}")
    assert kgit_in(repo, "round", "accept").code == 0
    assert git(repo, "rev-parse", "kgit/c1/best") == sha
    assert kgit_in(repo, "push").code == 0
    pulled = kgit_in(clone, "pull")
    assert pulled.code == 0, pulled
    assert log(clone) == log(repo)
    assert "kgit/c1/round-4" not in kgit_refs(clone)  # the closed round's branch went too


def test_a_closed_rounds_branch_is_neither_pushed_nor_pulled(shared: tuple[Path, Path]) -> None:
    """What a push racing an accept can find: the round closed in the record, its branch not
    yet deleted (here left by hand, as a kill there would)."""
    repo, bare = shared
    number, sha = accepted(repo, "wider loads", 130)
    git(repo, "branch", f"kgit/c1/round-{number}", sha)
    assert kgit_in(repo, "push").code == 0
    assert f"kgit/c1/round-{number}" not in git(bare, "for-each-ref", "refs/heads/")
    # A remote that has one anyway (pushed by plain git): a pull does not take it...
    git(repo, "push", "-q", "origin", f"{sha}:refs/heads/kgit/c1/round-{number}")
    clone = fresh_clone(bare, "clone", ready=False)
    assert f"kgit/c1/round-{number}" not in kgit_refs(clone)
    assert kgit_in(clone, "doctor").code == 0
    # ...and the next kgit push deletes it there.
    git(repo, "branch", "-D", f"kgit/c1/round-{number}")
    assert kgit_in(repo, "push").code == 0
    assert f"kgit/c1/round-{number}" not in git(bare, "for-each-ref", "refs/heads/")
