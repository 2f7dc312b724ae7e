"""One validation path: a candidate measured against a reference and judged under the campaign's
policy. `kgit round validate` compares the round's commit with the best line, `kgit finish` the
best line with the baseline, and `kgit baseline` calibrates the noise floors with the same
sampling, the baseline against itself (kgit/engine/validation_baseline.py).

- `seed`: the candidate's passes against the reference's stored per-shape values, re-measured
  in the noise band (the seed's rule 3 and noise rule); here.
- `interleaved`: the reference's commit in kgit's own work tree (A) and the candidate (B), each a
  measuring worker when the harness speaks the protocol (kgit/engine/measuring_sides.py). Per
  shape, quads of short blocks A,B,B,A, so that the chip's clock falls on both sides alike; each quad is
  one pair of the log-ratio statistics (kgit/judge/stats.py), sampled until the verdict is
  settled. With a plain harness a pair is two whole passes, in alternating order
  (kgit/engine/validation_interleaved.py).

Evidence pools: a validation of the tree and reference that earlier evidence is about adds to it
(kgit/records/evidence.py), and the verdict is recomputed over everything measured. Accept
recomputes it from the recorded evidence (`rejudge`). What a validation compares and returns:
kgit/engine/validation_target.py.
"""

from __future__ import annotations

import time
from pathlib import Path

from kgit.engine.campaign import Campaign
from kgit.engine.devicelock import measuring
from kgit.engine.passes import check_fingerprint, measure
from kgit.engine.validation_interleaved import floors_for, measure_interleaved
from kgit.engine.validation_target import Outcome, Target, evidence_for, ran_workers, scores_of
from kgit.engine.worktree import measuring_tree, require_pristine
from kgit.judge.stats import Pair, judge_pairs
from kgit.judge.verdict import (
    NOT_MEASURED,
    REMEASURE,
    Verdict,
    correctness_verdict,
    interleaved_verdict,
    seed_verdict,
)
from kgit.progress import Say
from kgit.records.evidence import Evidence
from kgit.records.notes import ROLLED_BACK

__all__ = ["Target", "ran_workers", "rejudge", "validate"]


def validate(
    campaign: Campaign, target: Target, prior: Evidence | None, say: Say, *, echo: bool
) -> Outcome:
    """Measure and judge TARGET under the campaign's policy, pooled with PRIOR when it is
    evidence about the same tree and reference."""
    policy = campaign.manifest.decision_policy
    if prior is not None and not prior.pools_with(
        policy, None, target.candidate_tree, target.reference, target.labels
    ):
        prior = None
    if prior is not None:
        say(
            f"pooling with {prior.validations} earlier validation(s) of this tree "
            f"({len(prior.runs)} run(s), {len(prior.pairs)} pair(s))"
        )
    if prior is not None and prior.failed:  # Check is a hard gate: the same files fail again
        prior.validations += 1
        failed = [f"shape {label}: Check FAIL (an earlier validation)" for label in prior.failed]
        return Outcome(correctness_verdict(failed, target.reference_values), prior)
    path = measuring_tree(campaign, target.candidate, "candidate", say, echo=echo)
    if policy == "interleaved":
        # Both trees are checked out and built first: the device is held for timing only.
        reference = measuring_tree(campaign, target.reference, "reference", say, echo=echo)
        what = f"campaign {campaign.name}: validating {target.candidate[:10]}"
        with measuring(campaign.repo, what, say):
            return measure_interleaved(campaign, target, (reference, path), prior, say, echo=echo)
    return _seed(campaign, target, path, prior, say, echo=echo)


def _seed(
    campaign: Campaign, target: Target, path: Path, prior: Evidence | None, say: Say, *, echo: bool
) -> Outcome:
    """The seed's rule: the candidate's runs against the stored values, re-measured in the band."""
    frozen = tuple(campaign.state.frozen_header or ())
    shapes = campaign.manifest.shapes_for(target.labels)
    evidence = evidence_for(target, "seed", "pass", prior)
    reference = {label: target.reference_values[label] for label in target.labels}
    outcome = Outcome(Verdict("", "", []), evidence)
    start = time.monotonic()
    new_runs = 0
    while True:
        run = measure(campaign, shapes, frozen, say, echo=echo, tree=path)
        require_pristine(path, "candidate")
        check_fingerprint(campaign.state.fingerprint, run.fingerprint)
        outcome.passes.append(run)
        new_runs += 1
        evidence.seconds = round(evidence.seconds + time.monotonic() - start, 3)
        start = time.monotonic()
        if run.score.failing:
            evidence.failed = list(run.score.failing)
            outcome.verdict = correctness_verdict(
                [f"shape {label}: Check FAIL" for label in run.score.failing], reference
            )
            return outcome
        evidence.runs.append(dict(run.score.values))
        verdict = seed_verdict(
            scores_of(evidence.runs, target.labels),
            reference,
            campaign.manifest.thresholds,
            versus=target.versus,
        )
        if verdict.decision != REMEASURE:
            outcome.verdict = verdict
            return outcome
        say(verdict.reasons[-1])


def rejudge(campaign: Campaign, evidence: Evidence, best: dict[str, float]) -> Verdict:
    """The verdict recomputed from recorded EVIDENCE: accept follows what the measurements say,
    not a decision written in a note."""
    if not evidence.labels or not (evidence.runs or evidence.pairs):
        return Verdict(ROLLED_BACK, NOT_MEASURED, ["the evidence holds no measurements"])
    manifest = campaign.manifest
    if evidence.policy == "interleaved":
        floors = floors_for(campaign, evidence.labels, "best")
        pairs = [Pair(p["a"], p["b"]) for p in evidence.pairs]
        judged = judge_pairs(
            pairs, evidence.labels, floors, manifest.interleaved, manifest.thresholds
        )
        return interleaved_verdict(judged, manifest.thresholds)
    reference = {label: best[label] for label in evidence.labels if label in best}
    return seed_verdict(scores_of(evidence.runs, evidence.labels), reference, manifest.thresholds)
