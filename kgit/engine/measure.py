"""One measurement through the quick harness, checked against the frozen schema; and the
preconditions every state-changing command shares."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgit.engine.runner import parse_fingerprint, run_harness
from kgit.engine.store import Campaign
from kgit.errors import KgitError, SchemaError
from kgit.gitdoor import Repo, clean_env
from kgit.judge.scoring import Score, score
from kgit.records.notes import RoundNote
from kgit.records.schema import BenchTable, parse_bench_csv

Say = Callable[[str], None]


class HarnessError(KgitError):
    """The harness broke its contract: crash, hang, odd exit, missing or unreadable CSV."""


@dataclass(frozen=True)
class Measurement:
    csv: bytes
    table: BenchTable
    score: Score
    seconds: float
    tail: str
    fingerprint: dict[str, str]


def measure(
    campaign: Campaign,
    shapes: list[dict[str, Any]],
    frozen: tuple[str, ...] | None,
    say: Say,
    *,
    echo: bool,
    tree: Path | None = None,
    role: str = "",
) -> Measurement:
    """Run the harness in TREE (default: the work tree) and read its CSV strictly."""
    manifest = campaign.manifest
    labels = [s["label"] for s in shapes]
    cwd = tree or campaign.repo.root
    say(f"harness{role}: {len(shapes)} shape(s): {', '.join(labels)}")
    # The tree's own code first on the import path, so that a best-line work tree measures its
    # own kernel even when the project is pip-installed in editable mode from the main tree.
    env = clean_env(
        {"PYTHONPATH": os.pathsep.join(filter(None, [str(cwd), os.environ.get("PYTHONPATH")]))}
    )
    run = run_harness(manifest.quick_command, shapes, cwd, manifest.timeout_s, echo=echo, env=env)
    tail = run.result.tail
    if run.status == "unavailable":
        raise KgitError(
            "the harness cannot run on this machine (it exited 2)",
            hint="run this step where the target GPU is; nothing was recorded",
            details=tail[-4000:],
        )
    if run.status == "error" or run.csv is None:
        raise HarnessError(
            f"validation ERROR: {run.problem}",
            hint="see the harness output above",
            details=tail[-4000:],
        )
    try:
        table = parse_bench_csv(run.csv, manifest.primary_metric, frozen)
    except SchemaError as exc:
        raise HarnessError(
            f"validation ERROR: {exc.message}", hint=exc.hint, details=exc.details
        ) from None
    extra = sorted(set(table.labels) - set(labels))
    missing = [label for label in labels if label not in table.labels]
    if extra or missing:
        raise HarnessError(
            "validation ERROR: the CSV's shapes are not the ones asked for"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unexpected {', '.join(extra)}" if extra else ""),
            hint="the harness must measure exactly the shapes passed with --shapes",
        )
    result = score(table, manifest.primary_metric, labels)
    say(
        f"harness: done in {run.result.seconds:.1f} s, aggregate {result.aggregate:.4g}"
        + (f", FAIL: {', '.join(result.failing)}" if result.failing else "")
    )
    return Measurement(run.csv, table, result, run.result.seconds, tail, parse_fingerprint(tail))


def require_clean(repo: Repo, action: str) -> None:
    dirty = repo.dirty_paths()
    if dirty:
        shown = ", ".join(dirty[:5]) + (" ..." if len(dirty) > 5 else "")
        raise KgitError(
            f"cannot {action}: uncommitted changes in tracked files ({shown})",
            hint="commit them (git commit runs the gate) or set them aside with git stash",
        )


def best_values(rounds: list[tuple[str, RoundNote]]) -> dict[str, float]:
    """Per-shape values of the best line: the baseline, overlaid by each accepted round's shapes."""
    values: dict[str, float] = {}
    for _, note in rounds:
        if note.accepted:
            values.update(note.values())
    return values


# What must match for two measurements to be compared; clocks are recorded but vary by design.
FINGERPRINT_KEYS = ("gpu", "driver", "cuda", "hip", "torch", "triton")


def check_fingerprint(baseline: dict[str, str], now: dict[str, str]) -> None:
    """Refuse to compare across environments: that is a new baseline epoch, not a round."""
    changed = [
        f"{key} {baseline[key]} -> {now.get(key, '?')}"
        for key in FINGERPRINT_KEYS
        if key in baseline and baseline[key] != now.get(key)
    ]
    if changed:
        raise KgitError(
            "the environment changed since the baseline: " + "; ".join(changed),
            hint="measurements from another GPU, driver or library version are not comparable: "
            "validate on the baseline's environment, or start a new campaign (a new baseline "
            "epoch) for this one",
        )
