"""`kgit doctor`: find what a killed command, a hand-made ref or a lost note left inconsistent,
explain it, name the one command that repairs it, and apply the repairs that lose nothing.

What kills leave and how commands recover is described in kgit/engine/recovery.py; the doctor
looks at the same states from the outside, plus what only a person can cause or repair (a branch
with unrecorded commits, a best line moved by hand, a gate's saved edits never re-applied, a note
changed after kgit wrote it: kgit/engine/guards/seal.py).
"""

from __future__ import annotations

from collections.abc import Callable

from kgit.engine.campaign import Campaign
from kgit.engine.guards import seal
from kgit.engine.guards.audit_background import audit_progress
from kgit.engine.measuring.sides.trees import (
    MB,
    campaign_folder,
    checkouts_in,
    disk_bytes,
    holder_of,
    remove_campaign_trees,
)
from kgit.engine.note_cache import NoteCache
from kgit.engine.recovery import (
    RoundBranch,
    closed_round_checked_out,
    interrupted_close,
    stray_round_branches,
)
from kgit.errors import KgitError
from kgit.progress import Say
from kgit.records.campaign_results import DoctorFinding
from kgit.records.notes import (
    ACCEPT,
    ACCEPTING,
    FINAL,
    ROLLBACK,
    ROLLED_BACK,
    UNRECORDED,
    OpenRound,
    RoundNote,
)

Finding = DoctorFinding  # its name in this module


def diagnose(campaign: Campaign) -> list[Finding]:
    """Every inconsistency of CAMPAIGN's refs, notes, record and work tree, most urgent first."""
    notes = _notes_by_commit(campaign)
    return [
        *_head_findings(campaign),
        *_open_round_findings(campaign, notes),
        *_branch_findings(campaign),
        *_best_line_findings(campaign, notes),
        *_kept_ref_findings(campaign, notes),
        *_note_findings(campaign),
        *_patch_findings(campaign),
        *_tree_findings(campaign),
        *_audit_findings(campaign),
    ]


def _notes_by_commit(campaign: Campaign) -> dict[str, RoundNote]:
    listing = campaign.recorded("rounds")
    parsed = NoteCache(campaign.repo, campaign.name).parse(listing.values(), with_shapes=False)
    notes = {commit: parsed[blob] for commit, blob in listing.items()}
    return {commit: note for commit, note in notes.items() if note.campaign == campaign.name}


def _short(ref: str) -> str:
    return ref.removeprefix("refs/heads/")


def _head_findings(campaign: Campaign) -> list[Finding]:
    number = closed_round_checked_out(campaign, campaign.repo.current_branch())
    if number is None:
        return []
    return [
        Finding(
            "closed_round_checked_out",
            _short(campaign.refs.round_branch(number)),
            f"HEAD is on round-{number}'s branch but that round is not in progress (an accept "
            "or rollback was killed before it switched away); the hook refuses commits there",
            f"git checkout {_short(campaign.refs.best)}",
            not campaign.repo.dirty_paths(),
        )
    ]


def _open_round_findings(campaign: Campaign, notes: dict[str, RoundNote]) -> list[Finding]:
    return [
        finding
        for open_round in campaign.state.open_rounds
        for finding in _round_in_flight_findings(campaign, open_round, notes)
    ]


def _round_in_flight_findings(
    campaign: Campaign, open_round: OpenRound, notes: dict[str, RoundNote]
) -> list[Finding]:
    branch = campaign.refs.round_branch(open_round.number)
    tip = campaign.repo.rev_parse(branch)
    if tip is None:
        return [
            Finding(
                "open_round_without_branch",
                f"round-{open_round.number}",
                f"round-{open_round.number} is open but its branch {_short(branch)} is gone",
                f"git branch {_short(branch)} {_round_commit(campaign, open_round.number)}",
                True,
            )
        ]
    note = notes.get(tip)
    status = note.status if note is not None and note.round == open_round.number else None
    interrupted = interrupted_close(open_round, tip, campaign.best_tip(), status)
    if interrupted == ACCEPT:
        accepting = note is not None and status is not None and note.decision in ACCEPTING
        return [
            Finding(
                "interrupted_accept",
                f"round-{open_round.number}",
                f"the best line holds round-{open_round.number}'s commit {tip[:10]} but the round "
                "is still open: an accept was killed after it moved the best line"
                + ("" if accepting else ", and the round's verdict no longer accepts it"),
                "kgit round accept" if accepting else "kgit round rollback",
                accepting,
            )
        ]
    if interrupted == ROLLBACK:
        return [
            Finding(
                "interrupted_rollback",
                f"round-{open_round.number}",
                f"round-{open_round.number}'s note says ROLLED BACK but the round is still open: "
                "a rollback was killed half-way",
                "kgit round rollback",
                True,
            )
        ]
    return []


def _round_commit(campaign: Campaign, number: int) -> str:
    """Where an open round's branch belongs: its kept commit, else the round's parent."""
    kept = campaign.repo.rev_parse(campaign.refs.kept(number))
    open_round = campaign.state.open_numbered(number)
    return kept or (open_round.parent if open_round is not None else campaign.best_tip())


def _branch_findings(campaign: Campaign) -> list[Finding]:
    best = campaign.repo.rev_parse(campaign.refs.best)
    return [_branch_finding(campaign, branch, best) for branch in stray_round_branches(campaign)]


def _branch_finding(campaign: Campaign, branch: RoundBranch, best: str | None) -> Finding:
    name = branch.short
    if not branch.kept:
        return Finding(
            "unrecorded_branch",
            name,
            f"{name} holds commits that no round recorded; kgit will not start "
            f"round-{branch.number} over them",
            f"git branch -m {name} salvage/{campaign.name}-round-{branch.number}",
            False,
        )
    if branch.number >= campaign.state.next_round and branch.tip == best:
        return Finding(
            "orphan_branch",
            name,
            f"{name} was created by a `kgit round start` killed before it saved the record "
            "(the next round start adopts it)",
            f"git branch -D {name}",
            True,
        )
    return Finding(
        "stale_branch",
        name,
        f"{name} belongs to a closed round (accept or rollback was killed before it deleted "
        "it); its commit is kept",
        f"git branch -D {name}",
        True,
    )


def _best_line_findings(campaign: Campaign, notes: dict[str, RoundNote]) -> list[Finding]:
    """Every commit of the best line with a round note must be accepted (or the baseline), and
    so must its tip, unless an accept of the open round is half done (reported above)."""
    if not campaign.state.baselined:
        return []
    best = campaign.best_tip()
    line = campaign.repo.rev_list(best, first_parent=True)
    open_tips = {
        campaign.repo.rev_parse(campaign.refs.round_branch(found.number))
        for found in campaign.state.open_rounds
    }
    findings = []
    for index, commit in enumerate(line):
        note = notes.get(commit)
        if note is not None and note.status == ROLLED_BACK:
            kind = "rolled_back_on_best"
            problem = (
                f"round-{note.round}'s commit {commit[:10]} is on the best line but its note "
                "says ROLLED BACK (kgit finish would fold it into the final change)"
            )
        elif index == 0 and (note is None or not note.accepted):
            if commit in open_tips:
                continue  # an interrupted accept, reported (and repaired) with the open round
            what = f"its note says {note.status}" if note is not None else "it has no round note"
            kind = "best_not_accepted"
            problem = (
                f"the best line is at {commit[:10]} but {what}: no accepted round put it there"
            )
        else:
            continue
        below = next((c for c in line[index + 1 :] if c in notes and notes[c].accepted), None)
        repair = (
            f"git update-ref {campaign.refs.best} {below} {best}"
            if below
            else "none: no accepted commit below it; start a new campaign"
        )
        findings.append(Finding(kind, commit, problem, repair, False))
    return findings


def _kept_ref_findings(campaign: Campaign, notes: dict[str, RoundNote]) -> list[Finding]:
    findings = []
    kept = campaign.kept_rounds()
    in_flight = {found.number for found in campaign.state.open_rounds}
    for number, commit in sorted(kept.items()):
        note = notes.get(commit)
        if note is None or note.round != number:
            ref = campaign.refs.kept(number)
            findings.append(
                Finding(
                    "kept_ref_without_note",
                    ref,
                    f"{ref} points at {commit[:10]}, which carries no note of round-{number}",
                    "kgit round validate"
                    if number in in_flight
                    else f"git log -1 --notes={campaign.refs.round_notes} {commit} "
                    "(the note is lost: kgit cannot rebuild it)",
                    False,
                )
            )
    closed: dict[int, list[str]] = {}
    for commit, note in notes.items():
        if note.status in FINAL and note.round not in in_flight:
            closed.setdefault(note.round, []).append(commit)
    for number, commits in sorted(closed.items()):
        if number not in kept and len(commits) == 1:
            ref = campaign.refs.kept(number)
            findings.append(
                Finding(
                    "note_without_kept_ref",
                    ref,
                    f"round-{number} is recorded on {commits[0][:10]} but {ref} is missing "
                    "(git gc may take a rolled-back commit)",
                    f"git update-ref {ref} {commits[0]}",
                    True,
                )
            )
    return findings


def _note_findings(campaign: Campaign) -> list[Finding]:
    """Notes refs that differ from what the campaign record says kgit wrote."""
    if not campaign.sealed:
        return [
            Finding(
                "notes_unsealed",
                campaign.refs.record,
                "the campaign record was written by a kgit that did not keep its notes there: "
                "a note changed by hand cannot be told from kgit's until it does",
                "kgit doctor --fix (records the notes as they are now)",
                True,
            )
        ]
    rounds = seal.round_numbers(campaign)
    return [
        Finding(
            f"note_{drift.how}",
            f"{campaign.refs.notes(drift.kind)} {drift.target}",
            seal.problem(campaign, drift, rounds),
            seal.repair(campaign, drift),
            drift.how != UNRECORDED,
        )
        for drift in seal.drifts(campaign)
    ]


def _patch_findings(campaign: Campaign) -> list[Finding]:
    folder = campaign.repo.kgit_dir() / "patches"
    patches = sorted(folder.glob("*.patch")) if folder.is_dir() else []
    return [
        Finding(
            "saved_patch",
            str(path),
            f"unstaged edits the commit gate set aside were never put back ({path.name}): "
            "`git commit` was killed during the gate",
            f"git apply {path} && rm {path}",
            False,
        )
        for path in patches
    ]


def _tree_findings(campaign: Campaign) -> list[Finding]:
    """A finished campaign's measuring trees left on disk (by a finish that was killed, or by a
    kgit before finishes removed them): disk for nothing, and entries of `git worktree list`.
    Not one another live kgit measures in: its repair, `kgit gc`, leaves that one."""
    repo = campaign.repo
    if not campaign.state.finished:
        return []
    folder = campaign_folder(repo, campaign.name)
    trees = checkouts_in(folder, repo.linked_tree_names() - {repo.linked_tree() or ""})
    trees = [tree for tree in trees if holder_of(tree) is None]  # gc leaves a held one
    if not trees:
        return []
    size = sum(disk_bytes(tree) for tree in trees) / MB
    return [
        Finding(
            "leftover_trees",
            str(folder.relative_to(repo.common_dir.parent)),
            f"the campaign is finished, but {len(trees)} of kgit's measuring trees remain "
            f"({', '.join(tree.name for tree in trees)}: {size:.1f} MB)",
            "kgit gc",
            True,
        )
    ]


def _audit_findings(campaign: Campaign) -> list[Finding]:
    """The baseline's background audit ended without recording anything (a kill, a crash)."""
    state = audit_progress(campaign)
    if state is None or state["running"]:
        return []
    problem = (
        f"the baseline's gate audit (pid {state['pid']}) ended unrecorded; log: {state['log']}"
    )
    return [Finding("interrupted_audit", state.get("commit", ""), problem, state["rerun"], False)]


# -- repairs -------------------------------------------------------------------------------------


def fix(campaign: Campaign, findings: list[Finding], say: Say) -> list[Finding]:
    """Apply the safe repairs, in the order given; returns those applied."""
    done = []
    for finding in findings:
        if not finding.safe:
            continue
        campaign = campaign.reload()
        _REPAIRS[finding.kind](campaign, finding, say)
        done.append(finding)
    return done


def _check_out_best(campaign: Campaign, finding: Finding, say: Say) -> None:
    campaign.repo.switch(campaign.refs.best)


def _delete_branch(campaign: Campaign, finding: Finding, say: Say) -> None:
    ref = f"refs/heads/{finding.subject}"
    with campaign.repo.write_lock():
        current = campaign.reload()
        still = {b.ref: b for b in stray_round_branches(current)}.get(ref)
        if still is None or not still.kept:
            raise KgitError(f"{finding.subject} changed while kgit doctor was repairing it")
        here = current.repo.current_branch() == ref
        if not here and ref in current.repo.checked_out_branches():
            raise KgitError(
                f"{finding.subject} is checked out in another work tree",
                hint=f"there: git checkout {_short(current.refs.best)}; then kgit doctor --fix",
            )
        if here:
            current.repo.switch(current.refs.best)
        current.repo.delete_ref(ref, still.tip)


def _complete_interrupted(campaign: Campaign, finding: Finding, say: Say) -> None:
    from kgit.engine.rounds.rollback import complete_interrupted

    complete_interrupted(campaign, say)


def _keep_round(campaign: Campaign, finding: Finding, say: Say) -> None:
    commit = finding.repair.rsplit(" ", 1)[1]
    with campaign.repo.write_lock():
        campaign.repo.update_ref(finding.subject, commit, None, "kgit doctor: keep the round")


def _restore_branch(campaign: Campaign, finding: Finding, say: Say) -> None:
    _, name, commit = finding.repair.rsplit(" ", 2)
    with campaign.repo.write_lock():
        campaign.repo.update_ref(f"refs/heads/{name}", commit, None, "kgit doctor: round branch")


def _republish(campaign: Campaign, finding: Finding, say: Say) -> None:
    ref, target = finding.subject.split()
    with campaign.repo.write_lock():
        current = campaign.reload()
        found = [
            d
            for d in seal.drifts(current, [ref.rsplit("/", 1)[1]])
            if d.target == target and d.how != UNRECORDED
        ]
        seal.republish(current, found)


def _seal_record(campaign: Campaign, finding: Finding, say: Say) -> None:
    with campaign.repo.write_lock():
        current = campaign.reload()
        if not current.sealed:
            current.save("notes recorded as the notes refs hold them (kgit doctor --fix)")


def _remove_trees(campaign: Campaign, finding: Finding, say: Say) -> None:
    with campaign.repo.write_lock():
        if campaign.reload().state.finished:
            remove_campaign_trees(campaign.repo, campaign.name)


_REPAIRS: dict[str, Callable[[Campaign, Finding, Say], None]] = {
    "leftover_trees": _remove_trees,
    "note_changed": _republish,
    "note_missing": _republish,
    "notes_unsealed": _seal_record,
    "closed_round_checked_out": _check_out_best,
    "orphan_branch": _delete_branch,
    "stale_branch": _delete_branch,
    "interrupted_accept": _complete_interrupted,
    "interrupted_rollback": _complete_interrupted,
    "note_without_kept_ref": _keep_round,
    "open_round_without_branch": _restore_branch,
}
