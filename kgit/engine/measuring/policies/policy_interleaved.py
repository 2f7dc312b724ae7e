"""The interleaved policy (`decision_policy: interleaved`, the default): the reference (A) and
the candidate (B) measured in alternation in one validation, as resident harnesses in quads of
short blocks or as whole passes (kgit/engine/measuring/policies/interleaved.py), and judged by the pairs'
confidence intervals against the noise floors that the baseline's A/A calibration measured
(kgit/engine/measuring/policies/calibration.py; kgit/judge/stats.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgit.engine.campaign import Campaign
from kgit.engine.measuring.isolation.sealed import sealed
from kgit.engine.measuring.policies.calibration import calibrate
from kgit.engine.measuring.policies.interleaved import floors_for, measure_interleaved
from kgit.engine.measuring.policies.target import Outcome, Target
from kgit.engine.measuring.sides.side_trees import measuring_tree
from kgit.judge.rules import pairs_rule
from kgit.progress import Voice
from kgit.records.evidence import Evidence
from kgit.records.manifest import Thresholds

__all__ = ["calibrate", "floors", "measure", "rule", "statistics", "stored_reference", "words"]

# Both sides are timed in each validation, on one device.
stored_reference = False
rule = pairs_rule
floors = floors_for


def measure(
    campaign: Campaign, target: Target, path: Path, prior: Evidence | None, voice: Voice
) -> Outcome:
    # Both trees are checked out and built first: the device is held for timing only.
    reference = measuring_tree(campaign, target.reference, "reference", voice)
    what = f"campaign {campaign.name}: validating {target.candidate[:10]}"
    with sealed(campaign, (reference, path), what, voice.say):
        return measure_interleaved(campaign, target, (reference, path), prior, voice)


def statistics(evidence: Evidence) -> dict[str, Any]:
    data: dict[str, Any] = {"pairs": len(evidence.pairs)}
    if evidence.block_ms:
        data["block_ms"] = evidence.block_ms
    return data


def words(thresholds: Thresholds) -> str:
    return (
        "A/B pairs against the best line, each shape judged past its calibrated noise "
        f"floor; a core shape that may be down ≥{thresholds.core_regression_pct}% rolls back"
    )


if TYPE_CHECKING:  # mypy holds this module to the protocol
    from kgit.engine.measuring.policies import policy_interleaved
    from kgit.engine.measuring.policies.policy import Policy

    _POLICY: Policy = policy_interleaved
