"""A round's accept: the round's judgement replayed from the record (not the note) and required
to accept (kgit/judge/judgement.py), then the best line fast-forwarded to the round's commit and
the round closed.
"""

from __future__ import annotations

from kgit.engine.campaign import Campaign, now
from kgit.engine.guards.audit_background import wait_for_audit
from kgit.engine.guards.gate import ensure_gated
from kgit.engine.guards.seal import require_unchanged
from kgit.engine.measuring.harness.passes import device_reasons
from kgit.engine.measuring.harness.physical_floor import impossible
from kgit.engine.measuring.policies.policy import policy_named
from kgit.engine.measuring.policies.validation import recorded_measured
from kgit.engine.recovery import interrupted_close
from kgit.engine.rounds.preconditions import best_values
from kgit.engine.rounds.round import (
    active_labels,
    change_facts,
    commit_words,
    current_round,
    failed_gate,
    gate_failure_words,
    keep_words,
    leave_round_branch,
    mark_round,
    recorded_evidence,
    require_on_best,
    require_still_open,
    round_at,
    stale_base,
)
from kgit.engine.sharing.follow import follow_branch
from kgit.errors import KgitError
from kgit.judge.judgement import Judgement, judge
from kgit.judge.verdict import IMPOSSIBLE, LINK_OUT, OUTSIDE_SCOPE, PROTECTED, RULE_11
from kgit.progress import Say, Voice
from kgit.records.evidence import Evidence
from kgit.records.notes import ACCEPT, ACCEPTING, ROLLBACK, OpenRound, RoundNote
from kgit.records.round_results import RoundAccepted


def accept_round(
    campaign: Campaign, voice: Voice, *, words: dict[str, str] | None = None
) -> RoundAccepted:
    """Accept the open round. Its checks read the record and the best line before taking the
    lock (the gate may run meanwhile), so a second accept of the same round can fail any of
    them once the first has moved the best line; such a refusal says what really happened.
    WORDS: what the user says of the round (attribution, lesson), kept in its note."""
    wait_for_audit(campaign, voice.say)  # the baseline's, in the background: its result comes first
    try:
        return _accept(campaign, voice, words=words or {})
    except KgitError as error:
        raise _closed_meanwhile(campaign, error) from None


def _closed_meanwhile(campaign: Campaign, error: KgitError) -> KgitError:
    """ERROR, unless the round it was about was closed by another kgit process meanwhile."""
    try:
        started = current_round(campaign)
    except KgitError:
        return error
    with campaign.repo.write_lock():  # a winning accept is seen whole: best line and record
        still_open = campaign.reload().state.open_numbered(started.number)
    if still_open is not None:
        return error
    return KgitError(
        f"round-{started.number} was closed by another kgit process while this accept checked it",
        hint="kgit status; kgit log shows how it ended",
        details=f"(this accept had found: {error.message})",
    )


def _accept(campaign: Campaign, voice: Voice, *, words: dict[str, str]) -> RoundAccepted:
    hint = f"change the kernel, {commit_words(campaign)}, then kgit round validate"
    at = round_at(campaign, "accept", trusted_for="accept (it may run the gate)", commit_hint=hint)
    open_round, tip = at.open_round, at.tip
    note = _recorded_note(campaign, open_round, tip)
    interrupted = interrupted_close(open_round, tip, at.best_tip, note.status)
    if interrupted is None:
        require_on_best(campaign, at, "accept")
    if interrupted == ROLLBACK:
        raise KgitError(
            f"round-{note.round} is being rolled back (an earlier rollback was interrupted)",
            hint="kgit round rollback finishes it",
        )
    if interrupted == ACCEPT:  # the best line already holds it: only the record is left to do
        return accept_under_lock(campaign, open_round, tip, voice.say, completing=True, words=words)
    # The decision below comes from the record, never from the notes ref; one that differs is
    # still a reason to stop: someone rewrote the campaign's published record.
    require_unchanged(campaign, ("rounds", "gate"), f"accept round-{note.round}")
    if note.decision not in ACCEPTING:
        raise KgitError(
            f"the verdict of round-{note.round} is {note.decision or note.status}: not accepted",
            hint='kgit round rollback --reason "..." (the commit stays reachable)',
            details="\n".join(note.reasons),
        )
    _require_judged_accepting(campaign, note, _recorded_evidence(campaign, note, tip), tip)
    ensure_gated(campaign, tip, voice)
    return accept_under_lock(campaign, open_round, tip, voice.say, words=words)


def _recorded_note(campaign: Campaign, open_round: OpenRound, tip: str) -> RoundNote:
    """The round's note on TIP as kgit recorded it; a note that only the notes ref shows (copied
    by an amend or a rebase, or written by hand) is none."""
    note = campaign.read_round(tip)
    if note is not None and note.round == open_round.number:
        return note
    gate = failed_gate(campaign, tip)
    if gate is not None:
        raise KgitError(
            f"round-{open_round.number} has no verdict: {gate_failure_words(gate)}, so nothing "
            "was measured",
            hint=f"fix the kernel, {commit_words(campaign)}, then kgit round validate; or "
            'kgit round rollback --reason "..."',
            details=gate.output_tail,
        )
    shown = note is None and campaign.repo.note_read(campaign.refs.round_notes, tip)
    raise KgitError(
        f"round-{open_round.number}'s commit {tip[:10]} has no verdict kgit recorded"
        + (
            ": the note git shows on it was copied there (an amend or a rebase after "
            "validate) or written by hand, and a verdict about other files than its commit "
            "holds counts for nothing"
            if shown
            else ""
        ),
        hint="kgit round validate (after the last commit)",
    )


def _recorded_evidence(campaign: Campaign, note: RoundNote, tip: str) -> Evidence:
    """The evidence recorded about TIP's files on the round's active shapes, measured against
    the best line's tip."""
    tree = campaign.repo.tree_of(tip)
    if note.tree != tree:
        raise KgitError(
            f"round-{note.round}'s verdict is about other files than its commit {tip[:10]} holds "
            "(amended or rebased after validate?)",
            hint="kgit round validate measures these files; accept follows its verdict",
        )
    evidence = recorded_evidence(campaign, note.round, tree)
    expected = active_labels(campaign, note.level == "full")
    if evidence is None or evidence.tree != tree or evidence.labels != expected:
        raise KgitError(
            f"round-{note.round} has no recorded evidence about its commit's files on its "
            "active shapes",
            hint="kgit round validate (accept judges from what kgit recorded, not from the note)",
        )
    if evidence.reference != campaign.best_tip():
        raise KgitError(
            f"round-{note.round} was measured against {evidence.reference[:10]}, not the best "
            "line's tip",
            hint="kgit round validate measures it against the best line as it is",
        )
    return evidence


def replayed(campaign: Campaign, note: RoundNote, evidence: Evidence | None, tip: str) -> Judgement:
    """The round's judgement replayed from the record: the facts of its commit against the
    reference the EVIDENCE was measured against (the best line's tip when nothing was measured),
    the evidence judged against the best line's values, the physical floor of its recorded rates
    and the device NOTE recorded."""
    reference = evidence.reference if evidence is not None else campaign.best_tip()
    facts, _ = change_facts(campaign, reference, tip)
    if evidence is None:
        return judge(facts)
    rounds = campaign.all_rounds(verified=True)
    line = campaign.repo.rev_list(reference, first_parent=True)
    over, _ = impossible(campaign, evidence.rates, note.fingerprint or None)
    policy = policy_named(evidence.policy)
    best_devices = [recorded.fingerprint for _, recorded in rounds if recorded.accepted]
    devices = device_reasons(
        note.fingerprint, campaign.state.fingerprint, best_devices, policy.stored_reference
    )
    measured = recorded_measured(campaign, evidence, best_values(rounds, line), over, devices)
    return judge(facts, measured)


def _require_judged_accepting(
    campaign: Campaign, note: RoundNote, evidence: Evidence, tip: str
) -> None:
    """The judgement replayed from the record must accept; what refuses it says why."""
    judgement = replayed(campaign, note, evidence, tip)
    if judgement.accepts:
        return
    verdict = judgement.verdict
    message, hint = _REFUSALS.get(verdict.cause, _UNSUPPORTED)
    raise KgitError(
        message.format(
            n=note.round,
            count=len(verdict.reasons),
            decision=verdict.decision,
            why="; ".join(verdict.reasons),
        ),
        hint=hint,
        details="\n".join(verdict.reasons),
    )


# Why accept refuses, by the cause of the replayed verdict (kgit/judge/verdict.py).
_UNSUPPORTED = (
    "round-{n}'s stored evidence does not support its verdict ({decision}: {why})",
    "kgit round validate records a verdict from new measurements",
)
_REFUSALS = {
    PROTECTED: (
        "round-{n}: {why}",
        "protected-path changes are never accepted; roll the round back",
    ),
    LINK_OUT: (
        "round-{n}: {why}",
        "the code a round measures must be in git: commit the file itself, then validate",
    ),
    OUTSIDE_SCOPE: (
        "round-{n}: {why}",
        'kgit round rollback --reason "..." (declare them in kernel_source if they are kernel)',
    ),
    RULE_11: (
        "round-{n} adds {count} training shortcut(s) or tampering (a gain that would vanish in "
        "a real training step)",
        'kgit round rollback --reason "training shortcut" (kgit show lists the findings)',
    ),
    IMPOSSIBLE: (
        "round-{n}'s recorded measurements are faster than the device allows",
        'kgit round rollback --reason "..." (an impossible rate is never a gain)',
    ),
}


def accept_under_lock(
    campaign: Campaign,
    open_round: OpenRound,
    tip: str,
    say: Say,
    *,
    completing: bool = False,
    words: dict[str, str] | None = None,
) -> RoundAccepted:
    """Fast-forward the best line to TIP, then record it. The best line moves first: a kill
    after it leaves an interrupted accept that accept and rollback both complete."""
    best_ref, repo = campaign.refs.best, campaign.repo
    with repo.write_lock():
        current = campaign.reload()
        require_still_open(current, open_round, tip)
        if completing:  # said only now: a concurrent accept that already won looks the same
            say(f"round-{open_round.number}: completing an interrupted accept")
        best_tip = current.best_tip()
        if not repo.is_ancestor(best_tip, tip):  # the compare-and-swap's "old" is not below us
            raise stale_base(current, open_round, best_tip, "accept")
        note = _accepting_note(current, open_round, tip)
        if best_tip != tip:
            repo.update_ref(best_ref, tip, best_tip, f"kgit: accept round-{open_round.number}")
        status = _record_accept(current, open_round, tip, note, words or {})
        # Under the lock, so that a later accept finds the trees that follow at this tip. A
        # completed accept's move was interrupted before the trees followed it from the parent.
        old = best_tip if best_tip != tip else open_round.parent
        trees = follow_branch(repo, best_ref, old, tip, say)
    leave_round_branch(campaign, open_round.number)
    # The result is said once, by the command (kgit/views/commands.py), not also as progress.
    return RoundAccepted(
        campaign=campaign.name,
        round=open_round.number,
        status=status,
        best=tip,
        commit=tip,
        kept_at=campaign.refs.kept(open_round.number),
        work_trees=tuple(trees),
    )


def _accepting_note(current: Campaign, open_round: OpenRound, tip: str) -> RoundNote:
    """The note of TIP as read under the lock: it must still hold an accepting verdict of the
    round (a validation may have run again since the command read it)."""
    note = current.read_round(tip)
    if note is None or note.round != open_round.number or note.decision not in ACCEPTING:
        raise KgitError(
            f"no accepting verdict of round-{open_round.number} is recorded on its commit "
            f"{tip[:10]} (any more)",
            hint='kgit status; kgit round rollback --reason "..." if the verdict says so',
        )
    return note


def _record_accept(
    current: Campaign, open_round: OpenRound, tip: str, note: RoundNote, words: dict[str, str]
) -> str:
    """Mark TIP's NOTE accepted with WORDS (attribution, lesson), keep the commit, close the
    round. Returns the status."""
    assert note.decision is not None  # _accepting_note checked it
    if note.status not in ACCEPTING:  # an accept completed again keeps its first time
        note.status, note.decided_at = note.decision, now()
    keep_words(note, words)
    mark_round(current, open_round.number, tip, note, f"round-{open_round.number} {note.status}")
    return note.status
