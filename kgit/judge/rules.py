"""The shipped policies' decision rules, pure, over the evidence and the standard: the seed's over
whole passes, the interleaved policy's over A/B pairs. A policy's module names its rule
(kgit/engine/measuring/policies/policy_seed.py, policy_interleaved.py); `decide` applies whichever it is
given (kgit/judge/decision.py) and never asks which.
"""

from __future__ import annotations

from kgit.judge.decision import Judged, Standard
from kgit.judge.scoring import Score, geomean
from kgit.judge.stats import judge_pairs, pairs_of, side_means
from kgit.judge.verdict import REMEASURE, interleaved_verdict, seed_verdict
from kgit.records.evidence import Evidence
from kgit.records.manifest import Interleaved


def seed_rule(evidence: Evidence, standard: Standard) -> Judged:
    """The seed's rule over the candidate's plain passes, against the reference's stored values:
    settled unless the noise rule asks for another run."""
    labels = evidence.labels
    runs = [Score(dict(run), [], geomean(run[label] for label in labels)) for run in evidence.runs]
    verdict = seed_verdict(runs, standard.reference, standard.thresholds, standard.versus)
    return Judged(verdict, verdict.decision != REMEASURE)


def pairs_rule(evidence: Evidence, standard: Standard) -> Judged:
    """Rule 3 on the A/B pairs' statistically called changes, with both sides' means kept."""
    settings = standard.settings
    if not isinstance(settings, Interleaved):
        raise TypeError(f"the pairs' rule reads Interleaved settings, not {settings!r}")
    pairs = pairs_of(evidence.pairs)
    labels = evidence.labels
    judgement = judge_pairs(pairs, labels, standard.floors, settings, standard.thresholds)
    reference, candidate = side_means(pairs, labels)
    verdict = interleaved_verdict(
        judgement, standard.thresholds, standard.versus, candidate, reference
    )
    return Judged(verdict, judgement.settled, judgement)
