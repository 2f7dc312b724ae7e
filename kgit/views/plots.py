"""The report's two PNG plots (matplotlib, Agg backend): the aggregate per round, and the
per-shape speedup of the best line over the baseline. matplotlib is imported here only, when a
plot is asked for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgit.judge.scoring import geomean
from kgit.records.notes import in_line_order
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


def best_line_steps(kept: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """KEPT, (round, aggregate) of the accepted rounds in the order the best line took them, as
    the steps of the line's level over round numbers. Rounds in parallel are not accepted in
    round order (round-3 before round-2, rebased onto it): such a round raises the level where
    the higher-numbered round already stands, so the line drops only where it really did."""
    steps: list[tuple[int, float]] = []
    for number, value in kept:
        steps.append((max(number, steps[-1][0]) if steps else number, value))
    return steps


def plot_aggregate(
    views: list[RoundView], metric: str, labels: list[str], path: Path, line: list[str]
) -> Path:
    """LINE: the best line's commits, newest first (its first-parent history)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.8), dpi=110)
    points = [(v, comparable_aggregate(v, labels)) for v in views]
    accepted = [(v.commit or "", (v.number, y)) for v, y in points if y is not None and v.accepted]
    kept = in_line_order(accepted, line)
    dropped = [(v.number, y) for v, y in points if y is not None and not v.accepted]
    if kept:
        _best_line(ax, kept, max(v.number for v in views))
    if dropped:
        ax.plot(*zip(*dropped, strict=True), "x", color="tab:red", ms=9, mew=2, label="rolled back")
    _mark_unmeasured(ax, views, points)
    base = next(((v.number, y) for v, y in points if v.is_baseline and y is not None), None)
    if base is not None:
        ax.axhline(base[1], color="gray", ls="--", lw=1)
        ax.plot([base[0]], [base[1]], "*", color="black", ms=14, label="baseline (round-1)")
    ax.set_xlabel("round")
    ax.set_ylabel(f"{metric} (geomean)")
    ax.set_title(f"{metric} per round, on the {len(labels)} quick-validation shapes")
    ax.grid(alpha=0.3)
    # Below the axes: inside, "best" still covered the lines once the legend had five entries.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize=9, frameon=False)
    ax.xaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    fig.savefig(path, format="png", bbox_inches="tight")  # the legend is outside
    plt.close(fig)
    return path


def _best_line(ax: Any, kept: list[tuple[int, float]], last: int) -> None:
    """The accepted rounds KEPT as the best line's steps, carried on to round LAST."""
    # The best line holds its level until the next accept: a step, not a slope.
    steps = best_line_steps(kept)
    ax.plot(
        *zip(*steps, strict=True),
        "-o",
        drawstyle="steps-post",
        color="tab:blue",
        label="accepted (best line)",
    )
    for (number, _), (x, value) in zip(kept, steps, strict=True):
        if x != number:  # taken by the line after a higher-numbered round
            ax.annotate(
                f"round-{number}",
                (x, value),
                xytext=(4, 0),
                textcoords="offset points",
                va="center",
                fontsize=8,
            )
    if last > steps[-1][0]:  # the best line holds its level through later rolled-back rounds
        ax.plot([steps[-1][0], last], [steps[-1][1]] * 2, "--", color="tab:blue", lw=1)


def _mark_unmeasured(ax: Any, views: list[RoundView], points: list[tuple[RoundView, Any]]) -> None:
    """Rounds with no aggregate: rolled back before a commit, or never measured."""
    for lost in [v.number for v in views if v.note is None]:
        ax.axvline(lost, color="tab:red", ls=":", lw=1, alpha=0.6)
    if any(v.note is None for v in views):
        ax.plot([], [], ":", color="tab:red", label="rolled back before a commit (no data)")
    # A commit that was never measured: the gate failed on it, or it was rolled back before
    # validation. Its round is marked where the aggregate would be, not left out silently.
    blocked = [v.number for v, y in points if v.note is not None and y is None]
    for number in blocked:
        ax.axvline(number, color="tab:orange", ls="-.", lw=1.2, alpha=0.8)
    if blocked:
        ax.plot(
            [],
            [],
            "-.",
            color="tab:orange",
            label="not measured (gate failed, or rolled back before validation)",
        )


def plot_speedup(rows: list[dict[str, Any]], path: Path) -> Path:
    """Bars of best / baseline per shape; shapes the best round did not measure are left out."""
    plt = _pyplot()
    measured = [r for r in rows if r["speedup"] is not None]
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(measured) + 2), 4.8), dpi=110)
    labels = [r["shape"] for r in measured]
    speedups = [r["speedup"] for r in measured]
    colors = ["tab:green" if s >= 1 else "tab:red" for s in speedups]
    # Bars grow from the 1.0 line, up for a gain and down for a loss, and each label sits past
    # its bar's end, away from the line (bars from 0 put a 0.98x label across the 1.0 line).
    bars = ax.bar(range(len(labels)), [s - 1 for s in speedups], bottom=1.0, color=colors)
    for bar, value in zip(bars, speedups, strict=True):
        ax.annotate(
            f"{value:.3f}x",
            (bar.get_x() + bar.get_width() / 2, value),
            xytext=(0, 3 if value >= 1 else -3),
            textcoords="offset points",
            ha="center",
            va="bottom" if value >= 1 else "top",
            fontsize=8,
        )
    ax.axhline(1.0, color="black", lw=1)
    if speedups:
        low, high = min(min(speedups), 1.0), max(max(speedups), 1.0)
        pad = max(0.02, 0.15 * (high - low))
        ax.set_ylim(low - pad, high + pad)
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
    line: list[str],
) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return [
        plot_aggregate(views, metric, labels, folder / AGGREGATE_PNG, line),
        plot_speedup(speedups, folder / SPEEDUP_PNG),
    ]
