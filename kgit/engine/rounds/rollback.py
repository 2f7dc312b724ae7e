"""A round's rollback, which always says why, and the completion of an accept or a rollback that a
kill interrupted (kgit doctor --fix).
"""

from __future__ import annotations

from kgit.engine.campaign import Campaign, now
from kgit.engine.recovery import interrupted_close
from kgit.engine.rounds.accept import accept_under_lock
from kgit.engine.rounds.round import (
    current_round,
    failed_gate,
    gate_failure_words,
    keep_words,
    leave_round_branch,
    mark_round,
    require_still_open,
    round_at,
)
from kgit.errors import KgitError, UsageError
from kgit.progress import Say
from kgit.records.notes import ACCEPT, ROLLBACK, ROLLED_BACK, OpenRound, RoundNote
from kgit.records.round_results import RoundAccepted, RoundRolledBack


def _require_reason(
    campaign: Campaign, open_round: OpenRound, tip: str, reason: str | None
) -> None:
    """The seed's rollback always says why; completing an interrupted one keeps its reason."""
    if reason and reason.strip():
        return
    note = campaign.read_round(tip) if tip != open_round.parent else None
    if note is not None and note.round == open_round.number and note.status == ROLLED_BACK:
        return
    # A usage error (exit 2, as click gives a missing required option): the option is required
    # except to complete an interrupted rollback, which click alone cannot tell.
    raise UsageError(
        f"a rollback of round-{open_round.number} says why: --reason is required",
        hint='kgit round rollback --reason "ROOT CAUSE; LESSON" (kept in the round\'s note '
        "and the report)",
    )


def rollback_round(
    campaign: Campaign, reason: str | None, say: Say, lesson: str | None = None
) -> RoundRolledBack:
    """Roll the open round back, saying why (REASON: the root cause) and what it taught (LESSON):
    both kept in its note, or in the campaign state for a round that had no commit."""
    at = round_at(campaign, "roll back")
    open_round, tip, repo = at.open_round, at.tip, campaign.repo
    if interrupted_close(open_round, tip, at.best_tip, None) == ACCEPT:
        _undo_interrupted_accept(campaign, open_round, tip, say)
    _require_reason(campaign, open_round, tip, reason)
    with repo.write_lock():
        current = campaign.reload()
        require_still_open(current, open_round, tip if tip != open_round.parent else None)
        message = f"round-{open_round.number} ROLLED BACK" + (f": {reason}" if reason else "")
        if tip != open_round.parent:
            note = current.read_round(tip)
            if note is None or note.round != open_round.number:
                note = RoundNote(
                    campaign=current.name,
                    round=open_round.number,
                    status=ROLLED_BACK,
                    hypothesis=open_round.hypothesis,
                    metric=current.manifest.primary_metric,
                    parent=open_round.parent,
                    started_at=open_round.started_at,
                    reasons=[_unmeasured_reason(current, tip)],
                )
            note.status, note.decided_at = ROLLED_BACK, now()
            note.decision = note.decision or ROLLED_BACK
            if reason is not None or note.rollback_reason is None:  # a completed one keeps it
                note.rollback_reason = reason
            keep_words(note, {"lesson": lesson or ""})
            mark_round(current, open_round.number, tip, note, message)
        else:
            current.state.abandoned.append(
                {
                    "round": open_round.number,
                    "hypothesis": open_round.hypothesis,
                    "reason": reason,
                    "at": now(),
                    **({"lesson": lesson.strip()} if lesson and lesson.strip() else {}),
                }
            )
            current.state.close_round(open_round.number)
            current.save(message)
    leave_round_branch(campaign, open_round.number)
    # The result is said once, by the command (kgit/views/commands.py), not also as progress.
    had_commit = tip != open_round.parent
    return RoundRolledBack(
        campaign=campaign.name,
        round=open_round.number,
        status=ROLLED_BACK,
        commit=tip if had_commit else None,
        kept_at=campaign.refs.kept(open_round.number) if had_commit else None,
    )


def _unmeasured_reason(campaign: Campaign, tip: str) -> str:
    """Why a round with a commit and no verdict has nothing measured: its gate failed (validate
    stops there), or it was rolled back before anything ran."""
    gate = failed_gate(campaign, tip)
    if gate is None:
        return "rolled back before validation"
    return f"{gate_failure_words(gate)}: nothing was measured"


def _undo_interrupted_accept(campaign: Campaign, open_round: OpenRound, tip: str, say: Say) -> None:
    """Move the best line back to the round's parent, where an accept killed half-way found it:
    the round was never closed, so nothing can have been built on its commit. A rollback then
    proceeds as usual, and no ROLLED BACK commit is ever left on the best line."""
    repo, best_ref = campaign.repo, campaign.refs.best
    with repo.write_lock():
        current = campaign.reload()
        require_still_open(current, open_round, tip)
        if current.best_tip() == tip:
            message = f"kgit: rollback of round-{open_round.number} undoes its unfinished accept"
            repo.update_ref(best_ref, open_round.parent, tip, message)
    say(
        f"an accept of round-{open_round.number} was interrupted after it moved the best line: "
        f"{best_ref.removeprefix('refs/heads/')} is back at {open_round.parent[:10]}"
    )


def complete_interrupted(campaign: Campaign, say: Say) -> RoundAccepted | RoundRolledBack:
    """Finish the open round's accept or rollback that a kill interrupted (kgit doctor --fix)."""
    open_round = current_round(campaign)
    tip = campaign.repo.rev_parse(campaign.refs.round_branch(open_round.number))
    note = campaign.read_round(tip) if tip is not None else None
    status = note.status if note is not None and note.round == open_round.number else None
    interrupted = interrupted_close(open_round, tip, campaign.best_tip(), status)
    if interrupted == ACCEPT and tip is not None:
        return accept_under_lock(campaign, open_round, tip, say)
    if interrupted == ROLLBACK:
        return rollback_round(campaign, None, say)
    raise KgitError(
        f"round-{open_round.number} has no interrupted accept or rollback", hint="kgit status"
    )
