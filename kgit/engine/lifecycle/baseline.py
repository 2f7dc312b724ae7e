"""`kgit baseline`: round 1 of a campaign. The gate's tests, the full pass (and under the
interleaved policy the A/A calibration of the noise floors), the physical floor, the
representative shapes, and what the gate may never see changed: the harness, the CSV's schema and
the files the test command reads."""

from __future__ import annotations

import functools
from typing import Any

from kgit.engine.bestline import require_best_where_recorded
from kgit.engine.campaign import Campaign, now
from kgit.engine.guards.audit import audit_at_baseline
from kgit.engine.guards.audit_background import inline_wanted, start_audit
from kgit.engine.guards.gate import frozen_files, gate_failure, gate_files, record_gate, run_tests
from kgit.engine.guards.trust import require_trusted
from kgit.engine.measuring.device.pyenv import environment
from kgit.engine.measuring.harness.launches import baseline_log, harness_records, traced_sources
from kgit.engine.measuring.harness.passes import Measurement
from kgit.engine.measuring.harness.physical_floor import impossible, measured_rates
from kgit.engine.measuring.policies.calibration import baseline_pass
from kgit.engine.measuring.policies.target import Calibrated
from kgit.engine.rounds.keep_tips import print_tips
from kgit.engine.rounds.preconditions import require_clean
from kgit.engine.rounds.round import links_out
from kgit.errors import KgitError, UsageError
from kgit.gitdoor import Repo
from kgit.judge.floor import campaign_floor
from kgit.judge.representative import pick_representative
from kgit.judge.scoring import diagnostics, geomean
from kgit.progress import Say, Voice, phase, warn
from kgit.records.campaign_results import BaselineRecorded
from kgit.records.manifest import Manifest
from kgit.records.names import HARNESS_DIR
from kgit.records.notes import BASELINE, RoundNote, ShapeResult


def baseline(campaign: Campaign, voice: Voice, *, wait: bool = False) -> BaselineRecorded:
    """Round 1: tests, full validation, frozen schema and harness, representative shapes."""
    repo, manifest = campaign.repo, campaign.manifest
    base = _ready_for_baseline(campaign)
    if repo.current_branch() != campaign.refs.best:
        repo.switch(campaign.refs.best)
    voice.say(f"baseline of {campaign.name} at {base[:10]}")
    print_tips(campaign, voice.say)  # lessons of earlier campaigns on this GPU, op and backend
    _gate_at_baseline(campaign, base, voice)

    representative_of = functools.partial(_representative, manifest)
    # The full pass, then (interleaved) the A/A calibration; it records launches for the audit.
    with harness_records(baseline_log(campaign), traced_sources(manifest.kernel_source)):
        calibrated = baseline_pass(campaign, base, representative_of, voice)
    run, floors = calibrated.first, calibrated.floors
    inactive = _inactive_shapes(manifest, run, voice.say)
    _check_floor(campaign, calibrated, voice.say)
    representative = representative_of(run)
    gate_unseen, protected, harness_copy = _frozen_for_gate(repo, base, manifest, voice.say)
    note = _baseline_note(campaign, calibrated, protected)
    campaign.state.frozen_header = list(run.table.header)
    campaign.state.fingerprint = run.fingerprint
    if calibrated.statistics:
        voice.say("noise floors: " + ", ".join(f"{k} {v * 100:.2f}%" for k, v in floors.items()))
    with repo.write_lock():
        current = campaign.reload()
        if current.state.baselined:
            raise KgitError("another kgit process recorded the baseline first")
        current.state.frozen_header = list(run.table.header)
        current.state.protected = protected
        current.state.representative = representative
        current.state.inactive = inactive
        current.state.fingerprint = run.fingerprint
        current.state.noise_floors = floors
        if not _audits_inline(current, wait):
            current.state.gate_audit_started = base
        _save_baseline(current, base, run, note, harness_copy)
    # After the baseline is recorded: an audit that is interrupted or cannot run loses nothing.
    with phase("audit"):
        audit = _audit(current, base, voice, inline=wait)
    return BaselineRecorded(
        campaign=campaign.name,
        round=1,
        commit=base,
        aggregate=note.aggregate,
        metric=manifest.primary_metric,
        shapes={s.label: s.value for s in note.shapes},
        representative_shapes=tuple(representative),
        inactive_shapes=tuple(inactive),
        frozen_header=tuple(run.table.header),
        noise_floors_pct={label: f * 100 for label, f in floors.items()},
        fingerprint=run.fingerprint,
        protected=protected,
        gate_unseen=tuple(gate_unseen),
        gate_audit=audit[0],
        gate_audit_background=audit[1],
    )


def _representative(manifest: Manifest, first: Measurement) -> list[str]:
    return manifest.representative_shapes or pick_representative(
        manifest.target_shapes, first.table, manifest.primary_metric
    )


def _audit(
    campaign: Campaign, base: str, voice: Voice, *, inline: bool
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The baseline's gate audit: (its summary when run inline, else None; its mark, started in
    a process of its own unless INLINE is asked (kgit/engine/guards/audit_background.py))."""
    if _audits_inline(campaign, inline):
        return audit_at_baseline(campaign, voice), None
    return None, start_audit(campaign, base, voice.say)


def _audits_inline(campaign: Campaign, inline: bool) -> bool:
    return inline or inline_wanted() or campaign.manifest.gate_audit_mutants == 0


def _ready_for_baseline(campaign: Campaign) -> str:
    """The best line's tip, once the campaign may record its baseline there: trusted, none yet,
    a clean work tree, and a kernel_source held in git."""
    require_trusted(campaign, "record the baseline")
    if campaign.state.baselined:
        raise KgitError(
            f"campaign {campaign.name} already has its baseline (round-1)",
            hint='kgit round start "HYPOTHESIS" begins the next round',
        )
    require_clean(campaign.repo, "baseline")
    base = require_best_where_recorded(campaign)
    linked = links_out(campaign, base, [])
    if linked:
        raise UsageError(
            f"kernel_source links out of the repository: {', '.join(linked)}",
            hint="the campaign's kernel must be in git: commit the file itself, not a link to it",
        )
    return base


def _gate_at_baseline(campaign: Campaign, base: str, voice: Voice) -> None:
    """The test command on BASE, its result recorded as the gate's; a failure refuses."""
    tests = run_tests(campaign, voice)
    record_gate(campaign, campaign.repo.tree_of(base), tests)
    if not tests.ok:
        raise gate_failure(tests, campaign.manifest.timeout_s)


def _inactive_shapes(manifest: Manifest, run: Measurement, say: Say) -> list[str]:
    """The shapes that FAILed at baseline, left out of comparisons; none may pass: refused."""
    inactive = list(run.score.failing)
    if len(inactive) == len(manifest.target_shapes):
        raise KgitError(
            "every target shape FAILed at baseline",
            hint="a shape FAILs when its check fails or when the harness raised on it (its "
            "timing included): the harness's output below says which; fix that before a campaign",
            details=run.tail,
        )
    if inactive:
        say(
            f"warning: shapes failing at baseline are left out of comparisons: {', '.join(inactive)}"
        )
    return inactive


def _frozen_for_gate(
    repo: Repo, base: str, manifest: Manifest, say: Say
) -> tuple[list[str], dict[str, str | None], dict[str, bytes]]:
    """What the gate reads that it does not name (warned), the protected paths' blobs, and their
    copies for the record. The harness and what the gate reads (its tests, a folder whole) are
    frozen: a round that edits a test to pass a wrong kernel is rolled back, never accepted."""
    gate = gate_files(repo, base, manifest)
    protected = repo.path_blobs(base, [*manifest.protected_paths, *gate.frozen])
    harness_copy = {
        f"{HARNESS_DIR}/{path}": data for path, data in frozen_files(repo, base, protected).items()
    }
    say(f"frozen for the gate: {', '.join(gate.frozen) or 'nothing the command names'}")
    for unseen in gate.unseen:
        warn(f"{unseen}; name them in protected_paths to freeze them too")
    return gate.unseen, protected, harness_copy


def _save_baseline(
    current: Campaign, base: str, run: Measurement, note: RoundNote, harness_copy: dict[str, bytes]
) -> None:
    """The baseline's record in one transaction: the frozen copies, its notes, its keep-ref.
    The caller holds the write lock."""
    kept = current.refs.kept(1)
    current.save(
        "baseline (round-1)",
        harness_copy,
        [current.bench_note(base, run.csv), current.round_note(base, note)],
        [(kept, base, current.repo.rev_parse(kept))],
    )


def _baseline_note(
    campaign: Campaign, calibrated: Calibrated, protected: dict[str, str | None]
) -> RoundNote:
    """Round 1's note: the full pass's figures on every shape, the hashes of what it froze, the
    device and, under the interleaved policy, the calibration's statistics."""
    run = calibrated.first
    table, score = run.table, run.score
    shapes = [
        ShapeResult(label, "PASS" if label in score.values else "FAIL", score.values.get(label))
        for label in campaign.manifest.shape_labels
    ]
    note = RoundNote(
        campaign=campaign.name,
        round=1,
        status=BASELINE,
        hypothesis="baseline",
        metric=campaign.manifest.primary_metric,
        level="full",
        decision=BASELINE,
        reasons=["baseline: full validation on every target shape"],
        aggregate=geomean(score.values.values()),
        baseline_aggregate=geomean(score.values.values()),
        run_aggregates=[geomean(score.values.values())],
        shapes=shapes,
        diagnostics=diagnostics(table),
        timings={"harness_s": round(run.seconds, 3)},
        environment=environment(),
        started_at=now(),
        validated_at=now(),
        decided_at=now(),
    )
    note.hashes = {"schema": ",".join(table.header), "protected": protected}
    note.fingerprint = run.fingerprint
    if calibrated.statistics:
        note.statistics = calibrated.statistics
    return note


def _check_floor(campaign: Campaign, calibrated: Calibrated, say: Say) -> None:
    """Refuse a baseline faster than the device allows: every later round would be compared
    with an error of measurement."""
    run = calibrated.first
    blocks = calibrated.statistics.get("block_values") or {}
    rates = measured_rates([run], [run.score.values, blocks], campaign.manifest.primary_metric)
    floor = campaign_floor(campaign.manifest, campaign.state, run.fingerprint)
    if floor is None:
        gpu = run.fingerprint.get("gpu") or campaign.state.fingerprint.get("gpu") or "this device"
        say(
            f"physical floor: no peaks known for {gpu}: rates are not checked (set peaks: in the manifest)"
        )
        return
    over, _ = impossible(campaign, rates, run.fingerprint)
    if over:
        raise KgitError(
            f"baseline refused: {len(over)} shape(s) past what the device allows",
            hint="the harness's FLOP or byte count or its timing is wrong, or work is skipped; "
            "if the peaks are wrong for this device, start a campaign whose manifest sets "
            "peaks: {tflops: ..., gbps: ...}",
            details="\n".join([*over, f"peaks: {floor.describe()}"]),
        )
    say(f"physical floor: {floor.describe()}")
