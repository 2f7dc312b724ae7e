"""Where a campaign stands, as `kgit status` reports it: the lineage's counts, the round in
flight, what a killed command left, and the next step. Data only (the `--json` output); the text
is kgit/views/status_log.py's."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kgit.engine.bestline import best_line, restore_command
from kgit.engine.campaign import Campaign
from kgit.engine.guards.audit_background import audit_progress
from kgit.engine.guards.hooks import hooks_missing
from kgit.engine.guards.trust import trust_of
from kgit.engine.lineage import lineage
from kgit.engine.recovery import (
    Branches,
    closed_round_checked_out,
    interrupted_close,
    round_branches,
    stray_round_branches,
)
from kgit.judge.escalation import consecutive_rollbacks, escalation, stagnation_review_due
from kgit.records.lineage_results import LineageRow
from kgit.records.names import parse_round_branch
from kgit.records.notes import ACCEPT, ACCEPTING, KEPT, ROLLBACK, ROLLED_BACK, OpenRound
from kgit.records.status_results import (
    BestLine,
    BestMoved,
    CampaignStatus,
    CampaignTarget,
    OpenRoundState,
)


def status_data(campaign: Campaign, branch: str | None) -> CampaignStatus:
    rows = lineage(campaign)
    recorded = [row for row in rows if row.commit]
    best_tip = campaign.best_at_load or campaign.best_tip()
    best_row = next((row for row in recorded if row.commit == best_tip), None)
    statuses = [row.status for row in rows]
    manifest, metric = campaign.manifest, campaign.manifest.primary_metric
    branches = round_branches(campaign)  # the open round's and the strays, in one git process
    data = CampaignStatus(
        campaign=campaign.name,
        target=CampaignTarget(
            manifest.target_op, manifest.target_backend, manifest.target_gpu, metric
        ),
        branch=branch,
        baselined=campaign.state.baselined,
        finished=campaign.state.finished,
        best=_best(campaign, best_tip, best_row),
        baseline_aggregate=recorded[0].aggregate if recorded else None,
        rounds_recorded=len(statuses),
        accepted=sum(status in ACCEPTING for status in statuses),
        rolled_back=statuses.count(ROLLED_BACK),
        next_round=campaign.state.next_round,
        max_iterations=manifest.max_iterations,
        representative_shapes=tuple(campaign.state.representative),
        open_round=_open_round(campaign, branch, recorded, best_tip, branches),
        # Every round in flight (several at once when each has its own work tree).
        rounds_in_flight=tuple(found.number for found in campaign.state.open_rounds),
        **_stall(campaign, statuses),
        **_left_to_repair(campaign, branch, rows, branches),
        best_moved=_best_moved(campaign, best_tip, recorded),
    )
    return replace(data, next_step=next_step(data))


def _best(campaign: Campaign, best_tip: str, row: LineageRow | None) -> BestLine:
    if row is None:
        return BestLine(campaign.refs.best, best_tip, None, None, None)
    return BestLine(campaign.refs.best, best_tip, row.round, row.aggregate, row.vs_baseline)


def _best_moved(campaign: Campaign, best_tip: str, recorded: list[LineageRow]) -> BestMoved | None:
    """Where the record puts the best line when something else moved it (None: where it is),
    from the RECORDED rows' accepted rounds."""
    kept = {row.commit: row.round for row in recorded if row.commit and row.status in KEPT}
    line = best_line(campaign, best_tip, kept)
    if not line.moved:
        return None
    return BestMoved(line.tip, line.recorded, line.round, restore_command(campaign, line))


def _stall(campaign: Campaign, statuses: list[str]) -> dict[str, Any]:
    """The rollbacks in a row, and what they call for: a finished campaign has no next round to
    review or escalate."""
    stall = consecutive_rollbacks(statuses)
    return {
        "consecutive_rollbacks": stall,
        "stagnation_review_due": stagnation_review_due(stall) and not campaign.state.finished,
        "escalation": None if campaign.state.finished else escalation(stall),
    }


def _left_to_repair(
    campaign: Campaign, branch: str | None, rows: list[LineageRow], branches: Branches
) -> dict[str, Any]:
    """What a killed command, a clone or someone else's hand left for the user to set right."""
    return {
        # A closed round's branch still checked out (a kill at the end of accept or rollback).
        "closed_round_checked_out": closed_round_checked_out(campaign, branch),
        # Round branches no open round owns (kgit doctor explains each).
        "stray_branches": tuple(b.short for b in stray_round_branches(campaign, branches)),
        # Unstaged edits the commit gate set aside and could not put back (a killed commit).
        "saved_patches": tuple(saved_patches(campaign)),
        # Whether this repository approves the manifest's commands (kgit/engine/guards/trust.py).
        "trusted": trust_of(campaign).trusted,
        # Whether kgit's commit gate is installed in this clone (a clone gets no hooks).
        "gate_installed": not hooks_missing(campaign.repo),
        # Rounds whose note on the notes ref differs from what kgit recorded (kgit doctor).
        "notes_changed": tuple(row.round for row in rows if row.note),
        # The latest gate audit's counts and survivors (kgit gate audit), None before any.
        "gate_audit": _gate_audit(campaign),
        # The baseline's audit still running in the background, or interrupted (with the
        # command that runs it again); None otherwise (kgit/engine/guards/audit_background.py).
        "gate_audit_background": audit_progress(campaign),
    }


def _open_round(
    campaign: Campaign,
    branch: str | None,
    recorded: list[LineageRow],
    best_tip: str,
    branches: Branches,
) -> OpenRoundState | None:
    """This work tree's round (the one whose branch BRANCH is), else the oldest in flight: its
    commit, verdict and gate, and whether a kill interrupted its accept or rollback (its tip and
    tree as BRANCHES, the campaign's round branches, list them)."""
    parsed = parse_round_branch(branch)
    here = (
        campaign.state.open_numbered(parsed[1]) if parsed and parsed[0] == campaign.name else None
    )
    open_round = here or campaign.state.open_round
    if not open_round:
        return None
    _ref, tip, tree = branches.get(open_round.number, (None, None, None))
    has_commit = tip is not None and tip != open_round.parent
    # The round's own verdict: with no commit yet the tip is the best line's commit, whose
    # row is an earlier round's.
    row = next((r for r in recorded if r.commit == tip and r.round == open_round.number), None)
    gate = campaign.read_gate(tree) if has_commit and tree else None
    return OpenRoundState(
        round=open_round.number,
        tip=tip,
        hypothesis=open_round.hypothesis,
        branch=campaign.refs.round_branch(open_round.number),
        has_commit=has_commit,
        branch_missing=tip is None,
        verdict=row.decision if row else None,
        # The commit gate's result on the tip's tree: None when never gated (--no-verify).
        gate=None if gate is None else ("passed" if gate.passed else "failed"),
        # "accept" or "rollback" when one was killed half-way (kgit/engine/recovery.py).
        interrupted=_interrupted(open_round, tip, best_tip, row),
    )


def _interrupted(
    open_round: OpenRound, tip: str | None, best_tip: str, row: LineageRow | None
) -> str | None:
    """What a kill interrupted; a best line at the round's commit is an interrupted accept only
    when the round's verdict accepts (else someone moved it there: `best_moved`)."""
    ours = row if row and row.round == open_round.number else None
    found = interrupted_close(open_round, tip, best_tip, ours.status if ours else None)
    if found == ACCEPT and (ours is None or ours.decision not in ACCEPTING):
        return None
    return found


def next_step(data: CampaignStatus) -> str:
    if not data.trusted and not data.finished:
        return f"kgit trust --campaign {data.campaign}"
    if not data.gate_installed and not data.finished:
        return "kgit hooks install"
    if not data.baselined:
        return "kgit baseline"
    if data.finished:
        return "the campaign is finished: kgit log"
    current = data.open_round
    best = data.best.ref.removeprefix("refs/heads/")
    moved = data.best_moved
    if moved and current is not None and moved.tip == current.tip:
        return 'kgit round rollback --reason "..."'  # it moves the best line back as well
    if moved:
        return moved.restore
    if current is None:
        if data.closed_round_checked_out is not None:
            return f"git checkout {best}"
        return 'kgit round start "HYPOTHESIS"'
    return _round_step(data, current)


def _round_step(data: CampaignStatus, current: OpenRoundState) -> str:
    """The next step of the open round CURRENT."""
    if current.interrupted == ROLLBACK:
        return 'kgit round rollback --reason "..."'
    if current.branch_missing:
        return "kgit doctor --fix"
    if data.branch != current.branch:
        return f"git checkout {current.branch.removeprefix('refs/heads/')}"
    if current.interrupted == ACCEPT and current.verdict in ACCEPTING:
        return "kgit round accept"
    if not current.has_commit:
        return "edit the kernel, then git commit (the hook gates it)"
    if current.verdict is None and current.gate == "failed":
        return "fix the kernel and commit again (the correctness gate failed on this commit)"
    if current.verdict is None:
        return "kgit round validate"
    if current.verdict in ACCEPTING:
        return "kgit round accept"
    return 'kgit round rollback --reason "..."'


def _gate_audit(campaign: Campaign) -> dict[str, Any] | None:
    stored = campaign.state.gate_audit
    if not stored:
        return None
    from kgit.records.gate_audit import GateAudit  # its three classes, only for a summary

    return GateAudit.from_dict(stored).summary()


def saved_patches(campaign: Campaign) -> list[str]:
    folder = campaign.repo.kgit_dir() / "patches"
    return [str(p) for p in sorted(folder.glob("*.patch"))] if folder.is_dir() else []
