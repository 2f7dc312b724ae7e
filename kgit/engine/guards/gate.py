"""The correctness gate: the manifest's test command on exactly the snapshot being recorded.

The gate runs once a round, where it can be trusted: in kgit's clean checkout of the snapshot
(the candidate's measuring tree, kgit/engine/measuring/sides/side_trees.py), which holds the snapshot's files and
nothing untracked or ignored (a conftest.py, a module that shadows one the tests import, that
could turn a failing suite green in the user's work tree). The commit hook gates the staged
tree there, and its pass is bound to the *tree* hash, so `kgit round validate` and `accept`
trust it and do not run the tests again. A commit made with `--no-verify` has no pass and is
gated there by validate. A campaign with a `rebuild_command` is the exception: its hook gates
in the user's work tree, where the user built (rebuilding in the hook would make every commit
wait for a build), and validate gates again in the clean checkout after rebuilding it. The
result is read from the campaign record (kgit/engine/campaign.py): a gate note written by hand
on the notes ref passes nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from kgit.engine.campaign import Campaign, now
from kgit.engine.measuring.isolation.sealed import gate_lib, run_in_gate_world, watched
from kgit.engine.measuring.isolation.world import unpassed_hint
from kgit.engine.measuring.sides.side_trees import measuring_tree
from kgit.engine.user_commands import CommandResult
from kgit.errors import KgitError
from kgit.gitdoor import Repo, open_repo
from kgit.judge.gate_reads import GateReads, gate_reads
from kgit.progress import Say, Voice, phase
from kgit.records.manifest import Manifest
from kgit.records.notes import CLEAN_CHECKOUT, WORK_TREE, GateNote


def say_stderr(message: str) -> None:
    print(f"kgit: {message}", file=sys.stderr, flush=True)


def run_tests(campaign: Campaign, voice: Voice, *, checkout: Path | None = None) -> CommandResult:
    """The test command in CHECKOUT, kgit's clean checkout (default: the user's work tree)."""
    command = campaign.manifest.test_command
    voice.say(f"gate: running `{command}`" + (" in kgit's clean checkout" if checkout else ""))
    folder = checkout or campaign.repo.root
    with watched(campaign, gate_lib(folder), "the gate"), phase("gate"):
        result = run_in_gate_world(campaign, command, folder, echo=voice.echo)
    if not result.ok:
        unpassed = unpassed_hint(campaign.manifest.env)
        if unpassed:
            voice.say(f"gate: {unpassed}")
    return result


def gate_files(repo: Repo, commit: str, manifest: Manifest) -> GateReads:
    """What the gate reads at COMMIT (its tests, folders whole, pytest's configuration and
    conftest.py files), less the harness, which the manifest protects on its own."""
    listed = repo.ls_tree(commit)

    def read(path: str) -> str | None:
        found = repo.read_objects([f"{commit}:{path}"])[0] if path in listed else None
        return found[1].decode(errors="replace") if found else None

    def read_many(paths: Sequence[str]) -> dict[str, str]:
        found = repo.read_objects([f"{commit}:{path}" for path in paths])
        return {p: f[1].decode(errors="replace") for p, f in zip(paths, found, strict=True) if f}

    reads = gate_reads(manifest.test_command, listed, read, manifest.kernel_source, read_many)
    reads.frozen = [p for p in reads.frozen if p not in manifest.protected_paths]
    return reads


def frozen_files(repo: Repo, commit: str, paths: dict[str, str | None]) -> dict[str, bytes]:
    """The bytes of each frozen file at COMMIT, a folder's files one by one (the record keeps a
    copy of what the baseline froze)."""
    listed = repo.ls_tree(commit, [p for p, sha in paths.items() if sha])
    blobs = repo.read_blobs([sha for _mode, sha in listed.values()])
    return {path: blobs[sha] for path, (_mode, sha) in listed.items()}


def record_gate(
    campaign: Campaign, tree: str, result: CommandResult, where: str = WORK_TREE
) -> GateNote:
    note = GateNote(
        campaign=campaign.name,
        passed=result.ok,
        command=campaign.manifest.test_command,
        seconds=round(result.seconds, 3),
        at=now(),
        output_tail=None if result.ok else result.tail[-4000:],
        where=where,
    )
    with campaign.repo.write_lock():
        current = campaign.reload()
        outcome = "passed" if result.ok else "failed"
        current.save(f"gate of tree {tree[:10]} {outcome}", notes=[current.gate_note(tree, note)])
    return note


def gate_failure(result: CommandResult, timeout_s: float) -> KgitError:
    why = "timed out" if result.returncode is None else f"exited {result.returncode}"
    return KgitError(
        f"correctness gate failed: the test command {why} after {result.seconds:.1f} s",
        hint="fix the kernel and commit again; a correctness fix is part of the same round",
        details=result.tail[-4000:],
    )


def ensure_gated(campaign: Campaign, commit: str, voice: Voice) -> GateNote:
    """The gate's pass for COMMIT's tree in kgit's clean checkout of it, running the tests there
    now unless they already passed there (see the module's docstring)."""
    tree = campaign.repo.tree_of(commit)
    note = campaign.read_gate(tree)
    if note is not None and note.passed and note.where == CLEAN_CHECKOUT:
        return note
    if note is None:
        shown = campaign.repo.note_read(campaign.refs.gate_notes, tree)
        voice.say(
            "this tree was never gated by kgit (committed with --no-verify?)"
            + ("; the gate note git shows for it is not one kgit wrote" if shown else "")
            + ": gating it now, in kgit's clean checkout of the commit"
        )
    elif note.where != CLEAN_CHECKOUT:
        outcome = "passed" if note.passed else "failed"
        voice.say(f"gate: {outcome} in your work tree (the hook); now in kgit's clean checkout")
    path = measuring_tree(campaign, commit, "candidate", voice)
    result = run_tests(campaign, voice, checkout=path)
    note = record_gate(campaign, tree, result, CLEAN_CHECKOUT)
    if not result.ok:
        raise gate_failure(result, campaign.manifest.timeout_s)
    return note


def gate_commit_in_progress(repo: Repo, campaign: Campaign, say: Say) -> int:
    """The pre-commit hook's heavy path: gate the staged snapshot. Returns the hook's exit code."""
    tree = repo.write_tree()
    in_work_tree = bool(campaign.manifest.rebuild_command)
    previous = campaign.read_gate(tree)
    if (
        previous is not None
        and previous.passed
        and (in_work_tree or previous.where == CLEAN_CHECKOUT)
    ):
        say(f"gate: this snapshot already passed ({previous.at})")
        return 0
    if in_work_tree:
        with repo.staged_snapshot():
            result = run_tests(campaign, Voice(say, echo=False))
        record_gate(campaign, tree, result)
    else:
        result = _gate_clean_snapshot(repo, campaign, tree, say)
        record_gate(campaign, tree, result, CLEAN_CHECKOUT)
    if result.ok:
        say(f"gate: passed in {result.seconds:.1f} s")
        return 0
    error = gate_failure(result, campaign.manifest.timeout_s)
    print(result.tail[-4000:], file=sys.stderr)
    say(f"{error.message}\nhint: {error.hint} (the commit was blocked)")
    return 1


def _gate_clean_snapshot(repo: Repo, campaign: Campaign, tree: str, say: Say) -> CommandResult:
    """The tests in kgit's clean checkout of TREE, the staged snapshot: a commit object of it
    (unreferenced: git's gc takes it) checked out in the candidate's measuring tree, which the
    round's validation then reuses."""
    # The hook's repository writes through the index git gave it; the checkout must not.
    plain = open_repo(repo.root)
    head = plain.rev_parse("HEAD")
    snapshot = plain.commit_tree(tree, [head] if head else [], "kgit: the snapshot being gated\n")
    ours = Campaign.load(plain, campaign.name)
    voice = Voice(say, echo=False)
    path = measuring_tree(ours, snapshot, "candidate", voice)
    return run_tests(ours, voice, checkout=path)
