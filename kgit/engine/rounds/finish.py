"""Final acceptance (`kgit finish`): the seed's acceptance back in the project, enforced.

1. The best line's diff against the campaign base touches only `kernel_source` (anything else is
   listed and must be allowed by the user).
2. The project's full test suite (`acceptance_command`) passes on the best line.
3. Full validation: the quick harness on every target shape, the best line judged against the
   baseline commit measured again now, with the seed's rule (every shape PASS, the aggregate
   improved, no core shape down past the limit); under `decision_policy: interleaved`, A/B pairs
   of the baseline commit and the best line, judged with the rounds' confidence intervals.
   Nothing of 2 and 3 comes from notes or from the rounds' verdicts: a note changed by hand (or
   a record an agent rewrote) cannot make finish accept.
   No shape may run faster than the device allows (the physical floor), and the best line's
   diff may add nothing rule 11 forbids.
4. A branch `kgit/<campaign>/final` ready to merge or open as a pull request: one commit per
   accepted round (several commits of one round squashed), built with commit-tree from the round
   commits' trees, each message carrying the round's hypothesis and result (from its note)
   (kgit/engine/rounds/final_branch.py).
5. The final report in notes `refs/notes/kgit/<campaign>/final` on the best line's tip and in the
   campaign record (`final/report.md`, `final/benchmark.csv`); the campaign marked finished.
6. kgit's measuring trees of the campaign removed (kgit/engine/measuring/sides/trees.py): nothing
   measures a finished campaign again, and `--reopen` checks them out anew.

Checks 1-3 run before anything is written; any failure refuses with every reason listed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgit.engine.bestline import require_best_where_recorded
from kgit.engine.campaign import Campaign, now
from kgit.engine.guards.audit_background import wait_for_audit
from kgit.engine.guards.rule11_scan import rule11_findings
from kgit.engine.guards.seal import drifts, problem
from kgit.engine.guards.trust import require_trusted
from kgit.engine.measuring.harness.passes import (
    HarnessError,
    Measurement,
    check_fingerprint,
    measure,
)
from kgit.engine.measuring.harness.physical_floor import impossible
from kgit.engine.measuring.isolation.sealed import run_in_gate_world
from kgit.engine.measuring.policies.policy import Policy, policy_of
from kgit.engine.measuring.policies.target import Outcome
from kgit.engine.measuring.policies.validation import Target, ran_resident, validate
from kgit.engine.measuring.sides.side_trees import measuring_tree, require_pristine
from kgit.engine.measuring.sides.trees import remove_campaign_trees
from kgit.engine.rounds.final_branch import (
    FinalCommit,
    final_branch,
    final_commits,
    write_final_branch,
)
from kgit.engine.rounds.preconditions import require_clean
from kgit.errors import KgitError
from kgit.judge.figures import figure_dict, measured
from kgit.judge.floor import campaign_floor, pct_of_peak, shape_dtypes
from kgit.judge.judgement import Facts, judge, objections
from kgit.judge.scope import in_kernel_source
from kgit.judge.verdict import CORRECTNESS
from kgit.progress import Voice
from kgit.records.final_results import (
    CampaignFinished,
    DidNotWork,
    FinalAccepted,
    FinalFacts,
    FinalRound,
    FinalSuite,
)
from kgit.records.notes import ACCEPTING, ROLLED_BACK, RoundNote, in_line_order
from kgit.records.status_results import CampaignTarget

Confirm = Callable[[list[str]], bool]

# What finish's output and report say about where its verdict comes from.
INDEPENDENT = (
    "finish re-gated and re-measured from scratch: the suite ran now, the harness measured the "
    "baseline commit and the best line now; no verdict, gate result or figure was read from notes"
)


def final_notes(campaign: Campaign) -> str:
    return campaign.refs.final_notes


@dataclass
class Acceptance:
    """What the checks found; `reasons` empty means accepted."""

    changed: list[str]
    outside: list[str]  # changed paths outside kernel_source, allowed by the user
    suite_command: str
    suite_ok: bool
    suite_seconds: float
    runs: list[Measurement] = field(default_factory=list)
    verdict_reasons: list[str] = field(default_factory=list)
    aggregate: float | None = None
    baseline_aggregate: float | None = None
    gain_pct: float | None = None
    vs_baseline: dict[str, Any] | None = None  # gain_pct as kgit/judge/figures.py spells it
    shapes: list[dict[str, Any]] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    # The output of what failed (the suite's tail, the harness's): the refusal shows it, so a
    # quiet finish (-q streams nothing) still says why.
    details: list[str] = field(default_factory=list)


@dataclass
class Finishing:
    """A final acceptance whose checks passed, not recorded yet. `finished` is the campaign as
    it will be recorded, which its report describes; `data` the acceptance facts."""

    campaign: Campaign
    finished: Campaign
    best: str
    commits: list[FinalCommit]
    runs: list[Measurement]
    data: FinalFacts


def check_finish(
    campaign: Campaign,
    voice: Voice,
    *,
    allow_paths: Sequence[str] = (),
    confirm: Confirm | None = None,
) -> Finishing:
    """Check the campaign's best line for final acceptance, or refuse with every reason.
    Nothing is written: `record_finish` records the accepted line with its report (rendered
    in between by the caller, from views the engine does not import)."""
    require_trusted(campaign, "finish")
    _require_finishable(campaign)
    wait_for_audit(campaign, voice.say)  # the baseline's, in the background: the report shows it
    repo = campaign.repo
    require_clean(repo, "finish")
    best = require_best_where_recorded(campaign)
    if repo.current_branch() != campaign.refs.best:
        repo.switch(campaign.refs.best)
    changed, outside = _check_scope(campaign, best, allow_paths, confirm)
    voice.say(
        f"final acceptance of {campaign.name} at {best[:10]} ({len(changed)} file(s) changed)"
    )
    # Read once: the lock below refuses to record if the best line moved meanwhile. The rounds
    # name the final branch's commits and fill the report; they decide nothing here.
    rounds = campaign.all_rounds(verified=True)
    for drift in drifts(campaign, ("rounds", "bench")):
        voice.say(f"warning: {problem(campaign, drift)}; kgit doctor explains it")
    check = _acceptance(campaign, best, rounds, voice)
    check.changed, check.outside = changed, outside
    if check.reasons:
        raise KgitError(
            f"final acceptance refused: {len(check.reasons)} check(s) failed:\n  "
            + "\n  ".join(check.reasons),
            hint="fix it in a new round (kgit round start), then kgit finish again",
            details="\n".join(check.details) or None,
        )
    line = repo.rev_list(best, first_parent=True)
    commits = final_commits(campaign, best, rounds, line)
    data = report_data(campaign, rounds, check, best, commits, line)
    finished = campaign.reload()  # the report describes the campaign as it will be recorded
    finished.state.finished = True
    return Finishing(campaign, finished, best, commits, check.runs, data)


def record_finish(finishing: Finishing, report: str) -> CampaignFinished:
    """Write the final branch, record REPORT and mark the campaign finished; refused when the
    campaign changed since its checks (the best line moved, or another finish recorded)."""
    best = finishing.best
    with finishing.campaign.repo.write_lock():
        current = finishing.campaign.reload()
        if current.state.finished or current.best_tip() != best:
            raise KgitError("the campaign changed while kgit finish ran", hint="kgit status")
        tip = write_final_branch(current, finishing.commits, best)
        current.state.finished = True
        current.state.finished_at = now()
        current.state.final = {"branch": final_branch(current), "commit": tip, "best": best}
        extra = {"final/report.md": report.encode()}
        extra.update({f"final/benchmark-{i}.csv": r.csv for i, r in enumerate(finishing.runs, 1)})
        current.save("campaign finished", extra, [current.note("final", best, report.encode())])
    # Nothing measures a finished campaign again (a reopened one checks its trees out anew).
    removed = remove_campaign_trees(current.repo, current.name)
    return CampaignFinished.of(finishing.data, final_commit=tip, report=report, **removed)


def _require_finishable(campaign: Campaign) -> None:
    state = campaign.state
    if not state.baselined:
        raise KgitError("the campaign has no baseline yet", hint="kgit baseline")
    if state.finished:
        raise KgitError(
            f"campaign {campaign.name} is already finished",
            hint=f"the branch to merge is kgit/{campaign.name}/final; "
            'kgit round start --reopen "HYPOTHESIS" continues the campaign',
        )
    if state.open_round is not None:
        raise KgitError(
            f"round-{state.open_round.number} is still in progress",
            hint="kgit round accept or kgit round rollback first",
        )


# -- 1. the diff holds only the kernel ------------------------------------------------------------


def _check_scope(
    campaign: Campaign, best: str, allow_paths: Sequence[str], confirm: Confirm | None
) -> tuple[list[str], list[str]]:
    changed = campaign.repo.changed_paths(campaign.state.base, best)
    outside = [p for p in changed if not in_kernel_source(p, campaign.manifest.kernel_source)]
    unconfirmed = [p for p in outside if not in_kernel_source(p, allow_paths)]
    if unconfirmed and not (confirm is not None and confirm(unconfirmed)):
        listed = "\n  ".join(unconfirmed)
        allow = " ".join(f"--allow-path {p}" for p in unconfirmed)
        raise KgitError(
            f"the best line changes {len(unconfirmed)} file(s) outside kernel_source "
            f"({', '.join(campaign.manifest.kernel_source) or 'none declared'}):\n  {listed}",
            hint=f"if they belong in the final change: kgit finish {allow}; otherwise remove "
            "them in a new round",
        )
    return changed, outside


# -- 2 and 3. the full suite and the full validation ---------------------------------------------


def _acceptance(
    campaign: Campaign, best: str, rounds: list[tuple[str, RoundNote]], voice: Voice
) -> Acceptance:
    manifest = campaign.manifest
    root = campaign.repo.root
    reasons: list[str] = []
    if manifest.rebuild_command:
        voice.say(f"rebuild: `{manifest.rebuild_command}`")
        built = run_in_gate_world(campaign, manifest.rebuild_command, root, echo=voice.echo)
        if not built.ok:
            raise KgitError("the rebuild command failed", details=built.tail[-4000:])
    command = manifest.acceptance_command or manifest.test_command
    if not manifest.acceptance_command:
        voice.say(
            "warning: no acceptance_command in the manifest: running test_command as the suite"
        )
    voice.say(f"test suite: `{command}`")
    # In the gate's world: the manifest's `env:` (TRITON_INTERPRET on a CPU) and kgit's PYTHONPATH,
    # as the gate had them, and nothing else of the caller's shell.
    suite = run_in_gate_world(campaign, command, root, echo=voice.echo)
    if not suite.ok:
        why = "timed out" if suite.returncode is None else f"exited {suite.returncode}"
        reasons.append(f"test suite failed: `{command}` {why} after {suite.seconds:.1f} s")
    check = Acceptance([], [], command, suite.ok, round(suite.seconds, 3), reasons=reasons)
    if not suite.ok:
        check.details.append(f"test suite output (last lines):\n{suite.tail[-4000:].rstrip()}")
    # Rule 11 on everything the campaign changed: rounds accepted before the check existed too.
    findings = rule11_findings(campaign.repo, campaign.state.base, best)
    facts = Facts(shortcuts=tuple(f.describe() for f in findings))
    check.reasons += objections(facts)
    _full_validation(campaign, best, rounds, (facts, check), voice)
    return check


def _full_validation(
    campaign: Campaign,
    best: str,
    rounds: list[tuple[str, RoundNote]],
    judged: tuple[Facts, Acceptance],
    voice: Voice,
) -> None:
    """Every active target shape, the best line against the baseline commit, through the
    rounds' own validation path (kgit/engine/measuring/policies/validation.py), judged with the FACTS of
    the campaign's change (kgit/judge/judgement.py) into CHECK. Both sides are measured now: the
    baseline's figures are not taken from its note (nor from anything else a round wrote)."""
    facts, check = judged
    inactive = set(campaign.state.inactive)
    labels = [label for label in campaign.manifest.shape_labels if label not in inactive]
    voice.say(
        f"full validation on all {len(labels)} active target shapes against the baseline commit"
    )
    repo = campaign.repo
    # How the baseline's calibration measured (resident harnesses or passes): read from the record's
    # round-1, it sets how to measure, not what the figures are.
    resident = ran_resident(rounds[0][1] if rounds else None)
    policy = policy_of(campaign.manifest)
    try:
        baseline = _baseline_now(campaign, policy, labels, voice)
        target = Target(
            best, repo.tree_of(best), campaign.state.base, baseline, labels, "baseline", resident
        )
        outcome = validate(campaign, policy, target, None, voice)
    except HarnessError as exc:
        check.reasons.append(f"full validation: {exc.message}")
        check.details += [exc.details] if exc.details else []
        return
    over, _ = impossible(
        campaign, outcome.rates(campaign.manifest.primary_metric), outcome.fingerprint
    )
    judgement = judge(facts, outcome.measured(policy.rule, over))
    # The report shows what the rule says of the measurements; the facts are listed already.
    verdict = judgement.ruled or judgement.verdict
    outcome.verdict, outcome.judgement = verdict, judgement.estimates
    check.runs = outcome.passes
    check.verdict_reasons = verdict.reasons
    if verdict.cause == CORRECTNESS:
        check.reasons += [f"full validation: {r}" for r in verdict.reasons]
        return
    check.reasons += [f"full validation: physical floor: {r}" for r in judgement.over]
    check.aggregate, check.baseline_aggregate = verdict.aggregate, verdict.reference_aggregate
    check.gain_pct = verdict.gain_pct
    _record_figures(campaign, outcome, labels, check)
    # The best line still at the base: nothing to beat, only correctness to hold.
    if best != campaign.state.base and not verdict.accepts:
        check.reasons += [
            f"full validation against the baseline: {r}" for r in check.verdict_reasons
        ]


def _record_figures(
    campaign: Campaign, outcome: Outcome, labels: list[str], check: Acceptance
) -> None:
    """The changes finish measured, as kgit/judge/figures.py spells a change (paired, with the
    interval, under the interleaved policy), and each shape's figures."""
    verdict, judged = outcome.verdict, outcome.judgement
    interval = (judged.aggregate.low, judged.aggregate.high) if judged else None
    check.vs_baseline = figure_dict(measured(verdict.gain_pct, interval))
    estimates = judged.shapes if judged else {}
    metric = campaign.manifest.primary_metric
    floor = campaign_floor(campaign.manifest, campaign.state, outcome.fingerprint)
    dtypes = shape_dtypes(campaign.manifest)
    check.shapes = [
        {
            "label": label,
            "baseline": verdict.reference.get(label),
            "final": verdict.candidate.get(label),
            "delta_pct": verdict.shape_deltas.get(label),
            "vs_baseline": figure_dict(
                measured(
                    verdict.shape_deltas.get(label),
                    (e.low, e.high) if (e := estimates.get(label)) else None,
                )
            ),
            "pct_of_peak": pct_of_peak(
                verdict.candidate.get(label), metric, dtypes.get(label), floor
            ),
        }
        for label in labels
    ]


def _baseline_now(
    campaign: Campaign, policy: Policy, labels: list[str], voice: Voice
) -> dict[str, float]:
    """The baseline commit's figures on LABELS, measured now in kgit's reference work tree, for
    a POLICY that judges against stored figures (the seed's); one that measures the reference
    beside the candidate (the interleaved policy's pairs) needs none."""
    if not policy.stored_reference:
        return {}
    base = campaign.state.base
    path = measuring_tree(campaign, base, "reference", voice)
    frozen = tuple(campaign.state.frozen_header or ())
    shapes = campaign.manifest.shapes_for(labels)
    run = measure(campaign, shapes, frozen, voice, tree=path, role=" (baseline commit)")
    require_pristine(path, "reference")
    check_fingerprint(campaign.state.fingerprint, run.fingerprint)
    if run.score.failing:
        raise HarnessError(
            f"the baseline commit {base[:10]} FAILs {', '.join(run.score.failing)} now",
            hint="the harness or the machine no longer agrees with the baseline",
            details=run.tail[-4000:],
        )
    return dict(run.score.values)


# -- 5. the report's facts ------------------------------------------------------------------------


def report_data(
    campaign: Campaign,
    rounds: list[tuple[str, RoundNote]],
    check: Acceptance,
    best: str,
    commits: list[FinalCommit],
    line: list[str],
) -> FinalFacts:
    from kgit.engine.rounds.keep_tips import tips_for

    m = campaign.manifest
    lessons = [t for t in tips_for(campaign) if t.campaign == campaign.name]
    # The accepted lineage, in the order the best line took the rounds (round-3 may come
    # before round-2 with rounds in parallel), as the final branch's commits are.
    accepted = in_line_order([(c, (c, n)) for c, n in rounds if n.status in ACCEPTING], line)
    return FinalFacts(
        campaign=campaign.name,
        target=CampaignTarget(m.target_op, m.target_backend, m.target_gpu, m.primary_metric),
        base=campaign.state.base,
        best=best,
        aggregate=check.aggregate,
        baseline_aggregate=check.baseline_aggregate,
        gain_pct=check.gain_pct,
        vs_baseline=check.vs_baseline,
        shapes=tuple(check.shapes),
        verdict=tuple(check.verdict_reasons),
        independent_of_notes=INDEPENDENT,
        suite=FinalSuite(check.suite_command, check.suite_ok),
        suite_seconds=check.suite_seconds,
        changed=tuple(check.changed),
        allowed_outside_kernel_source=tuple(check.outside),
        accepted=tuple(FinalAccepted(n.round, n.status, n.hypothesis, c) for c, n in accepted),
        did_not_work=_did_not_work(campaign, rounds),
        lessons=tuple(t.to_dict() for t in lessons),
        final_branch=final_branch(campaign),
        final_notes=final_notes(campaign),
        final_rounds=tuple(FinalRound(f.round, f.source, f.squashed) for f in commits),
    )


def _did_not_work(
    campaign: Campaign, rounds: list[tuple[str, RoundNote]]
) -> tuple[DidNotWork, ...]:
    rows = [
        DidNotWork(n.round, n.hypothesis, n.rollback_reason or "; ".join(n.reasons[:2]))
        for _, n in rounds
        if n.status == ROLLED_BACK
    ]
    rows += [
        DidNotWork(lost["round"], lost["hypothesis"], lost.get("reason") or "")
        for lost in campaign.state.abandoned
    ]
    return tuple(sorted(rows, key=lambda row: row.round))
