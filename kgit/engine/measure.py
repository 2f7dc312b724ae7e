"""One measurement through the quick harness, checked against the frozen schema; and the
preconditions every state-changing command shares."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kgit.engine.runner import run_harness
from kgit.engine.store import Campaign
from kgit.errors import KgitError, SchemaError
from kgit.gitdoor import Repo
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


def measure(
    campaign: Campaign,
    shapes: list[dict[str, Any]],
    frozen: tuple[str, ...] | None,
    say: Say,
    *,
    echo: bool,
) -> Measurement:
    manifest = campaign.manifest
    labels = [s["label"] for s in shapes]
    say(f"harness: {len(shapes)} shape(s): {', '.join(labels)}")
    run = run_harness(
        manifest.quick_command, shapes, campaign.repo.root, manifest.timeout_s, echo=echo
    )
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
    return Measurement(run.csv, table, result, run.result.seconds, tail)


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
