"""The report's two PNG plots (matplotlib, Agg backend): the aggregate per round, and the
per-shape speedup of the best line over the baseline. matplotlib is imported here only, when a
plot is asked for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgit.judge.scoring import geomean
from kgit.views.record import RoundView

AGGREGATE_PNG = "aggregate_per_round.png"
SPEEDUP_PNG = "speedup_per_shape.png"


def comparable_aggregate(view: RoundView, labels: list[str]) -> float | None:
    """The round's geomean on LABELS (the quick-validation shapes), so the baseline's full run
    and later quick runs sit on one axis; the recorded aggregate when LABELS were not measured."""
    if view.note is None:
        return None
    values = view.note.values()
    if labels and all(label in values for label in labels):
        return geomean(values[label] for label in labels)
    return view.note.aggregate or None


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # no display: CI machines and agents
    import matplotlib.pyplot as plt

    return plt


def plot_aggregate(views: list[RoundView], metric: str, labels: list[str], path: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.8), dpi=110)
    points = [(v, comparable_aggregate(v, labels)) for v in views]
    kept = [(v.number, y) for v, y in points if y is not None and v.accepted]
    dropped = [(v.number, y) for v, y in points if y is not None and not v.accepted]
    if kept:
        ax.plot(*zip(*kept, strict=True), "-o", color="tab:blue", label="accepted (best line)")
        last = max(v.number for v in views)
        if last > kept[-1][0]:  # the best line holds its level through later rolled-back rounds
            ax.plot([kept[-1][0], last], [kept[-1][1]] * 2, "--", color="tab:blue", lw=1)
    if dropped:
        ax.plot(*zip(*dropped, strict=True), "x", color="tab:red", ms=9, mew=2, label="rolled back")
    for lost in [v.number for v in views if v.note is None]:
        ax.axvline(lost, color="tab:red", ls=":", lw=1, alpha=0.6)
    if any(v.note is None for v in views):
        ax.plot([], [], ":", color="tab:red", label="rolled back before a commit (no data)")
    base = next(((v.number, y) for v, y in points if v.is_baseline and y is not None), None)
    if base is not None:
        ax.axhline(base[1], color="gray", ls="--", lw=1)
        ax.plot([base[0]], [base[1]], "*", color="black", ms=14, label="baseline (round-1)")
    ax.set_xlabel("round")
    ax.set_ylabel(f"{metric} (geomean)")
    ax.set_title(f"{metric} per round, on the {len(labels)} quick-validation shapes")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=9)
    ax.xaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
    return path


def plot_speedup(rows: list[dict[str, Any]], path: Path) -> Path:
    """Bars of best / baseline per shape; shapes the best round did not measure are left out."""
    plt = _pyplot()
    measured = [r for r in rows if r["speedup"] is not None]
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(measured) + 2), 4.8), dpi=110)
    labels = [r["shape"] for r in measured]
    speedups = [r["speedup"] for r in measured]
    colors = ["tab:green" if s >= 1 else "tab:red" for s in speedups]
    bars = ax.bar(range(len(labels)), speedups, color=colors)
    for bar, value in zip(bars, speedups, strict=True):
        ax.annotate(
            f"{value:.3f}x",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    ax.axhline(1.0, color="black", lw=1)
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("speedup (best / baseline)")
    ax.set_title("Best line vs baseline, per shape")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
    return path


def write_plots(
    folder: Path,
    views: list[RoundView],
    metric: str,
    labels: list[str],
    speedups: list[dict[str, Any]],
) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return [
        plot_aggregate(views, metric, labels, folder / AGGREGATE_PNG),
        plot_speedup(speedups, folder / SPEEDUP_PNG),
    ]
