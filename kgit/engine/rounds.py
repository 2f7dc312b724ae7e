"""The round lifecycle: start, validate, accept, rollback.

A round is a branch `kgit/<campaign>/round-<N>` cut from the best line's tip. Accept fast-forwards
the best line to the round's commit (same sha); rollback returns to the best line and keeps the
round's commit reachable from `refs/kgit/<campaign>/rounds/<N>` with its notes.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from kgit.engine.campaign import Campaign, now
from kgit.engine.gate import Say, ensure_gated
from kgit.engine.hooks import hooks_missing
from kgit.engine.integrity import impossible, measured_rates, rule11_findings
from kgit.engine.parallel import (
    check_out_in_worktree,
    leave_for_best,
    require_free_worktree,
)
from kgit.engine.passes import (
    HarnessError,
    Measurement,
    best_values,
    device_reasons,
    require_clean,
)
from kgit.engine.recovery import (
    ACCEPT,
    ROLLBACK,
    adoptable_orphan,
    interrupted_close,
    sweep_stray_branches,
)
from kgit.engine.runner import run_command
from kgit.engine.seal import require_unchanged
from kgit.engine.setup import environment
from kgit.engine.trust import require_trusted
from kgit.engine.validation import (
    Outcome,
    Target,
    ran_workers,
    rejudge,
    statistics_dict,
    validate,
)
from kgit.errors import KgitError, UsageError
from kgit.judge.floor import merge_rates
from kgit.judge.scope import outside_kernel_source
from kgit.judge.scoring import diagnostics, geomean, pct
from kgit.judge.verdict import (
    CORRECTNESS,
    IMPOSSIBLE,
    impossible_verdict,
    protected_verdict,
    rule11_verdict,
    scope_verdict,
)
from kgit.records.evidence import Evidence
from kgit.records.names import parse_round_branch
from kgit.records.notes import (
    ACCEPTING,
    ERROR,
    ROLLED_BACK,
    VALIDATED,
    OpenRound,
    RoundNote,
    ShapeResult,
)


def _open_round(campaign: Campaign) -> OpenRound:
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


def _on_round_branch(campaign: Campaign, action: str) -> tuple[OpenRound, str]:
    """The open round and its branch tip; refuses unless that branch is checked out and clean."""
    open_round = _open_round(campaign)
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


def start_round(
    campaign: Campaign, hypothesis: str, reopen: bool = False, worktree: Path | None = None
) -> dict[str, Any]:
    """Open the next round on a branch cut from the best line's tip, checked out here, or with
    WORKTREE in that work tree (created if missing): rounds in work trees of their own may run
    at once, each still one hypothesis and one change."""
    hypothesis = " ".join(hypothesis.split())
    if not hypothesis:
        raise UsageError(
            "a round needs its hypothesis",
            hint='kgit round start "bigger BLOCK_K halves the K loop"',
        )
    state = campaign.state
    if not state.baselined:
        raise KgitError("the campaign has no baseline yet", hint="kgit baseline")
    if state.finished and not reopen:
        raise KgitError(
            f"campaign {campaign.name} is finished",
            hint='start a new campaign, or kgit round start --reopen "HYPOTHESIS" to go on',
        )
    if state.open_round is not None and worktree is None:
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
        parent = current.best_tip()
        branch = current.refs.round_branch(number)
        _claim_round_branch(current, number, parent)
        current.state.next_round = number + 1
        current.state.open_rounds.append(OpenRound(number, hypothesis, parent, now()))
        if current.state.finished:  # --reopen: kgit finish must run again to end it
            current.state.finished = False
            current.state.reopened.append(now())
        current.save(f"round-{number} started: {hypothesis}")
    if worktree is None:
        repo.switch(branch)
    else:
        check_out_in_worktree(campaign, worktree, branch)
    with repo.write_lock():  # after the switch: a stale branch left checked out can go too
        sweep_stray_branches(campaign.reload())
    return {
        "campaign": campaign.name,
        "round": number,
        "branch": branch,
        "worktree": str(worktree or repo.root),
        "parent": parent,
        "hypothesis": hypothesis,
        "gate_installed": not hooks_missing(repo),
        "commit": commit_words(campaign),
    }


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


def _protected_changes(campaign: Campaign, commit: str) -> list[str]:
    now_blobs = campaign.repo.path_blobs(commit, list(campaign.state.protected))
    return [path for path, blob in campaign.state.protected.items() if now_blobs.get(path) != blob]


def _rebuild(campaign: Campaign, say: Say, echo: bool) -> None:
    command = campaign.manifest.rebuild_command
    if not command:
        return
    say(f"rebuild: `{command}`")
    result = run_command(command, campaign.repo.root, campaign.manifest.timeout_s, echo=echo)
    if not result.ok:
        raise KgitError(
            "the rebuild command failed",
            hint="fix the build and commit again",
            details=result.tail[-4000:],
        )


def _shape_results(
    outcome: Outcome,
    best: dict[str, float],
    baseline: dict[str, float],
    labels: list[str],
    plain: dict[str, float],
    impossible_labels: list[str],
) -> list[ShapeResult]:
    failing = set(outcome.evidence.failed)
    deltas = outcome.verdict.shape_deltas

    def check(label: str) -> str:
        return "FAIL" if label in failing else "ERROR" if label in impossible_labels else "PASS"

    return [
        ShapeResult(
            label=label,
            check=check(label),
            value=plain.get(label),
            best=best.get(label),
            delta_pct=deltas.get(label),
            vs_baseline_pct=pct(plain[label], baseline[label])
            if label in plain and label in baseline
            else None,
        )
        for label in labels
    ]


def _plain_means(runs: list[dict[str, float]], labels: list[str]) -> dict[str, float]:
    """Per shape, the mean of the candidate's plain passes (those comparable with the
    baseline's); shapes missing from any run are left out."""
    return {
        label: statistics.fmean(run[label] for run in runs)
        for label in labels
        if runs and all(label in run for run in runs)
    }


def _evidence_path(number: int, tree: str) -> str:
    return f"evidence/round-{number}/{tree}.json"


def _recorded_evidence(campaign: Campaign, number: int, tree: str) -> Evidence | None:
    """The evidence about TREE as kgit recorded it in the campaign record: earlier validations
    of this very tree pool with it, and accept judges from it. Never read from the note, which
    anyone can edit or delete (a deleted note once reset the pooling; forged pairs passed)."""
    found = campaign.repo.read_objects([f"{campaign.record_sha}:{_evidence_path(number, tree)}"])
    return Evidence.from_dict(json.loads(found[0][1])) if found and found[0] else None


def _active_labels(campaign: Campaign, full: bool) -> list[str]:
    active = campaign.manifest.shape_labels if full else campaign.state.representative
    return [label for label in active if label not in campaign.state.inactive]


def validate_round(campaign: Campaign, say: Say, *, full: bool, echo: bool) -> dict[str, Any]:
    require_trusted(campaign, "validate")
    open_round, tip = _on_round_branch(campaign, "validate")
    if tip == open_round.parent:
        raise KgitError(
            f"round-{open_round.number} has no commit yet",
            hint=f"make the change and {commit_words(campaign)}",
        )
    best_tip = campaign.best_tip()
    if not campaign.repo.is_ancestor(best_tip, tip):
        raise stale_base(campaign, open_round, best_tip, "validate")
    _rebuild(campaign, say, echo)
    ensure_gated(campaign, tip, say, echo=echo)
    rounds = campaign.all_rounds()
    best = best_values(rounds)
    baseline = rounds[0][1].values() if rounds else {}
    baseline_blocks = rounds[0][1].statistics.get("block_values", {}) if rounds else {}
    labels = _active_labels(campaign, full)
    tree = campaign.repo.tree_of(tip)
    prior = _recorded_evidence(campaign, open_round.number, tree)
    note = RoundNote(
        campaign=campaign.name,
        round=open_round.number,
        status=VALIDATED,
        hypothesis=open_round.hypothesis,
        metric=campaign.manifest.primary_metric,
        level="full" if full else "quick",
        parent=open_round.parent,
        started_at=open_round.started_at,
        environment=environment(),
        hashes={
            "schema": ",".join(campaign.state.frozen_header or []),
            "protected": dict(campaign.state.protected),
        },
        tree=tree,
    )
    changed = _protected_changes(campaign, tip)
    sources = campaign.manifest.kernel_source
    outside = outside_kernel_source(campaign.repo.changed_paths(best_tip, tip), sources)
    if changed or outside:
        verdict = protected_verdict(changed) if changed else scope_verdict(outside, sources)
        note.decision, note.cause, note.reasons = verdict.decision, verdict.cause, verdict.reasons
        return _record(campaign, tip, note, [], say)
    findings = rule11_findings(campaign.repo, best_tip, tip)
    if findings:  # judged before measuring: no number makes such a gain real
        verdict = rule11_verdict([f.describe() for f in findings])
        note.decision, note.cause, note.reasons = verdict.decision, verdict.cause, verdict.reasons
        note.findings = [f.to_dict() for f in findings]
        return _record(campaign, tip, note, [], say)
    workers = ran_workers(rounds[0][1] if rounds else None)
    target = Target(tip, tree, best_tip, best, labels, "best", workers)
    try:
        outcome = validate(campaign, target, prior, say, echo=echo)
    except HarnessError as exc:
        note.status, note.reasons = ERROR, [exc.message]
        note.harness_tail = (exc.details or "")[-4000:]
        note.evidence = prior.to_dict() if prior else {}  # an error never loses earlier runs
        _record(campaign, tip, note, [], say)
        raise
    over = _floor_check(campaign, outcome)
    if outcome.evidence.mode == "worker":
        # Block figures on both sides: the reference as measured now, the baseline's blocks.
        best = {**best, **outcome.verdict.reference}
        baseline = {label: baseline_blocks[label] for label in labels if label in baseline_blocks}
    _fill_note(note, outcome, best, baseline, labels, over)
    best_devices = [recorded.fingerprint for _, recorded in rounds if recorded.accepted]
    policy = campaign.manifest.decision_policy
    note.reasons += device_reasons(
        note.fingerprint, campaign.state.fingerprint, best_devices, policy
    )
    return _record(campaign, tip, note, outcome.passes, say, outcome.reference_passes)


def _floor_check(campaign: Campaign, outcome: Outcome) -> list[str]:
    """The physical floor over all the candidate showed (pooled evidence included), kept in the
    evidence for accept: a rate past the device's peak rolls the round back as an error of
    measurement, whatever the comparison said. Returns the shapes past the peak."""
    evidence = outcome.evidence
    values = [*evidence.runs, *(pair["b"] for pair in evidence.pairs)]
    rates = measured_rates(outcome.passes, values, campaign.manifest.primary_metric)
    evidence.rates = merge_rates(evidence.rates, rates)
    fingerprint = outcome.passes[0].fingerprint if outcome.passes else None
    reasons, labels = impossible(campaign, evidence.rates, fingerprint)
    if reasons and outcome.verdict.cause != CORRECTNESS:  # Check is the harder gate
        outcome.verdict = impossible_verdict(reasons, outcome.verdict)
    return labels


def _fill_note(
    note: RoundNote,
    outcome: Outcome,
    best: dict[str, float],
    baseline: dict[str, float],
    labels: list[str],
    impossible_labels: list[str],
) -> None:
    verdict, evidence = outcome.verdict, outcome.evidence
    note.decision, note.cause, note.reasons = verdict.decision, verdict.cause, verdict.reasons
    note.evidence = evidence.to_dict()
    note.statistics = statistics_dict(outcome)
    first = outcome.passes[0] if outcome.passes else None
    note.fingerprint = first.fingerprint if first else {}
    note.diagnostics = diagnostics(first.table) if first else {}
    plain = _plain_means(evidence.runs, labels)
    note.best_aggregate = geomean(best[label] for label in labels)
    complete = len(plain) == len(labels) and verdict.cause not in (CORRECTNESS, IMPOSSIBLE)
    if complete:  # a FAIL or impossible shape leaves no aggregate to compare (not a -100%)
        note.aggregate = geomean(plain.values())
        note.delta_vs_best_pct = (
            round(verdict.gain_pct, 4) if verdict.gain_pct is not None else None
        )
    if note.aggregate and all(label in baseline for label in labels):
        base_on_labels = geomean(baseline[label] for label in labels)
        note.baseline_aggregate = base_on_labels
        note.delta_vs_baseline_pct = round(pct(note.aggregate, base_on_labels), 4)
    note.run_aggregates = [
        geomean(run[label] for label in labels)
        for run in evidence.runs
        if all(label in run for label in labels)
    ]
    note.shapes = _shape_results(outcome, best, baseline, labels, plain, impossible_labels)
    note.timings = {"harness_s": evidence.seconds}


def _record(
    campaign: Campaign,
    tip: str,
    note: RoundNote,
    runs: list[Measurement],
    say: Say,
    best_runs: list[Measurement] | None = None,
) -> dict[str, Any]:
    note.validated_at = now()
    repo = campaign.repo
    v = note.evidence.get("validations", 1) if note.evidence else 1
    folder = f"runs/round-{note.round}/validation-{v}"
    extra = {f"{folder}/run-{i}.csv": r.csv for i, r in enumerate(runs[1:], 2)}
    extra |= {f"{folder}/reference-{i}.csv": r.csv for i, r in enumerate(best_runs or [], 1)}
    if note.evidence and note.tree:
        extra[_evidence_path(note.round, note.tree)] = json.dumps(note.evidence).encode()
    with repo.write_lock():
        current = campaign.reload()
        if current.state.open_numbered(note.round) is None:
            raise KgitError(f"round-{note.round} was closed by another kgit process")
        # The evidence accept judges from, the verdict, the CSV and the keep-ref: one
        # transaction, so a kill leaves all of them or none (validate again then pools nothing
        # lost: the earlier evidence is in the record).
        notes = [current.bench_note(tip, runs[0].csv)] if runs else []
        notes.append(current.round_note(tip, note))
        kept = current.refs.kept(note.round)
        current.save(
            f"round-{note.round}: {note.decision or note.status}",
            extra,
            notes,
            [(kept, tip, repo.rev_parse(kept))],
        )
    return {
        "campaign": campaign.name,
        "round": note.round,
        "commit": tip,
        "status": note.status,
        "decision": note.decision,
        "cause": note.cause,
        "reasons": note.reasons,
        "findings": note.findings,
        "aggregate": note.aggregate,
        "delta_vs_best_pct": note.delta_vs_best_pct,
        "delta_vs_baseline_pct": note.delta_vs_baseline_pct,
        "shapes": [vars(s) for s in note.shapes],
        "runs": len(note.evidence.get("runs", [])) or None,
        "pairs": len(note.evidence.get("pairs", [])) or None,
        "validations": note.evidence.get("validations"),
        "mode": note.evidence.get("mode"),
        "tree": note.tree,
    }


def accept_round(
    campaign: Campaign, say: Say, *, echo: bool, words: dict[str, str] | None = None
) -> dict[str, Any]:
    """Accept the open round. Its checks read the record and the best line before taking the
    lock (the gate may run meanwhile), so a second accept of the same round can fail any of
    them once the first has moved the best line; such a refusal says what really happened.
    WORDS: what the user says of the round (attribution, lesson), kept in its note."""
    try:
        return _accept(campaign, say, echo=echo, words=words or {})
    except KgitError as error:
        raise _closed_meanwhile(campaign, error) from None


def _closed_meanwhile(campaign: Campaign, error: KgitError) -> KgitError:
    """ERROR, unless the round it was about was closed by another kgit process meanwhile."""
    try:
        started = _open_round(campaign)
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


def _accept(campaign: Campaign, say: Say, *, echo: bool, words: dict[str, str]) -> dict[str, Any]:
    require_trusted(campaign, "accept (it may run the gate)")
    open_round, tip = _on_round_branch(campaign, "accept")
    if tip == open_round.parent:
        raise KgitError(
            f"round-{open_round.number} has no commit yet: nothing to accept",
            hint=f"change the kernel, {commit_words(campaign)}, then kgit round validate",
        )
    note = campaign.read_round(tip)
    if note is None or note.round != open_round.number:
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
    best_tip = campaign.best_tip()
    interrupted = interrupted_close(open_round, tip, best_tip, note.status)
    if interrupted is None and not campaign.repo.is_ancestor(best_tip, tip):
        raise stale_base(campaign, open_round, best_tip, "accept")
    if interrupted == ROLLBACK:
        raise KgitError(
            f"round-{note.round} is being rolled back (an earlier rollback was interrupted)",
            hint="kgit round rollback finishes it",
        )
    if interrupted == ACCEPT:  # the best line already holds it: only the record is left to do
        return _accept_under_lock(campaign, open_round, tip, say, completing=True, words=words)
    # The decision below comes from the record, never from the notes ref; one that differs is
    # still a reason to stop: someone rewrote the campaign's published record.
    require_unchanged(campaign, ("rounds", "gate"), f"accept round-{note.round}")
    if note.decision not in ACCEPTING:
        raise KgitError(
            f"the verdict of round-{note.round} is {note.decision or note.status}: not accepted",
            hint='kgit round rollback --reason "..." (the commit stays reachable)',
            details="\n".join(note.reasons),
        )
    tree = campaign.repo.tree_of(tip)
    if note.tree != tree:
        raise KgitError(
            f"round-{note.round}'s verdict is about other files than its commit {tip[:10]} holds "
            "(amended or rebased after validate?)",
            hint="kgit round validate measures these files; accept follows its verdict",
        )
    evidence = _recorded_evidence(campaign, note.round, tree)
    expected = _active_labels(campaign, note.level == "full")
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
    recomputed = rejudge(campaign, evidence, best_values(campaign.all_rounds()))
    if not recomputed.accepts:
        raise KgitError(
            f"round-{note.round}'s stored evidence does not support its verdict "
            f"({recomputed.decision}: {'; '.join(recomputed.reasons)})",
            hint="kgit round validate records a verdict from new measurements",
        )
    changed = _protected_changes(campaign, tip)
    if changed:
        raise KgitError(
            f"protected path(s) changed since baseline: {', '.join(changed)}",
            hint="protected-path changes are never accepted; roll the round back",
        )
    _require_real(campaign, note.round, evidence, tip)
    ensure_gated(campaign, tip, say, echo=echo)
    return _accept_under_lock(campaign, open_round, tip, say, words=words)


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


def _require_real(campaign: Campaign, number: int, evidence: Evidence, tip: str) -> None:
    """Accept re-checks, from the record and the commit rather than the note, the physical
    floor of the recorded rates and rule 11 on the round's change."""
    over, _ = impossible(campaign, evidence.rates)
    if over:
        raise KgitError(
            f"round-{number}'s recorded measurements are faster than the device allows",
            hint='kgit round rollback --reason "..." (an impossible rate is never a gain)',
            details="\n".join(over),
        )
    findings = rule11_findings(campaign.repo, evidence.reference, tip)
    if findings:
        raise KgitError(
            f"round-{number} adds {len(findings)} shortcut(s) rule 11 forbids (a gain that "
            "would vanish in a real training step)",
            hint='kgit round rollback --reason "rule 11" (kgit show lists the findings)',
            details="\n".join(f.describe() for f in findings),
        )


def _accept_under_lock(
    campaign: Campaign,
    open_round: OpenRound,
    tip: str,
    say: Say,
    *,
    completing: bool = False,
    words: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Fast-forward the best line to TIP, then record it. The best line moves first: a kill
    after it leaves an interrupted accept that accept and rollback both complete."""
    best_ref, repo = campaign.refs.best, campaign.repo
    with repo.write_lock():
        current = campaign.reload()
        _require_still_open(current, open_round, tip)
        if completing:  # said only now: a concurrent accept that already won looks the same
            say(f"round-{open_round.number}: completing an interrupted accept")
        best_tip = current.best_tip()
        if not repo.is_ancestor(best_tip, tip):  # the compare-and-swap's "old" is not below us
            raise stale_base(current, open_round, best_tip, "accept")
        note = _accepting_note(current, open_round, tip)
        if best_tip != tip:
            repo.update_ref(best_ref, tip, best_tip, f"kgit: accept round-{open_round.number}")
        status = _record_accept(current, open_round, tip, note, words or {})
    _leave_round_branch(campaign, open_round.number)
    say(f"round-{open_round.number} {status}: {best_ref.removeprefix('refs/heads/')} -> {tip[:10]}")
    return {
        "campaign": campaign.name,
        "round": open_round.number,
        "status": status,
        "best": tip,
        "commit": tip,
        "kept_at": campaign.refs.kept(open_round.number),
    }


def _require_still_open(current: Campaign, open_round: OpenRound, tip: str | None) -> None:
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
    _keep_words(note, words)
    _mark(current, open_round.number, tip, note)
    current.state.close_round(open_round.number)
    current.save(f"round-{open_round.number} {note.status}")
    return note.status


def _mark(current: Campaign, number: int, tip: str, note: RoundNote) -> None:
    """Write the closing round's final note and keep its commit (one transaction), before the
    record closes the round: a kill in between leaves the interrupted accept or rollback that
    kgit/engine/recovery.py describes, and the next accept or rollback completes."""
    kept = current.refs.kept(number)
    current.save(
        f"round-{number} marked {note.status}",
        notes=[current.round_note(tip, note)],
        moves=[(kept, tip, current.repo.rev_parse(kept))],
    )


def _keep_words(note: RoundNote, words: dict[str, str]) -> None:
    """What the user said of the round (attribution, lesson) into its NOTE; blank words none."""
    for key in ("attribution", "lesson"):
        text = (words.get(key) or "").strip()
        if text:
            setattr(note, key, text)


def _require_reason(
    campaign: Campaign, open_round: OpenRound, tip: str, reason: str | None
) -> None:
    """The seed's rollback always says why; completing an interrupted one keeps its reason."""
    if reason and reason.strip():
        return
    note = campaign.read_round(tip) if tip != open_round.parent else None
    if note is not None and note.round == open_round.number and note.status == ROLLED_BACK:
        return
    raise KgitError(
        f"a rollback of round-{open_round.number} says why",
        hint='kgit round rollback --reason "ROOT CAUSE; LESSON" (kept in the round\'s note '
        "and the report)",
    )


def rollback_round(
    campaign: Campaign, reason: str | None, say: Say, lesson: str | None = None
) -> dict[str, Any]:
    """Roll the open round back, saying why (REASON: the root cause) and what it taught (LESSON):
    both kept in its note, or in the campaign state for a round that had no commit."""
    open_round = _open_round(campaign)
    repo = campaign.repo
    require_clean(repo, "roll back")
    branch = campaign.refs.round_branch(open_round.number)
    tip = repo.rev_parse(branch) or open_round.parent
    if interrupted_close(open_round, tip, campaign.best_tip(), None) == ACCEPT:
        _undo_interrupted_accept(campaign, open_round, tip, say)
    _require_reason(campaign, open_round, tip, reason)
    with repo.write_lock():
        current = campaign.reload()
        _require_still_open(current, open_round, tip if tip != open_round.parent else None)
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
                    reasons=["rolled back before validation"],
                )
            note.status, note.decided_at = ROLLED_BACK, now()
            note.decision = note.decision or ROLLED_BACK
            if reason is not None or note.rollback_reason is None:  # a completed one keeps it
                note.rollback_reason = reason
            _keep_words(note, {"lesson": lesson or ""})
            _mark(current, open_round.number, tip, note)
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
        current.save(f"round-{open_round.number} ROLLED BACK" + (f": {reason}" if reason else ""))
    _leave_round_branch(campaign, open_round.number)
    say(
        f"round-{open_round.number} ROLLED BACK; back on {campaign.refs.best.removeprefix('refs/heads/')}"
        + (
            f"; its commit {tip[:10]} stays at {campaign.refs.kept(open_round.number)}"
            if tip != open_round.parent
            else " (it had no commit)"
        )
    )
    return {
        "campaign": campaign.name,
        "round": open_round.number,
        "status": ROLLED_BACK,
        "commit": tip if tip != open_round.parent else None,
        "kept_at": campaign.refs.kept(open_round.number) if tip != open_round.parent else None,
    }


def _undo_interrupted_accept(campaign: Campaign, open_round: OpenRound, tip: str, say: Say) -> None:
    """Move the best line back to the round's parent, where an accept killed half-way found it:
    the round was never closed, so nothing can have been built on its commit. A rollback then
    proceeds as usual, and no ROLLED BACK commit is ever left on the best line."""
    repo, best_ref = campaign.repo, campaign.refs.best
    with repo.write_lock():
        current = campaign.reload()
        _require_still_open(current, open_round, tip)
        if current.best_tip() == tip:
            message = f"kgit: rollback of round-{open_round.number} undoes its unfinished accept"
            repo.update_ref(best_ref, open_round.parent, tip, message)
    say(
        f"an accept of round-{open_round.number} was interrupted after it moved the best line: "
        f"{best_ref.removeprefix('refs/heads/')} is back at {open_round.parent[:10]}"
    )


def complete_interrupted(campaign: Campaign, say: Say) -> dict[str, Any]:
    """Finish the open round's accept or rollback that a kill interrupted (kgit doctor --fix)."""
    open_round = _open_round(campaign)
    tip = campaign.repo.rev_parse(campaign.refs.round_branch(open_round.number))
    note = campaign.read_round(tip) if tip is not None else None
    status = note.status if note is not None and note.round == open_round.number else None
    interrupted = interrupted_close(open_round, tip, campaign.best_tip(), status)
    if interrupted == ACCEPT and tip is not None:
        return _accept_under_lock(campaign, open_round, tip, say)
    if interrupted == ROLLBACK:
        return rollback_round(campaign, None, say)
    raise KgitError(
        f"round-{open_round.number} has no interrupted accept or rollback", hint="kgit status"
    )


def _leave_round_branch(campaign: Campaign, number: int) -> None:
    """Leave the round branch and delete it (its commit is kept under refs/kgit/): the main work
    tree checks out the best line; a round's own work tree, where the best line cannot be
    checked out twice, holds its tip detached, ready for the next round."""
    repo, branch = campaign.repo, campaign.refs.round_branch(number)
    leave_for_best(campaign, branch)
    with repo.write_lock():  # another work tree's round start sweeps closed branches too
        tip = repo.rev_parse(branch)
        if tip is not None and branch not in repo.checked_out_branches():
            repo.delete_ref(branch, tip)
