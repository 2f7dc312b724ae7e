"""The round lifecycle: start, and what validate, accept and rollback share.

A round is a branch `kgit/<campaign>/round-<N>` cut from the best line's tip. Accept fast-forwards
the best line to the round's commit (same sha); rollback returns to the best line and keeps the
round's commit reachable from `refs/kgit/<campaign>/rounds/<N>` with its notes.

Validate: kgit/engine/rounds/validate.py; accept: kgit/engine/rounds/accept.py; rollback and the
completion of an interrupted close: kgit/engine/rounds/rollback.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgit.engine.bestline import require_best_where_recorded
from kgit.engine.campaign import Campaign, now
from kgit.engine.guards.hooks import hooks_missing
from kgit.engine.guards.rule11_scan import rule11_findings
from kgit.engine.guards.trust import require_trusted
from kgit.engine.recovery import adoptable_orphan, sweep_stray_branches
from kgit.engine.rounds.parallel import check_out_in_worktree, leave_for_best, require_free_worktree
from kgit.engine.rounds.preconditions import require_clean
from kgit.errors import KgitError, UsageError
from kgit.judge.judgement import Facts
from kgit.judge.rule11 import Finding
from kgit.judge.scope import in_kernel_source, links_out_of_repo, outside_kernel_source
from kgit.records.evidence import Evidence
from kgit.records.names import parse_round_branch
from kgit.records.notes import CLEAN_CHECKOUT, GateNote, OpenRound, RoundNote
from kgit.records.round_results import RoundStarted


def current_round(campaign: Campaign) -> OpenRound:
    """The round this work tree works on: the one whose branch is checked out here, else the
    only round in flight. With several in flight, each is closed from its own work tree."""
    state = campaign.state
    parsed = parse_round_branch(campaign.repo.current_branch())
    here = state.open_numbered(parsed[1]) if parsed and parsed[0] == campaign.name else None
    if here is not None:
        return here
    if len(state.open_rounds) == 1:
        return state.open_rounds[0]
    if not state.open_rounds:
        raise KgitError(
            f"campaign {campaign.name} has no round in progress",
            hint='kgit round start "HYPOTHESIS" begins one',
        )
    shown = ", ".join(f"round-{found.number}" for found in state.open_rounds)
    raise KgitError(
        f"{len(state.open_rounds)} rounds are in progress ({shown}) and none is checked out here",
        hint="run the command in the round's own work tree (git worktree list shows them)",
    )


def on_round_branch(campaign: Campaign, action: str) -> tuple[OpenRound, str]:
    """The open round and its branch tip; refuses unless that branch is checked out and clean."""
    open_round = current_round(campaign)
    branch = campaign.refs.round_branch(open_round.number)
    current = campaign.repo.current_branch()
    if current != branch:
        where = current.removeprefix("refs/heads/") if current else "a detached HEAD"
        raise KgitError(
            f"cannot {action}: round-{open_round.number} is in progress but {where} is checked out",
            hint=f"git checkout {branch.removeprefix('refs/heads/')}",
        )
    require_clean(campaign.repo, action)
    tip = campaign.repo.rev_parse(branch)
    assert tip is not None
    return open_round, tip


# Called under the write lock with the campaign as re-read there and the new round's number:
# the files to record with the round's start (a shared queue's claim), or a KgitError to start
# nothing.
StartFiles = Callable[[Campaign, int], dict[str, bytes]]


@dataclass(frozen=True)
class RoundAt:
    """Where a round command starts, read once before it takes any lock: the open round, its
    branch's tip (the round's parent while it has no commit) and the best line's tip."""

    open_round: OpenRound
    tip: str
    best_tip: str


def round_at(
    campaign: Campaign, action: str, *, trusted_for: str | None = None, commit_hint: str = ""
) -> RoundAt:
    """The start that validate, accept and rollback share. TRUSTED_FOR: the campaign's commands
    must be approved for this (a command that may run them). COMMIT_HINT: the command judges the
    round's commit, so the round's branch must be checked out and hold one (else refused with
    this hint); without it (rollback) any work tree may close the round, commit or none."""
    if trusted_for is not None:
        require_trusted(campaign, trusted_for)
    if commit_hint:
        open_round, tip = on_round_branch(campaign, action)
        if tip == open_round.parent:
            raise KgitError(
                f"round-{open_round.number} has no commit yet: nothing to {action}",
                hint=commit_hint,
            )
    else:
        open_round = current_round(campaign)
        require_clean(campaign.repo, action)
        branch = campaign.refs.round_branch(open_round.number)
        tip = campaign.repo.rev_parse(branch) or open_round.parent
    # A rollback is a way out whatever the best line holds; what judges or builds on it checks
    # that only kgit moved it.
    best = require_best_where_recorded(campaign) if commit_hint else campaign.best_tip()
    return RoundAt(open_round, tip, best)


def require_on_best(campaign: Campaign, at: RoundAt, action: str) -> None:
    """Refuse to ACTION a round the best line no longer leads to (see `stale_base`)."""
    if not campaign.repo.is_ancestor(at.best_tip, at.tip):
        raise stale_base(campaign, at.open_round, at.best_tip, action)


def start_round(
    campaign: Campaign,
    hypothesis: str,
    reopen: bool = False,
    worktree: Path | None = None,
    with_files: StartFiles | None = None,
) -> RoundStarted:
    """Open the next round on a branch cut from the best line's tip, checked out here, or with
    WORKTREE in that work tree (created if missing): rounds in work trees of their own may run
    at once, each still one hypothesis and one change. WITH_FILES adds files to the record's
    commit of the start (kgit/engine/rounds/shared_hypotheses.py)."""
    hypothesis = " ".join(hypothesis.split())
    if not hypothesis:
        raise UsageError(
            "a round needs its hypothesis",
            hint='kgit round start "bigger BLOCK_K halves the K loop"',
        )
    _require_startable(campaign, reopen=reopen, in_worktree=worktree is not None)
    repo = campaign.repo
    if worktree is None:
        require_clean(repo, "start a round")
    else:
        require_free_worktree(campaign, worktree)
    with repo.write_lock():
        current = campaign.reload()
        if current.state.open_round is not None and worktree is None:
            raise KgitError("another kgit process started a round first", hint="kgit status")
        number = current.state.next_round
        files = with_files(current, number) if with_files is not None else None
        parent = require_best_where_recorded(current)
        branch = current.refs.round_branch(number)
        _claim_round_branch(current, number, parent)
        current.state.next_round = number + 1
        current.state.open_rounds.append(OpenRound(number, hypothesis, parent, now()))
        if current.state.finished:  # --reopen: kgit finish must run again to end it
            current.state.finished = False
            current.state.reopened.append(now())
        current.save(f"round-{number} started: {hypothesis}", extra_files=files)
    if worktree is None:
        repo.switch(branch)
    else:
        check_out_in_worktree(campaign, worktree, branch)
    with repo.write_lock():  # after the switch: a stale branch left checked out can go too
        sweep_stray_branches(campaign.reload())
    return RoundStarted(
        campaign=campaign.name,
        round=number,
        branch=branch,
        worktree=str(worktree or repo.root),
        parent=parent,
        hypothesis=hypothesis,
        gate_installed=not hooks_missing(repo),
        commit=commit_words(campaign),
    )


def _require_startable(campaign: Campaign, *, reopen: bool, in_worktree: bool) -> None:
    """Refuse a round the campaign cannot take now: no baseline, finished (unless REOPEN),
    one already open here (a round IN_WORKTREE runs beside it), or no iteration left."""
    state = campaign.state
    if not state.baselined:
        raise KgitError("the campaign has no baseline yet", hint="kgit baseline")
    if state.finished and not reopen:
        raise KgitError(
            f"campaign {campaign.name} is finished",
            hint='start a new campaign, or kgit round start --reopen "HYPOTHESIS" to go on',
        )
    if state.open_round is not None and not in_worktree:
        raise KgitError(
            f"round-{state.open_round.number} is still in progress: one change at a time",
            hint="kgit status says what it needs next (validate, then accept or rollback); "
            "rounds in parallel each take a work tree of their own (kgit worker, or kgit round "
            "start --worktree PATH)",
        )
    if state.next_round - 1 >= campaign.manifest.max_iterations:
        raise KgitError(
            f"max_iterations ({campaign.manifest.max_iterations}) reached",
            hint="the campaign should end here (kgit report); to go on, raise max_iterations: "
            "kgit manifest edit",
        )


def commit_words(campaign: Campaign) -> str:
    """How a round's change gets committed here: through the gate, or (a clone without kgit's
    hooks) ungated until validate, which gates every commit it measures."""
    if not hooks_missing(campaign.repo):
        return "git commit (the hook gates it)"
    return "git commit (not gated on commit: no commit gate in this clone, kgit hooks install)"


def _claim_round_branch(campaign: Campaign, number: int, parent: str) -> None:
    """Create round NUMBER's branch at PARENT, or adopt the one a `round start` killed before it
    saved the record left there. A branch elsewhere holds commits no round recorded: refused."""
    repo, branch = campaign.repo, campaign.refs.round_branch(number)
    if adoptable_orphan(campaign, number, parent):
        return
    found = repo.rev_parse(branch)
    if found is not None:
        short = branch.removeprefix("refs/heads/")
        raise KgitError(
            f"{short} already exists at {found[:10]}, not at the best line's tip, and no round "
            "recorded it",
            hint=f"keep its commits under another name: git branch -m {short} "
            f"salvage/{campaign.name}-round-{number}; then start the round again",
        )
    repo.update_ref(branch, parent, None, f"kgit: round-{number} started")


def protected_changes(campaign: Campaign, commit: str) -> list[str]:
    now_blobs = campaign.repo.path_blobs(commit, list(campaign.state.protected))
    return [path for path, blob in campaign.state.protected.items() if now_blobs.get(path) != blob]


def failed_gate(campaign: Campaign, commit: str) -> GateNote | None:
    """The gate's failure on COMMIT's tree, as kgit recorded it; None when it passed or never
    ran. validate records it and stops: such a round has a commit and no verdict."""
    note = campaign.read_gate(campaign.repo.tree_of(commit))
    return note if note is not None and not note.passed else None


def gate_failure_words(gate: GateNote) -> str:
    """Where and how the gate failed, for a round's reasons and an accept's refusal."""
    where = " at validate, in kgit's clean checkout" if gate.where == CLEAN_CHECKOUT else ""
    return f"the correctness gate (`{gate.command}`) failed on the round's commit{where}"


def links_out(campaign: Campaign, commit: str, changed: Sequence[str]) -> list[str]:
    """The symbolic links at COMMIT, among the kernel's files and the CHANGED paths, that point
    outside the repository (`path -> target`)."""
    sources = campaign.manifest.kernel_source
    links = campaign.repo.symlinks(commit)
    return links_out_of_repo(
        {p: t for p, t in links.items() if p in changed or in_kernel_source(p, sources)}
    )


def change_facts(campaign: Campaign, reference: str, tip: str) -> tuple[Facts, list[Finding]]:
    """The facts of the change REFERENCE..TIP that kgit/judge/judgement.py judges first, read
    from the commits alone (validate and accept read them alike), and its rule-11 findings as
    the note keeps them."""
    changed = campaign.repo.changed_paths(reference, tip)
    sources = campaign.manifest.kernel_source
    findings = rule11_findings(campaign.repo, reference, tip)
    facts = Facts(
        linked=tuple(links_out(campaign, tip, changed)),
        protected=tuple(protected_changes(campaign, tip)),
        outside=tuple(outside_kernel_source(changed, sources)),
        sources=tuple(sources),
        shortcuts=tuple(f.describe() for f in findings),
    )
    return facts, findings


def evidence_path(number: int, tree: str) -> str:
    return f"evidence/round-{number}/{tree}.json"


def recorded_evidence(campaign: Campaign, number: int, tree: str) -> Evidence | None:
    """The evidence about TREE as kgit recorded it in the campaign record: earlier validations
    of this very tree pool with it, and accept judges from it. Never read from the note, which
    anyone can edit or delete (a deleted note once reset the pooling; forged pairs passed)."""
    found = campaign.repo.read_objects([f"{campaign.record_sha}:{evidence_path(number, tree)}"])
    return Evidence.from_dict(json.loads(found[0][1])) if found and found[0] else None


def active_labels(campaign: Campaign, full: bool) -> list[str]:
    active = campaign.manifest.shape_labels if full else campaign.state.representative
    return [label for label in active if label not in campaign.state.inactive]


def stale_base(campaign: Campaign, open_round: OpenRound, best_tip: str, action: str) -> KgitError:
    """The best line no longer leads to the round: it moved outside this round (another clone's
    accept taken by a pull, a push into this repository, a hand-made update-ref). A verdict
    against the round's base says nothing against the best line as it is: kgit does not
    accept it, and does not rebase by itself (the rebased tree must be gated and measured)."""
    best = campaign.refs.best.removeprefix("refs/heads/")
    return KgitError(
        f"cannot {action} round-{open_round.number}: it started from "
        f"{open_round.parent[:10]}, but the best line is now at {best_tip[:10]}, which the "
        "round does not build on",
        hint=f"on the round's branch: git rebase --onto {best} {open_round.parent[:10]}, then "
        "kgit round validate (it gates the rebased commit and measures it against the best "
        'line as it is); or kgit round rollback --reason "..."',
    )


def require_still_open(current: Campaign, open_round: OpenRound, tip: str | None) -> None:
    """Refuse to close a round that another kgit process closed (and perhaps opened the next one)
    or whose branch moved since this command read it. Callers hold the write lock."""
    if current.state.open_numbered(open_round.number) is None:
        raise KgitError(
            f"round-{open_round.number} was closed by another kgit process",
            hint="kgit status",
        )
    now_tip = current.repo.rev_parse(current.refs.round_branch(open_round.number))
    if tip is not None and now_tip != tip:
        raise KgitError(
            f"round-{open_round.number}'s branch moved while kgit was working on it "
            f"({tip[:10]} -> {(now_tip or 'deleted')[:10]})",
            hint="kgit status, then run the command again",
        )


def mark_round(current: Campaign, number: int, tip: str, note: RoundNote, message: str) -> None:
    """Write the closing round's final note, keep its commit and close the round in the record,
    all in one transaction (one record commit, saved as MESSAGE): a kill leaves the round open
    and unmarked, or closed whole. (A kgit before this wrote the note and closed the round in
    two commits; a kill in between left the interrupted accept or rollback that
    kgit/engine/recovery.py describes, and the next accept or rollback still completes it.)"""
    kept = current.refs.kept(number)
    current.state.close_round(number)
    current.save(
        message,
        notes=[current.round_note(tip, note)],
        moves=[(kept, tip, current.repo.rev_parse(kept))],
    )


def keep_words(note: RoundNote, words: dict[str, str]) -> None:
    """What the user said of the round (attribution, lesson) into its NOTE; blank words none."""
    for key in ("attribution", "lesson"):
        text = (words.get(key) or "").strip()
        if text:
            setattr(note, key, text)


def leave_round_branch(campaign: Campaign, number: int) -> None:
    """Leave the round branch and delete it (its commit is kept under refs/kgit/): the main work
    tree checks out the best line; a round's own work tree, where the best line cannot be
    checked out twice, holds its tip detached, ready for the next round."""
    repo, branch = campaign.repo, campaign.refs.round_branch(number)
    leave_for_best(campaign, branch)
    with repo.write_lock():  # another work tree's round start sweeps closed branches too
        tip = repo.rev_parse(branch)
        if tip is not None and branch not in repo.checked_out_branches():
            repo.delete_ref(branch, tip)
