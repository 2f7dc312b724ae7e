"""A round's validation: the change's own checks (protected paths, scope, rule 11), then the
measurement and its verdict, recorded as the round's note and evidence in one transaction.
"""

from __future__ import annotations

import json
import statistics

from kgit.engine.campaign import Campaign, now
from kgit.engine.guards.gate import ensure_gated
from kgit.engine.measuring.device.pyenv import environment
from kgit.engine.measuring.harness.passes import HarnessError, Measurement, device_reasons
from kgit.engine.measuring.harness.physical_floor import impossible
from kgit.engine.measuring.isolation.sealed import run_in_gate_world
from kgit.engine.measuring.policies.policy import policy_of
from kgit.engine.measuring.policies.target import Outcome, Target, ran_resident, statistics_dict
from kgit.engine.measuring.policies.validation import validate
from kgit.engine.rounds.preconditions import best_values
from kgit.engine.rounds.round import (
    active_labels,
    change_facts,
    commit_words,
    evidence_path,
    recorded_evidence,
    require_on_best,
    round_at,
)
from kgit.errors import KgitError
from kgit.judge.floor import merge_rates
from kgit.judge.judgement import Facts, judge
from kgit.judge.scoring import diagnostics, geomean, pct
from kgit.judge.verdict import CORRECTNESS, IMPOSSIBLE, RULE_11
from kgit.progress import Say, Voice
from kgit.records.evidence import RESIDENT_MODE
from kgit.records.notes import ERROR, VALIDATED, OpenRound, RoundNote, ShapeResult
from kgit.records.round_results import RoundVerdict


def _rebuild(campaign: Campaign, voice: Voice) -> None:
    command = campaign.manifest.rebuild_command
    if not command:
        return
    voice.say(f"rebuild: `{command}`")
    # In the gate's world, as finish runs it: the manifest's `env:`, not the caller's shell.
    result = run_in_gate_world(campaign, command, campaign.repo.root, echo=voice.echo)
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


def validate_round(campaign: Campaign, voice: Voice, *, full: bool) -> RoundVerdict:
    hint = f"make the change and {commit_words(campaign)}"
    at = round_at(campaign, "validate", trusted_for="validate", commit_hint=hint)
    require_on_best(campaign, at, "validate")
    open_round, tip, best_tip = at.open_round, at.tip, at.best_tip
    facts, findings = change_facts(campaign, best_tip, tip)
    # Judged before the gate runs: through a link out of the repository the gate would test
    # code git does not hold, and in kgit's clean checkout the link may point at nothing.
    if not facts.linked:
        _rebuild(campaign, voice)
        ensure_gated(campaign, tip, voice)
    tree = campaign.repo.tree_of(tip)
    note = _new_note(campaign, open_round, full, tree)
    judgement = judge(facts)  # the change's files alone may decide: then nothing is measured
    if not judgement.needs_measuring:
        verdict = judgement.verdict
        note.decision, note.cause, note.reasons = verdict.decision, verdict.cause, verdict.reasons
        if verdict.cause == RULE_11:
            note.findings = [f.to_dict() for f in findings]
        return _record(campaign, tip, note, [], voice.say)
    return _measured(campaign, note, (tip, tree), facts, best_tip, voice)


def _new_note(campaign: Campaign, open_round: OpenRound, full: bool, tree: str) -> RoundNote:
    return RoundNote(
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


def _measured(
    campaign: Campaign,
    note: RoundNote,
    commit: tuple[str, str],
    facts: Facts,
    best_tip: str,
    voice: Voice,
) -> RoundVerdict:
    """The round's COMMIT (its sha and tree) measured against the best line and judged under
    the campaign's policy, the change's FACTS judged with it; NOTE recorded with the verdict and
    its evidence."""
    tip, tree = commit
    rounds = campaign.all_rounds(verified=True)
    best = best_values(rounds, campaign.repo.rev_list(best_tip, first_parent=True))
    baseline = rounds[0][1].values() if rounds else {}
    baseline_blocks = rounds[0][1].statistics.get("block_values", {}) if rounds else {}
    labels = active_labels(campaign, note.level == "full")
    prior = recorded_evidence(campaign, note.round, tree)
    policy = policy_of(campaign.manifest)
    resident = ran_resident(rounds[0][1] if rounds else None)
    target = Target(tip, tree, best_tip, best, labels, "best", resident)
    try:
        outcome = validate(campaign, policy, target, prior, voice)
    except HarnessError as exc:
        note.status, note.reasons = ERROR, [exc.message]
        note.harness_tail = (exc.details or "")[-4000:]
        note.evidence = prior.to_dict() if prior else {}  # an error never loses earlier runs
        _record(campaign, tip, note, [], voice.say)
        raise
    over, impossible_labels = _floor_check(campaign, outcome)
    best_devices = [recorded.fingerprint for _, recorded in rounds if recorded.accepted]
    devices = device_reasons(
        outcome.fingerprint or {}, campaign.state.fingerprint, best_devices, policy.stored_reference
    )
    outcome.take(judge(facts, outcome.measured(policy.rule, over, devices)))
    if outcome.evidence.mode == RESIDENT_MODE:
        # Block figures on both sides: the reference as measured now, the baseline's blocks.
        best = {**best, **outcome.verdict.reference}
        baseline = {label: baseline_blocks[label] for label in labels if label in baseline_blocks}
    _fill_note(note, outcome, best, baseline, labels, impossible_labels)
    note.statistics = statistics_dict(outcome, policy.statistics(outcome.evidence))
    return _record(campaign, tip, note, outcome.passes, voice.say, outcome.reference_passes)


def _floor_check(campaign: Campaign, outcome: Outcome) -> tuple[list[str], list[str]]:
    """The physical floor over all the candidate showed (pooled evidence included), kept in the
    evidence for accept: (the reasons a rate is past the device's peak, those shapes)."""
    evidence = outcome.evidence
    evidence.rates = merge_rates(evidence.rates, outcome.rates(campaign.manifest.primary_metric))
    return impossible(campaign, evidence.rates, outcome.fingerprint)


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
) -> RoundVerdict:
    note.validated_at = now()
    repo = campaign.repo
    v = note.evidence.get("validations", 1) if note.evidence else 1
    folder = f"runs/round-{note.round}/validation-{v}"
    extra = {f"{folder}/run-{i}.csv": r.csv for i, r in enumerate(runs[1:], 2)}
    extra |= {f"{folder}/reference-{i}.csv": r.csv for i, r in enumerate(best_runs or [], 1)}
    if note.evidence and note.tree:
        extra[evidence_path(note.round, note.tree)] = json.dumps(note.evidence).encode()
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
    return RoundVerdict(
        campaign=campaign.name,
        round=note.round,
        commit=tip,
        status=note.status,
        decision=note.decision,
        cause=note.cause,
        reasons=tuple(note.reasons),
        findings=tuple(note.findings),
        aggregate=note.aggregate,
        delta_vs_best_pct=note.delta_vs_best_pct,
        delta_vs_baseline_pct=note.delta_vs_baseline_pct,
        shapes=tuple(note.shapes),
        runs=len(note.evidence.get("runs", [])) or None,
        pairs=len(note.evidence.get("pairs", [])) or None,
        validations=note.evidence.get("validations"),
        mode=note.evidence.get("mode"),
        tree=note.tree,
    )
