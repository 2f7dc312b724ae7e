"""The start of a campaign: `kgit init` (record, best line, hooks, git config) and `kgit baseline`."""

from __future__ import annotations

import stat
import sys
from typing import Any

from kgit.engine.gate import Say, gate_failure, record_gate, run_tests
from kgit.engine.gate_audit import audit_at_baseline
from kgit.engine.measure import Measurement, require_clean
from kgit.engine.store import HARNESS_DIR, Campaign, list_campaigns, now
from kgit.engine.tips import print_tips
from kgit.engine.validation import baseline_pass
from kgit.errors import KgitError, UsageError
from kgit.gitdoor import Repo
from kgit.judge.representative import pick_representative
from kgit.judge.scope import command_paths
from kgit.judge.scoring import Score, diagnostics, geomean
from kgit.records.manifest import Manifest
from kgit.records.names import CampaignRefs, validate_campaign_name
from kgit.records.notes import BASELINE, RoundNote, ShapeResult
from kgit.records.schema import BenchTable
from kgit.resources import data_dir

HOOK_NAMES = ("pre-commit", "prepare-commit-msg")
_MARKER = "kgit hook shim"


def install_hooks(repo: Repo) -> list[str]:
    """Install the shim as each hook, chaining (never clobbering) a hook that was there."""
    template = (data_dir("hooks") / "pre-commit").read_text()
    shim = template.replace("@KGIT_PYTHON@", sys.executable)
    folder = repo.hooks_dir()
    folder.mkdir(parents=True, exist_ok=True)
    installed = []
    for name in HOOK_NAMES:
        path = folder / name
        if path.exists() and _MARKER not in path.read_text(errors="replace"):
            chained = folder / f"{name}.kgit-chained"
            if chained.exists():
                raise KgitError(
                    f"{path} is not kgit's and {chained.name} is taken",
                    hint=f"merge the two hooks by hand, remove {chained}, then kgit hooks install",
                )
            path.rename(chained)
            chained.chmod(chained.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            installed.append(f"{name} (chained to your existing hook)")
        else:
            installed.append(name)
        path.write_text(shim)
        path.chmod(0o755)  # a hook without its run bit is silently skipped by git
    return installed


def configure_git(repo: Repo) -> None:
    """Notes follow amend and rebase; `git log` shows round notes without flags."""
    repo.config_add("notes.rewriteRef", "refs/notes/kgit/*")
    repo.config_add("notes.displayRef", "refs/notes/kgit/*/rounds")


def init_campaign(repo: Repo, name: str, manifest: Manifest) -> dict[str, Any]:
    validate_campaign_name(name)
    refs = CampaignRefs(name)
    base = repo.rev_parse("HEAD")
    if base is None:
        raise KgitError(
            "this repository has no commit yet", hint="commit the kernel and its tests first"
        )
    missing = [
        p for p, blob in repo.path_blobs(base, manifest.protected_paths).items() if blob is None
    ]
    if missing:
        raise UsageError(
            f"protected path(s) not committed at HEAD: {', '.join(missing)}",
            hint="commit the harness first (it is frozen at baseline), or set protected_paths",
        )
    with repo.write_lock():
        if name in list_campaigns(repo) or repo.rev_parse(refs.best):
            raise UsageError(f"campaign {name!r} already exists", hint=f"kgit status -c {name}")
        Campaign.create(repo, name, manifest, base)
        repo.update_ref(refs.best, base, None, f"kgit: {name} best line")
    configure_git(repo)
    hooks = install_hooks(repo)
    return {"campaign": name, "base": base, "best": refs.best, "hooks": hooks}


def _baseline_note(
    campaign: Campaign, table: BenchTable, score: Score, seconds: float
) -> RoundNote:
    shapes = [
        ShapeResult(label, "PASS" if label in score.values else "FAIL", score.values.get(label))
        for label in campaign.manifest.shape_labels
    ]
    return RoundNote(
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
        timings={"harness_s": round(seconds, 3)},
        environment=environment(),
        started_at=now(),
        validated_at=now(),
        decided_at=now(),
    )


def environment() -> dict[str, str]:
    import platform

    return {
        "host": platform.node(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "kgit_python": sys.executable,
    }


def baseline(campaign: Campaign, say: Say, *, echo: bool) -> dict[str, Any]:
    """Round 1: tests, full validation, frozen schema and harness, representative shapes."""
    repo, manifest = campaign.repo, campaign.manifest
    if campaign.state.baselined:
        raise KgitError(
            f"campaign {campaign.name} already has its baseline (round-1)",
            hint='kgit round start "HYPOTHESIS" begins the next round',
        )
    require_clean(repo, "baseline")
    base = campaign.best_tip()
    if repo.current_branch() != campaign.refs.best:
        repo.switch(campaign.refs.best)
    say(f"baseline of {campaign.name} at {base[:10]}")
    print_tips(campaign, say)  # lessons of earlier campaigns on this GPU, op and backend
    tests = run_tests(campaign, say, echo=echo)
    record_gate(campaign, repo.tree_of(base), tests)
    if not tests.ok:
        raise gate_failure(tests, manifest.timeout_s)

    def representative_of(first: Measurement) -> list[str]:
        return manifest.representative_shapes or pick_representative(
            manifest.target_shapes, first.table, manifest.primary_metric
        )

    # The full pass; under the interleaved policy the A/A calibration follows in the same
    # harness process (a measuring worker), so the floors are those of the rounds' blocks.
    calibrated = baseline_pass(campaign, base, representative_of, say, echo=echo)
    run = calibrated.first
    table, score = run.table, run.score
    inactive = list(score.failing)
    if len(inactive) == len(manifest.target_shapes):
        raise KgitError(
            "every target shape FAILed at baseline",
            hint="fix correctness before a campaign",
            details=run.tail,
        )
    if inactive:
        say(
            f"warning: shapes failing at baseline are left out of comparisons: {', '.join(inactive)}"
        )
    representative = representative_of(run)
    # The harness and the files the gate's own command names (its tests) are frozen: a round
    # that edits the test to pass a wrong kernel is rolled back, never accepted.
    gate_paths = [
        p for p in command_paths(manifest.test_command) if p not in manifest.protected_paths
    ]
    gate_blobs = {p: b for p, b in repo.path_blobs(base, gate_paths).items() if b is not None}
    protected = {**repo.path_blobs(base, manifest.protected_paths), **gate_blobs}
    harness_copy = {
        f"{HARNESS_DIR}/{path}": repo.read_blob(blob) for path, blob in protected.items() if blob
    }
    note = _baseline_note(campaign, table, score, run.seconds)
    note.hashes = {"schema": ",".join(table.header), "protected": protected}
    note.fingerprint = run.fingerprint
    campaign.state.frozen_header = list(table.header)
    campaign.state.fingerprint = run.fingerprint
    floors = calibrated.floors
    if calibrated.statistics:
        note.statistics = calibrated.statistics
        say("noise floors: " + ", ".join(f"{k} {v * 100:.2f}%" for k, v in floors.items()))
    with repo.write_lock():
        current = campaign.reload()
        if current.state.baselined:
            raise KgitError("another kgit process recorded the baseline first")
        current.write_round(base, note)
        current.write_bench(base, run.csv)
        repo.update_ref(current.refs.kept(1), base, repo.rev_parse(current.refs.kept(1)))
        current.state.frozen_header = list(table.header)
        current.state.protected = protected
        current.state.representative = representative
        current.state.inactive = inactive
        current.state.fingerprint = run.fingerprint
        current.state.noise_floors = floors
        current.save("baseline (round-1)", harness_copy)
    # After the baseline is recorded: an audit that is interrupted or cannot run loses nothing.
    audit = audit_at_baseline(current, say, echo=echo)
    return {
        "campaign": campaign.name,
        "round": 1,
        "commit": base,
        "aggregate": note.aggregate,
        "metric": manifest.primary_metric,
        "shapes": {s.label: s.value for s in note.shapes},
        "representative_shapes": representative,
        "inactive_shapes": inactive,
        "frozen_header": list(table.header),
        "noise_floors_pct": {label: f * 100 for label, f in floors.items()},
        "fingerprint": run.fingerprint,
        "protected": protected,
        "gate_audit": audit,
    }
