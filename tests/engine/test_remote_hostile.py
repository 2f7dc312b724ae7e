"""kgit pull against a remote that lies: a rewritten campaign record, a forged note, a best line
no round accepted, another campaign of the same name."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import git
from tests.engine.remotes import (
    change,
    fresh_clone,
    kgit_in,
    kgit_refs,
    log,
    make_remote,
    start,
)

ROUNDS = "refs/notes/kgit/c1/rounds"


def _rolled_back_commit(repo: Path) -> str:
    return git(repo, "rev-parse", "refs/kgit/c1/rounds/3")


def _record_edit(repo: Path, path: str, data: bytes, *, on: str | None = None) -> str:
    """A record commit with PATH set to DATA, on ON (default: the record's tip), made with
    plain git as a hostile clone could: its sha."""
    from kgit.gitdoor import open_repo

    kgit_repo = open_repo(repo)
    parent = on or git(repo, "rev-parse", "refs/kgit/c1/campaign")
    tree = kgit_repo.tree_with(parent, {path: data})
    return kgit_repo.commit_tree(tree, [parent], "kgit c1: round-3 ACCEPTED\n")


def test_a_closed_round_rewritten_in_an_appended_record_commit_is_refused(
    shared: tuple[Path, Path],
) -> None:
    repo, bare = shared
    clone = fresh_clone(bare, "clone")
    target = _rolled_back_commit(clone)
    text = git(clone, "notes", f"--ref={ROUNDS}", "show", target)
    forged = text.replace("status: ROLLED BACK", "status: ACCEPTED") + "\n"
    appended = _record_edit(clone, f"notes/rounds/{target}", forged.encode())
    git(clone, "push", "-q", "origin", f"{appended}:refs/kgit/c1/campaign")

    before = kgit_refs(repo)
    refused = kgit_in(repo, "pull")
    assert refused.code == 1, refused
    assert "rewrites what this clone recorded" in refused.err
    assert f"round-3's closed note on {target[:10]} was changed" in refused.err
    assert kgit_refs(repo) == before


def test_a_record_rewritten_and_force_pushed_is_refused(shared: tuple[Path, Path]) -> None:
    repo, bare = shared
    clone = fresh_clone(bare, "clone")
    record = git(clone, "rev-parse", "refs/kgit/c1/campaign")
    target = _rolled_back_commit(clone)
    # History rewritten: the last record commits replaced by one that drops round-3's note.
    rewritten = _record_edit(clone, "state.json", b"", on=f"{record}~3")
    from kgit.gitdoor import open_repo

    kgit_repo = open_repo(clone)
    state = git(clone, "cat-file", "blob", f"{record}:state.json").encode()
    tree = kgit_repo.tree_with(rewritten, {"state.json": state, f"notes/rounds/{target}": None})
    rewritten = kgit_repo.commit_tree(tree, [rewritten], "kgit c1: tidy\n")
    git(clone, "push", "-q", "-f", "origin", f"{rewritten}:refs/kgit/c1/campaign")

    before = kgit_refs(repo)
    refused = kgit_in(repo, "pull")
    assert refused.code == 1, refused
    assert "origin's record may have been rewritten there" in refused.err
    assert kgit_refs(repo) == before
    refused = kgit_in(repo, "push")  # nor does this clone overwrite it blindly
    assert refused.code == 1 and "kgit pull origin -c c1" in refused.err
    # The hinted repair: this clone's record published again, compare-and-swap on the rewrite.
    lease = f"--force-with-lease=refs/kgit/c1/campaign:{rewritten}"
    assert lease in kgit_in(repo, "pull").err
    git(repo, "push", "-q", lease, "origin", "refs/kgit/c1/campaign")
    assert kgit_in(repo, "push").code == 0
    assert log(fresh_clone(bare, "fresh", ready=False)) == log(repo)


def test_a_forged_note_on_the_remote_is_not_taken(shared: tuple[Path, Path]) -> None:
    repo, bare = shared
    clone = fresh_clone(bare, "clone")
    target = _rolled_back_commit(clone)
    git(clone, "notes", f"--ref={ROUNDS}", "add", "-f", "-m", "status: ACCEPTED", target)
    git(clone, "push", "-q", "-f", "origin", f"{ROUNDS}:{ROUNDS}")

    fresh = fresh_clone(bare, "fresh", ready=False)
    pulled = kgit_in(fresh, "pull", "--json")
    data = pulled.json()["campaigns"][0]  # type: ignore[index]
    assert data["notes_not_taken"] == [
        {
            "kind": "rounds",
            "target": target,
            "blob": git(bare, "notes", f"--ref={ROUNDS}", "list", target),
        }
    ]
    shown = git(fresh, "notes", f"--ref={ROUNDS}", "show", target)
    assert "status: ROLLED BACK" in shown  # what the record holds
    assert log(fresh) == log(repo)
    assert "were not taken" in kgit_in(fresh, "pull").out

    # The clone that had it right: its push is refused until a pull merges the two notes
    # histories; then the remote publishes the recorded note again.
    refused = kgit_in(repo, "push")
    assert refused.code == 1 and f"{ROUNDS} has notes this clone's lacks" in refused.err, refused
    assert kgit_in(repo, "pull").code == 0
    assert "status: ROLLED BACK" in git(repo, "notes", f"--ref={ROUNDS}", "show", target)
    assert kgit_in(repo, "push").code == 0
    assert "status: ROLLED BACK" in git(bare, "notes", f"--ref={ROUNDS}", "show", target)


def test_a_best_line_no_round_accepted_is_refused(shared: tuple[Path, Path]) -> None:
    repo, bare = shared
    target = _rolled_back_commit(repo)
    git(repo, "push", "-q", "-f", "origin", f"{target}:refs/heads/kgit/c1/best")
    plain = bare.parent / "plain"
    git(bare.parent, "clone", "-q", str(bare), str(plain))
    refused = kgit_in(plain, "pull")
    assert refused.code == 1, refused
    assert f"best line of campaign c1 is at {target[:10]}, and its note says ROLLED BACK" in (
        refused.err
    )
    assert "kgit/c1/" not in kgit_refs(plain)  # nothing taken
    # A clone that has the campaign keeps its own best line and is told.
    pulled = kgit_in(repo, "pull")
    assert pulled.code == 0 and "best line" in pulled.out and "differs" in pulled.out, pulled
    assert git(repo, "rev-parse", "kgit/c1/best") != target


def test_another_campaign_of_the_same_name_is_refused_both_ways(
    shared: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, bare = shared
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", "--origin", "first", str(bare), str(other))
    git(other, "checkout", "-q", "-b", "elsewhere", git(repo, "rev-parse", "kgit/c1/best~1"))
    assert kgit_in(other, "init", "c1", "--manifest", str(repo / "manifest.yaml")).code == 0
    other_bare = make_remote(other, "other.git")
    assert kgit_in(other, "push").code == 0
    git(repo, "remote", "add", "other", str(other_bare))

    before = kgit_refs(repo)
    refused = kgit_in(repo, "pull", "other")
    assert refused.code == 1 and "other holds another campaign named c1" in refused.err, refused
    assert kgit_refs(repo) == before
    refused = kgit_in(repo, "push", "other")
    assert refused.code == 1 and "other holds another campaign named c1" in refused.err


BOMB = (
    "kgit: round\ncampaign: c1\nround: 9\nstatus: ROLLED BACK\nhypothesis: h\n"
    "metric: Forward TFLOPS\nschema_version: 1\na: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n"
        for p, c in zip("abcdefg", "bcdefgh", strict=True)
    )
    + "reasons: [*h, *h, *h]\n"
)


def test_a_note_built_to_expand_is_refused_by_pull_and_by_the_reader(
    shared: tuple[Path, Path],
) -> None:
    """A 1 kB round note of nested YAML aliases appended to the remote's record hung `kgit log`
    for minutes (killed at 120 s) after a pull took it."""
    repo, bare = shared
    clone = fresh_clone(bare, "clone")
    unrelated = git(clone, "commit-tree", "HEAD^{tree}", "-m", "x")
    appended = _record_edit(clone, f"notes/rounds/{unrelated}", BOMB.encode())
    git(clone, "push", "-q", "origin", f"{appended}:refs/kgit/c1/campaign")
    before = kgit_refs(repo)
    refused = kgit_in(repo, "pull")
    assert refused.code == 1, refused
    assert f"a round note on {unrelated[:10]} that kgit cannot take" in refused.err
    assert "YAML aliases" in refused.err
    assert kgit_refs(repo) == before
    # Were it there anyway, reading it is an error, not a hang.
    git(clone, "update-ref", "refs/kgit/c1/campaign", appended)
    shown = kgit_in(clone, "log")
    assert shown.code == 1 and "YAML aliases" in shown.err


def test_refs_the_remote_record_does_not_account_for_are_not_taken(
    shared: tuple[Path, Path],
) -> None:
    repo, bare = shared
    base = git(repo, "rev-parse", "kgit/c1/best~1")
    git(repo, "push", "-q", "origin", f"{base}:refs/heads/kgit/c1/round-99")
    git(repo, "push", "-q", "origin", f"{base}:refs/kgit/c1/rounds/99")
    git(repo, "push", "-q", "origin", f"{base}:refs/kgit/bad$(touch${{IFS}}x)/campaign")
    clone = fresh_clone(bare, "clone", ready=False)
    names = [line.split(" ", 1)[1] for line in kgit_refs(clone).splitlines()]
    assert "refs/heads/kgit/c1/round-99" not in names and "refs/kgit/c1/rounds/99" not in names
    assert not any(name.startswith("refs/kgit/bad") for name in names)
    assert "refs/kgit/c1/campaign" in names
    assert kgit_in(clone, "doctor").code == 0


def test_a_forged_interrupted_accept_does_not_carry_a_best_line(
    shared: tuple[Path, Path],
) -> None:
    """An open round whose branch tip is the best line passes for an accept killed half-way;
    the remote must hold an accepting verdict of that round on it."""
    _repo, bare = shared
    clone = fresh_clone(bare, "clone")
    number = start(clone, "sneaky")
    sneaky = change(clone, 50, "slower, never validated")
    git(clone, "push", "-q", "origin", f"{sneaky}:refs/heads/kgit/c1/best")
    git(clone, "push", "-q", "origin", f"{sneaky}:refs/heads/kgit/c1/round-{number}")
    git(clone, "push", "-q", "origin", "refs/kgit/c1/campaign:refs/kgit/c1/campaign")
    fresh = bare.parent / "fresh"
    git(bare.parent, "clone", "-q", str(bare), str(fresh))
    refused = kgit_in(fresh, "pull")
    assert refused.code == 1, refused
    assert f"best line of campaign c1 is at {sneaky[:10]}" in refused.err


def test_what_the_baseline_froze_cannot_be_changed_by_an_appended_record_commit(
    shared: tuple[Path, Path],
) -> None:
    """A record commit that re-hashes the protected harness would let a changed harness pass
    as the frozen one in every clone that pulls it."""
    import json

    repo, bare = shared
    clone = fresh_clone(bare, "clone")
    record = git(clone, "rev-parse", "refs/kgit/c1/campaign")
    state = json.loads(git(clone, "cat-file", "blob", f"{record}:state.json"))
    state["protected"] = {path: "0" * 40 for path in state["protected"]}
    appended = _record_edit(clone, "state.json", (json.dumps(state, indent=2) + "\n").encode())
    git(clone, "push", "-q", "origin", f"{appended}:refs/kgit/c1/campaign")
    refused = kgit_in(repo, "pull")
    assert refused.code == 1, refused
    assert "its state's protected (frozen at baseline) changed" in refused.err


def test_a_best_line_that_changes_the_frozen_harness_is_refused(
    shared: tuple[Path, Path],
) -> None:
    """A forged record can call any commit ACCEPTED; it cannot make the frozen files change."""
    from kgit.gitdoor import open_repo

    repo, bare = shared
    clone = fresh_clone(bare, "clone")
    git(clone, "checkout", "-q", "kgit/c1/best")
    (clone / "harness.py").write_text((clone / "harness.py").read_text() + "# faster\n")
    git(clone, "commit", "-q", "--no-verify", "-am", "a harness that reads faster")
    forged = git(clone, "rev-parse", "HEAD")
    note = git(clone, "notes", "--ref=refs/notes/kgit/c1/rounds", "show", "HEAD~1")
    record = _record_edit(
        clone, f"notes/rounds/{forged}", note.replace("round: 2", "round: 4").encode()
    )
    kgit_repo = open_repo(clone)
    state = kgit_repo.read_blob(git(clone, "rev-parse", f"{record}:state.json"))
    tree = kgit_repo.tree_with(
        record, {"state.json": state.replace(b'"next_round": 4', b'"next_round": 5')}
    )
    record = kgit_repo.commit_tree(tree, [record], "kgit c1: round-4 ACCEPTED\n")
    git(
        clone,
        "push",
        "-q",
        "origin",
        f"{record}:refs/kgit/c1/campaign",
        f"{forged}:refs/heads/kgit/c1/best",
    )
    refused = kgit_in(repo, "pull")
    assert refused.code == 1, refused
    assert "changes file(s) frozen at baseline: harness.py" in refused.err
