"""Interleaved A/B validation (`decision_policy: interleaved`) and its A/A calibration.

kgit keeps the best line's tip checked out in a work tree of its own
(`.git/kgit/worktrees/<campaign>/best`) and runs the harness there (A) and in the round's work
tree (B) alternately, in ABBA order so that a linear drift of the machine cancels over two pairs.
Sampling is sequential: it stops once the verdict is settled, or at `max_pairs` / `budget_s`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgit.engine.measure import Measurement, Say, check_fingerprint, measure
from kgit.engine.runner import run_command
from kgit.engine.store import Campaign
from kgit.errors import KgitError
from kgit.gitdoor import open_repo
from kgit.judge.stats import ABJudgement, Pair, calibrate_floors, judge_pairs


def best_tree(campaign: Campaign, commit: str, say: Say, *, echo: bool) -> Path:
    """The best line's tip in kgit's own work tree (created or moved there; rebuilt if needed)."""
    repo = campaign.repo
    path = repo.kgit_dir() / "worktrees" / campaign.name / "best"
    if (path / ".git").exists():
        tree = open_repo(path)
        tree.git("checkout", "-q", "-f", "--detach", commit)
        tree.git("clean", "-q", "-f", "-d")
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        repo.git("worktree", "prune")
        repo.git("worktree", "add", "-q", "-f", "--detach", str(path), commit)
    command = campaign.manifest.rebuild_command
    marker = path / ".git-kgit-built"
    if command and (not marker.exists() or marker.read_text() != commit):
        say(f"rebuild (best line work tree): `{command}`")
        result = run_command(command, path, campaign.manifest.timeout_s, echo=echo)
        if not result.ok:
            raise KgitError("the rebuild failed in the best line's work tree", details=result.tail)
        marker.write_text(commit)
    return path


@dataclass
class ABRun:
    pairs: list[Pair]
    candidate_runs: list[Measurement]
    best_runs: list[Measurement]
    judgement: ABJudgement | None
    seconds: float


def _values(run: Measurement) -> dict[str, float]:
    return run.score.values


def run_pairs(
    campaign: Campaign,
    shapes: list[dict[str, Any]],
    trees: tuple[Path, Path],
    floors: dict[str, float],
    say: Say,
    *,
    echo: bool,
    pairs_wanted: int | None = None,
) -> ABRun:
    """Alternate the harness between trees (A, B) until settled, or a fixed count of pairs."""
    settings, limits = campaign.manifest.interleaved, campaign.manifest.thresholds
    frozen = tuple(campaign.state.frozen_header or ())
    labels = [s["label"] for s in shapes]
    start = time.monotonic()
    out = ABRun([], [], [], None, 0.0)
    most = pairs_wanted or settings.max_pairs
    while len(out.pairs) < most:
        k = len(out.pairs) + 1
        order = ("A", "B") if k % 2 else ("B", "A")
        runs: dict[str, Measurement] = {}
        for role in order:
            tree = trees[0] if role == "A" else trees[1]
            runs[role] = measure(
                campaign, shapes, frozen, say, echo=echo, tree=tree, role=f" pair {k} {role}"
            )
            check_fingerprint(campaign.state.fingerprint, runs[role].fingerprint)
        out.best_runs.append(runs["A"])
        out.candidate_runs.append(runs["B"])
        if runs["A"].score.failing:
            raise KgitError(
                f"the best line FAILed {', '.join(runs['A'].score.failing)} in an A/B "
                "pair: the harness or the machine is not reliable",
                hint="check the best line's correctness (kgit show), then validate again",
            )
        if runs["B"].score.failing:
            break  # a correctness failure decides alone
        out.pairs.append(Pair(_values(runs["A"]), _values(runs["B"])))
        out.seconds = time.monotonic() - start
        if pairs_wanted is None and len(out.pairs) >= settings.min_pairs:
            out.judgement = judge_pairs(out.pairs, labels, floors, settings, limits)
            if out.judgement.settled or out.seconds >= settings.budget_s:
                break
    out.seconds = time.monotonic() - start
    return out


def judgement(
    campaign: Campaign, run: ABRun, labels: list[str], floors: dict[str, float]
) -> ABJudgement:
    """The verdict statistics of RUN: those sampling stopped on, or, when the pairs ran out
    first, the same judgement over every pair taken."""
    if run.judgement is not None:
        return run.judgement
    manifest = campaign.manifest
    return judge_pairs(run.pairs, labels, floors, manifest.interleaved, manifest.thresholds)


def calibrate(
    campaign: Campaign, commit: str, labels: list[str], say: Say, *, echo: bool
) -> tuple[dict[str, float], ABRun]:
    """A/A: the best line against itself (its own work tree vs the main one, same commit)."""
    shapes = campaign.manifest.shapes_for(labels)
    tree = best_tree(campaign, commit, say, echo=echo)
    pairs = campaign.manifest.interleaved.calibration_pairs
    say(f"calibration: {pairs} A/A pairs of the baseline against itself")
    run = run_pairs(
        campaign, shapes, (tree, campaign.repo.root), {}, say, echo=echo, pairs_wanted=pairs
    )
    floors = calibrate_floors(run.pairs, labels, campaign.manifest.interleaved.min_effect_pct)
    return floors, run
