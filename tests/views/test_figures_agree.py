"""One campaign judged in A/B pairs, and every view of it: `kgit log`, `show`, `status`, `report`
(Markdown, HTML) and their `--json` show the same change for the same round.

Before kgit/judge/figures.py each view computed its own: on a CPU demo round-2, whose best line
was the baseline, read -10.910% vs baseline in the log and +19.643% vs best in the same row, step
+8.588% in the report's trend, 0.630x-1.522x per shape in "Best vs baseline", and its shape
table listed 3.61e-05 against a best of 6.311e-05 as +19.959%.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kgit.views.numbers import change
from tests.conftest import Built, baselined, commit, git, run_kgit

POLICY = """\
decision_policy: interleaved
interleaved: {min_quads: 4, max_quads: 8, calibration_quads: 4, min_pairs: 3, max_pairs: 4, calibration_pairs: 3}
"""
KERNEL = "speed: {speed}\nnoise: 0.005\ntorch: 2.11\nworker\n"


def _round(repo: Path, speed: int, close: tuple[str, ...]) -> None:
    assert run_kgit("round", "start", f"speed {speed}").code == 0
    (repo / "kernel.txt").write_text(KERNEL.format(speed=speed))
    assert commit(repo, f"speed {speed}").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0
    assert run_kgit("round", *close).code == 0


def _play(repo: Path) -> None:
    """Baseline at 100; round-2 at 120 and round-3 at 132 accepted (round-3's change vs baseline
    is chained through round-2's pairs); round-4 at 125, slower than the best, rolled back."""
    baselined(repo, KERNEL.format(speed=100), POLICY)
    _round(repo, 120, ("accept",))
    _round(repo, 132, ("accept",))
    _round(repo, 125, ("rollback", "--reason", "slower"))


@pytest.fixture
def paired(kernel_repo: Path, built: Built, tmp_path: Path) -> Path:
    built.lay("figures_agree", tmp_path, lambda: _play(kernel_repo))
    return kernel_repo


def _json(*args: str) -> Any:
    result = run_kgit(*args, "--json")
    assert result.code == 0, result
    return result.json()


def _log_cells(text: str, number: int) -> list[str]:
    line = next(row for row in text.splitlines() if row.startswith(f"| round-{number} "))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_every_view_shows_the_same_change_for_each_round(paired: Path, tmp_path: Path) -> None:
    rows = {row["round"]: row for row in _json("log")}
    log_text = run_kgit("log").out
    report = _json("report")
    report_rounds = {r["round"]: r for r in report["rounds"]}
    trend = {r["round"]: r for r in report["trend"]}
    markdown = run_kgit("report").out
    page = tmp_path / "report.html"
    assert run_kgit("report", "--format", "html", "-o", str(page)).code == 0
    html = page.read_text()
    for number in (2, 3, 4):
        row = rows[number]
        vs_best, vs_base = row["vs_best"], row["vs_baseline"]
        assert vs_best["basis"] == vs_base["basis"] == "paired", row
        assert row["delta_vs_best_pct"] == vs_best["pct"]
        assert row["delta_vs_baseline_pct"] == vs_base["pct"]
        # kgit log: the same cells
        cells = _log_cells(log_text, number)
        assert cells[5:7] == [change(vs_base), change(vs_best)]
        # kgit show: the same figures, the same words
        summary = _json("show", str(number))["summary"]
        assert summary["vs_best"] == vs_best and summary["vs_baseline"] == vs_base
        sentence = f"{change(vs_best)} vs best, {change(vs_base)} vs baseline."
        assert sentence in run_kgit("show", str(number)).out
        # kgit report: the round's summary, the trend's cell, in Markdown and HTML
        assert report_rounds[number]["vs_best"] == vs_best
        assert report_rounds[number]["vs_baseline"] == vs_base
        assert trend[number]["vs_baseline"] == vs_base
        trend_line = next(r for r in markdown.splitlines() if r.startswith(f"| round-{number} "))
        assert f"| {change(vs_base)} " in trend_line
        assert sentence in markdown and change(vs_base) in html and change(vs_best) in html


def test_a_round_against_the_baseline_reads_alike_vs_best_and_vs_baseline(paired: Path) -> None:
    """round-2's best line was the baseline: its two changes are one measurement."""
    row = {r["round"]: r for r in _json("log")}[2]
    assert row["vs_baseline"]["pct"] == row["vs_best"]["pct"]
    assert row["vs_baseline"]["low"] == row["vs_best"]["low"]
    assert row["vs_baseline"]["chain"] == [2]
    shapes = _json("show", "2")["summary"]["shapes"]
    assert all(s["vs_baseline"] == s["vs_best"] for s in shapes)


def test_a_later_round_is_chained_through_the_accepted_rounds_pairs(paired: Path) -> None:
    rows = {r["round"]: r for r in _json("log")}
    two, three, four = rows[2], rows[3], rows[4]
    assert three["vs_baseline"]["chain"] == [2, 3] and four["vs_baseline"]["chain"] == [2, 3, 4]
    chained = (1 + two["vs_best"]["pct"] / 100) * (1 + three["vs_best"]["pct"] / 100)
    assert three["vs_baseline"]["pct"] == pytest.approx((chained - 1) * 100, abs=1e-3)
    # Each half-width grows: two estimates are less sure than one.
    width = three["vs_baseline"]["high"] - three["vs_baseline"]["low"]
    assert width > three["vs_best"]["high"] - three["vs_best"]["low"]
    # The fake kernel ran 1.32x the baseline: the chain's interval holds it.
    assert three["vs_baseline"]["low"] < 32.0 < three["vs_baseline"]["high"]
    assert four["vs_best"]["pct"] < 0 < four["vs_baseline"]["pct"]


def test_status_report_and_rule9_speak_of_the_best_line_as_the_log_does(paired: Path) -> None:
    rows = {r["round"]: r for r in _json("log")}
    best = rows[3]
    status = _json("status")
    assert status["best"]["round"] == 3 and status["best"]["vs_baseline"] == best["vs_baseline"]
    assert f"{change(best['vs_baseline'])} vs baseline" in run_kgit("status").out
    report = _json("report")
    assert report["best"]["vs_baseline"] == best["vs_baseline"]
    per_shape = {s["shape"]: s["vs_baseline"] for s in _json("show", "3")["summary"]["shapes"]}
    for row in report["best_vs_baseline"]:
        if row["best"] is None:
            continue
        assert row["vs_baseline"] == per_shape[row["shape"]]
        assert row["speedup"] == pytest.approx(1 + row["vs_baseline"]["pct"] / 100)
    # Rule 9 watches Combined Step TFLOPS, which no pair of this Forward TFLOPS campaign
    # measured: its steps are first passes, and say so (tests/judge/test_trend.py: paired).
    assert {s["basis"] for s in report["rule9"]["steps"]} == {"first pass"}


def test_a_figure_is_spelled_one_way() -> None:
    paired = {"pct": 19.643, "low": 1.259, "high": 41.364, "basis": "paired", "chain": [2]}
    chained = {**paired, "chain": [2, 3]}
    first = {"pct": -10.91, "low": None, "high": None, "basis": "first pass", "chain": []}
    assert change(paired) == "+19.643% (CI +1.259%..+41.364%)"
    assert change(chained) == "+19.643% (CI +1.259%..+41.364%, chained)"
    assert change(first) == "-10.910% (first pass)"
    assert change(None) == "-"
    baseline = {"pct": 0.0, "low": None, "high": None, "basis": "paired", "chain": []}
    assert change(baseline) == "+0.000%"  # the baseline against itself


def test_plain_git_log_shows_the_changes_the_views_show(paired: Path) -> None:
    """The summary under each round commit in `git log` (written as kgit records the round)."""
    rows = {r["round"]: r for r in _json("log")}
    for number in (2, 3, 4):
        row = rows[number]
        text = git(paired, "log", "-1", "--notes=kgit/c1/log", "--format=%N", row["commit"])
        versus = (
            f"{row['vs_best']['pct']:+.2f}% vs best, {row['vs_baseline']['pct']:+.2f}% vs baseline"
        )
        assert versus in text, text
