"""One validation path: a candidate measured against a reference and judged under the campaign's
policy (kgit/engine/measuring/policies/policy.py). `kgit round validate` compares the round's commit with the best
line, `kgit finish` the best line with the baseline, and `kgit baseline` calibrates the noise
floors with the same sampling, the baseline against itself (kgit/engine/measuring/policies/calibration.py).

- `seed` (kgit/engine/measuring/policies/policy_seed.py): the candidate's passes against the reference's stored
  per-shape values, re-measured in the noise band (the seed's rule 3 and noise rule).
- `interleaved` (kgit/engine/measuring/policies/policy_interleaved.py): the reference's commit in kgit's own work
  tree (A) and the candidate (B), each a resident harness when the harness speaks the protocol
  (kgit/engine/measuring/sides/sides.py). Per shape, quads of short blocks A,B,B,A, so that the chip's
  clock falls on both sides alike; each quad is one pair of the log-ratio statistics
  (kgit/judge/stats.py), sampled until the verdict is settled. With a plain harness a pair is two
  whole passes, in alternating order (kgit/engine/measuring/policies/interleaved.py).

Evidence pools: a validation of the tree and reference that earlier evidence is about adds to it
(kgit/records/evidence.py), and the verdict is recomputed over everything measured. A validation
measures; the judgement of what it measured is kgit/judge/judgement.py's `judge`, called by
validate, accept (over the recorded evidence: `recorded_measured`) and finish. What a validation
compares and returns: kgit/engine/measuring/policies/target.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgit.engine.campaign import Campaign
from kgit.engine.measuring.policies.policy import Policy, policy_named
from kgit.engine.measuring.policies.target import (
    Outcome,
    Target,
    ran_resident,
    standard_for,
)
from kgit.engine.measuring.sides.side_trees import measuring_tree
from kgit.judge.judgement import Measured
from kgit.progress import Voice
from kgit.records.evidence import Evidence

__all__ = ["Target", "ran_resident", "recorded_measured", "validate"]


def validate(
    campaign: Campaign,
    policy: Policy,
    target: Target,
    prior: Evidence | None,
    voice: Voice,
) -> Outcome:
    """Measure TARGET under the campaign's POLICY, pooled with PRIOR when it is evidence about
    the same tree and reference; the caller judges the outcome (kgit/judge/judgement.py)."""
    manifest = campaign.manifest
    if prior is not None and not prior.pools_with(
        manifest.decision_policy, None, target.candidate_tree, target.reference, target.labels
    ):
        prior = None
    if prior is not None:
        voice.say(
            f"pooling with {prior.validations} earlier validation(s) of this tree "
            f"({len(prior.runs)} run(s), {len(prior.pairs)} pair(s))"
        )
    if prior is not None and prior.failed:  # Check is a hard gate: the same files fail again
        prior.validations += 1
        standard = standard_for(manifest, target.labels, target.reference_values, target.versus)
        outcome = Outcome(prior, standard, failed_where=" (an earlier validation)")
    else:
        path = measuring_tree(campaign, target.candidate, "candidate", voice)
        outcome = policy.measure(campaign, target, path, prior, voice)
    return outcome


def recorded_measured(
    campaign: Campaign,
    evidence: Evidence,
    best: dict[str, float],
    over: Sequence[str],
    devices: Sequence[str],
) -> Measured:
    """What the judgement weighs of recorded EVIDENCE against the best line's values BEST (with
    the floor's OVER and the device's DEVICES): accept follows what the measurements say, not a
    decision written in a note."""
    policy = policy_named(evidence.policy)
    floors = policy.floors(campaign, evidence.labels, "best")
    standard = standard_for(campaign.manifest, evidence.labels, best, "best", floors)
    failed_where = " (an earlier validation)" if evidence.failed else ""
    return Measured(evidence, standard, policy.rule, tuple(over), tuple(devices), failed_where)
