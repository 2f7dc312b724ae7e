"""A third decision policy, for the tests only: one plain pass of the candidate, accepted when
every shape reads over the reference's stored value. tests/engine/test_policies.py registers it
in the table (kgit/records/policies.py) and runs a campaign under it: nothing else of kgit
knows it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgit.engine.campaign import Campaign
from kgit.engine.measuring.harness import passes
from kgit.engine.measuring.policies.target import (
    Calibrated,
    Outcome,
    Pick,
    Target,
    evidence_for,
    standard_for,
)
from kgit.judge.decision import Judged, Standard
from kgit.judge.scoring import geomean, pct
from kgit.judge.verdict import IMPROVED, NOT_IMPROVED, Verdict
from kgit.progress import Voice
from kgit.records.evidence import Evidence
from kgit.records.manifest import Thresholds
from kgit.records.notes import ACCEPTED, ROLLED_BACK

stored_reference = True
WORDS = "every shape over the best line's stored value, in one pass"
ACCEPT_REASON = "toy rule: every shape over the best line"


def measure(
    campaign: Campaign, target: Target, path: Path, prior: Evidence | None, voice: Voice
) -> Outcome:
    manifest = campaign.manifest
    evidence = evidence_for(target, manifest.decision_policy, "pass", prior)
    standard = standard_for(manifest, target.labels, target.reference_values, target.versus)
    frozen = tuple(campaign.state.frozen_header or ())
    shapes = manifest.shapes_for(target.labels)
    run = passes.measure(campaign, shapes, frozen, voice, tree=path)
    evidence.failed = list(run.score.failing)
    evidence.runs.append(dict(run.score.values))
    return Outcome(evidence, standard, [run])


def calibrate(campaign: Campaign, commit: str, path: Path, pick: Pick, voice: Voice) -> Calibrated:
    shapes = campaign.manifest.target_shapes
    return Calibrated(passes.measure(campaign, shapes, None, voice, tree=path), {}, {})


def floors(campaign: Campaign, labels: list[str], versus: str) -> dict[str, float]:
    return {}


def rule(evidence: Evidence, standard: Standard) -> Judged:
    last, reference = evidence.runs[-1], standard.reference
    deltas = {label: pct(last[label], reference[label]) for label in evidence.labels}
    gain = pct(geomean(last[label] for label in evidence.labels), geomean(reference.values()))
    behind = [label for label, delta in deltas.items() if delta <= 0]
    if behind:
        decision, cause, reasons = ROLLED_BACK, NOT_IMPROVED, [f"toy rule: behind on {behind}"]
    else:
        decision, cause, reasons = ACCEPTED, IMPROVED, [ACCEPT_REASON]
    return Judged(Verdict(decision, cause, reasons, dict(last), reference, gain, deltas))


def statistics(evidence: Evidence) -> dict[str, Any]:
    return {"toy_passes": len(evidence.runs)}


def words(thresholds: Thresholds) -> str:
    return WORDS
