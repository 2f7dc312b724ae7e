"""The seed's policy (`decision_policy: seed`): the candidate's plain passes against the
reference's stored per-shape values, re-measured while a gain is in the noise band (the seed's
rule 3 and noise rule, kgit/judge/verdict.py: seed_verdict). The baseline is one plain pass.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgit.engine.campaign import Campaign
from kgit.engine.measuring.harness import passes
from kgit.engine.measuring.harness.passes import check_fingerprint
from kgit.engine.measuring.policies.target import (
    Calibrated,
    Outcome,
    Pick,
    Target,
    evidence_for,
    standard_for,
)
from kgit.engine.measuring.sides.side_trees import require_pristine
from kgit.judge.decision import decide
from kgit.judge.rules import seed_rule
from kgit.progress import Voice
from kgit.records.evidence import Evidence
from kgit.records.manifest import Thresholds

__all__ = ["calibrate", "floors", "measure", "rule", "statistics", "stored_reference", "words"]

# The verdict compares with the best line's stored figures, measured wherever they were.
stored_reference = True
rule = seed_rule


def measure(
    campaign: Campaign, target: Target, path: Path, prior: Evidence | None, voice: Voice
) -> Outcome:
    """Runs of the candidate until the rule is settled (the noise rule asks for more)."""
    manifest = campaign.manifest
    frozen = tuple(campaign.state.frozen_header or ())
    shapes = manifest.shapes_for(target.labels)
    evidence = evidence_for(target, manifest.decision_policy, "pass", prior)
    standard = standard_for(manifest, target.labels, target.reference_values, target.versus)
    outcome = Outcome(evidence, standard)
    start = time.monotonic()
    while True:
        run = passes.measure(campaign, shapes, frozen, voice, tree=path)
        require_pristine(path, "candidate")
        check_fingerprint(campaign.state.fingerprint, run.fingerprint)
        outcome.passes.append(run)
        evidence.seconds = round(evidence.seconds + time.monotonic() - start, 3)
        start = time.monotonic()
        if run.score.failing:
            evidence.failed = list(run.score.failing)
            return outcome
        evidence.runs.append(dict(run.score.values))
        judged = decide(evidence, standard, rule)
        if judged.settled:
            return outcome
        voice.say(judged.verdict.reasons[-1])


def calibrate(campaign: Campaign, commit: str, path: Path, pick: Pick, voice: Voice) -> Calibrated:
    """The baseline's one plain pass: the seed's rule has no noise floors to calibrate."""
    first = passes.measure(campaign, campaign.manifest.target_shapes, None, voice, tree=path)
    return Calibrated(first, {}, {})


def floors(campaign: Campaign, labels: list[str], versus: str) -> dict[str, float]:
    return {}


def statistics(evidence: Evidence) -> dict[str, Any]:
    return {}


def words(thresholds: Thresholds) -> str:
    return (
        f"core shape down ≥{thresholds.core_regression_pct}% rolls back; "
        f"improvements under {thresholds.noise_band_pct}% re-measured"
    )


if TYPE_CHECKING:  # mypy holds this module to the protocol
    from kgit.engine.measuring.policies import policy_seed
    from kgit.engine.measuring.policies.policy import Policy

    _POLICY: Policy = policy_seed
