"""`kgit report` and `kgit show` on a campaign played through the real CLI and hook."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from kgit.records.lineage_results import Lineage, LineageRow
from kgit.records.results import json_keys
from kgit.views.trend import TrendLayout
from tests.conftest import run_kgit
from tests.views.helpers import check_golden, masked, play_rounds_out_of_order

UPDATE = bool(os.environ.get("KGIT_UPDATE_GOLDEN"))


def test_report_markdown_matches_golden(reviewed: Path) -> None:
    result = run_kgit("report")
    assert result.code == 0, result
    check_golden("report.md", masked(result.out), UPDATE)


def test_round_summary_matches_golden(reviewed: Path) -> None:
    result = run_kgit("show", "4")
    assert result.code == 0, result
    check_golden("show-round-4.md", masked(result.out), UPDATE)


def test_report_facts(reviewed: Path) -> None:
    data = run_kgit("report", "--json").json()
    assert isinstance(data, dict)
    assert [r["round"] for r in data["trend"]] == [1, 2, 3, 4]
    assert data["best"]["round"] == 2
    assert [d["round"] for d in data["did_not_work"]] == [3, 4]
    assert data["rule9"]["ok"] is True and data["rule9"]["steps"][0]["round"] == 2
    # The fake harness: speed 110 vs 100 on every shape, forward and backward alike.
    cell = data["trend"][1]["first_pass_vs_baseline_pct"]
    assert round(cell["step"], 3) == round(cell["fwd"], 3) == 10.0
    # The seed's rule measures no pairs: the change is the first pass's, and says so.
    assert data["trend"][1]["vs_baseline"] == {
        "pct": 10.0, "low": None, "high": None, "basis": "first pass", "chain": []
    }  # fmt: skip
    # The best line added a weight cache (kernel.txt:2): rule 11 allows it.
    assert data["applicability"]["added_lines"] == 2
    assert data["applicability"]["findings"] == []
    summary = run_kgit("show", "4", "--json").json()
    assert isinstance(summary, dict)
    rollback = summary["summary"]["rollback"]
    assert rollback["root_cause"] == "too many programs"
    assert rollback["lesson"] == "keep 128-wide tiles"


def test_rule9_flags_an_accepted_round_that_lowered_the_step_metric(reviewed: Path) -> None:
    from kgit.engine.campaign import Campaign
    from kgit.engine.read_only import CampaignReader
    from kgit.gitdoor import open_repo
    from kgit.views.record import load_rounds
    from kgit.views.trend import rule9

    reader = CampaignReader(Campaign.load(open_repo(reviewed), "c1"))
    views = load_rounds(reader)
    slower = next(v for v in views if v.number == 4)
    assert slower.note is not None and slower.commit is not None
    slower.note.status = "ACCEPTED"  # as if round-4 (10% slower) had been accepted
    check = rule9(views, "Forward TFLOPS", [slower.commit, *reader.best_line()])
    assert check["ok"] is False and check["offending_rounds"] == [4]


def test_rule9_follows_the_order_the_best_line_took_the_rounds(kernel_repo: Path) -> None:
    # Round 3 (x1.2) was accepted first, round 2 (x1.1) on top of it: each gained on the one
    # before it on the line. In round order, round 3 read as a loss after round 2 (-9.1%).
    play_rounds_out_of_order(kernel_repo)
    data = run_kgit("report", "--json").json()
    assert isinstance(data, dict) and data["best"]["round"] == 2
    rule = data["rule9"]
    assert rule["ok"] is True and rule["offending_rounds"] == [], rule
    assert [(s["round"], s["after"]) for s in rule["steps"]] == [(3, 1), (2, 3)]
    assert [round(s["change_pct"]) for s in rule["steps"]] == [20, 10]
    # The seed export's trend file judges rule 9 the same way.
    out = kernel_repo.parent / "export"
    assert run_kgit("export", str(out)).code == 0
    trend = (out / "logs" / "performance_trend.md").read_text()
    assert "never decreased by more than 1% along the accepted rounds (2 steps" in trend, trend


def test_memory_bound_trend_uses_gbs_columns() -> None:
    headers = TrendLayout.for_metric("Forward GB/s").headers
    assert "Fwd Avg GB/s" in headers and "Fwd Avg TFLOPS" not in headers
    assert headers[-2:] == ["vs Baseline", "Key Finding"]
    gemm = TrendLayout.for_metric("Combined Step TFLOPS").headers
    assert gemm == [
        "Round", "Status", "Description", "Fwd Avg TFLOPS", "Fwd Peak TFLOPS", "Bwd Avg TFLOPS",
        "Bwd Peak TFLOPS", "Combined Step TFLOPS", "vs Baseline", "Key Finding",
    ]  # fmt: skip


def test_plots_and_html(reviewed: Path, tmp_path: Path) -> None:
    import matplotlib.image

    plots = tmp_path / "plots"
    out = tmp_path / "report.md"
    assert run_kgit("report", "--plots", str(plots), "-o", str(out)).code == 0
    pngs = sorted(plots.glob("*.png"))
    assert [p.name for p in pngs] == ["aggregate_per_round.png", "speedup_per_shape.png"]
    for png in pngs:
        assert png.stat().st_size > 10_000
        image = matplotlib.image.imread(png)
        assert image.shape[0] > 300 and image.shape[1] > 300 and image.std() > 0.01
    assert "](plots/aggregate_per_round.png)" in out.read_text()
    page = tmp_path / "report.html"
    assert run_kgit("report", "--format", "html", "-o", str(page)).code == 0
    html = page.read_text()
    assert html.count("data:image/png;base64,") == 2 and "<style>" in html
    assert 'src="http' not in html and "<table>" in html


def test_log_marks_which_shapes_each_aggregate_covers(reviewed: Path) -> None:
    # The baseline's aggregate covers six shapes, the rounds' the representative few: on an H200
    # a round read a lower aggregate than the baseline's at +9.35%, with nothing to say why.
    status = run_kgit("status", "--json").json()
    assert isinstance(status, dict) and 0 < len(status["representative_shapes"]) < 6
    out = run_kgit("log").out
    rows = {line.split("|")[1].strip(): line.split("|") for line in out.splitlines()[2:6]}
    assert rows["round-1"][5].strip() == "full" and rows["round-2"][5].strip() == "quick"
    assert rows["round-3"][5].strip() == "-"  # no commit, no measurement
    assert "the two do not compare" in out


def test_log_legend_only_when_quick_rounds_measure_fewer_shapes() -> None:
    from kgit.views.status_log import SHAPES_LEGEND, render_log

    def row(number: int, level: str) -> LineageRow:
        return _row(round=number, status="ACCEPTED", commit="c" * 11, aggregate=1.0,
                    level=level, delta_vs_baseline_pct=0.0, hypothesis="h")  # fmt: skip

    rows = Lineage((row(1, "full"), row(2, "quick")))
    assert SHAPES_LEGEND not in render_log(rows, quick_is_subset=False)
    assert render_log(rows, quick_is_subset=True).endswith(SHAPES_LEGEND)
    assert SHAPES_LEGEND not in render_log(Lineage((row(1, "full"),)), quick_is_subset=True)


def _row(**given: Any) -> LineageRow:
    """A lineage row with GIVEN fields, the others None."""
    return LineageRow(**({name: None for name in json_keys(LineageRow)} | given))


def test_log_names_the_baseline_figure_only_where_the_table_does_not_give_it() -> None:
    from kgit.views.status_log import render_log

    def row(number: int, status: str, aggregate: float, vs: float, base: float) -> LineageRow:
        return _row(round=number, status=status, commit="c" * 11, aggregate=aggregate,
                    level="full", delta_vs_baseline_pct=vs, baseline_aggregate=base,
                    hypothesis="h")  # fmt: skip

    baseline = row(1, "BASELINE", 2.0, 0.0, 2.0)
    same_way = row(2, "ACCEPTED", 3.0, 50.0, 2.0)  # 3.0 against the row's 2.0: +50%, as printed
    in_blocks = row(3, "ROLLED BACK", 3.0, 60.0, 1.875)  # against the calibration's 1.875
    assert "'vs baseline' of" not in render_log(Lineage((baseline, same_way)))
    text = render_log(Lineage((baseline, same_way, in_blocks)))
    assert "'vs baseline' of round-3: against 1.875, the baseline on the same shapes" in text
    assert "round-2" not in text.split("'vs baseline' of")[1]


def test_html_says_pass_and_fail_in_words_and_colour(reviewed: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    assert run_kgit("report", "--format", "html", "-o", str(page)).code == 0
    html = page.read_text()
    assert "✅" not in html and "❌" not in html  # empty boxes without an emoji font
    assert '<td class="good">PASS</td>' in html and '<td class="bad">ROLLED BACK</td>' in html
    assert '<strong class="good">PASS</strong> no flagged pattern' in html
    assert ".good{color:" in html and ".bad{color:" in html
    assert "<strong>not reached</strong> max_iterations" in html  # a stop condition, not a FAIL


def test_plots_mark_unmeasured_rounds_and_keep_labels_off_the_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from matplotlib.figure import Figure

    from kgit.records.notes import ROLLED_BACK, RoundNote, ShapeResult
    from kgit.views.plots import plot_aggregate, plot_speedup
    from kgit.views.record import RoundView

    figures: list[Figure] = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: figures.append(fig))

    def note(number: int, status: str, value: float | None) -> RoundNote:
        shapes = [ShapeResult("a", "PASS", value)] if value else []
        return RoundNote("c1", number, status, "h", "Forward TFLOPS", shapes=shapes,
                         aggregate=value)  # fmt: skip

    views = [
        RoundView(1, "BASELINE", "baseline", "c1", note(1, "BASELINE", 100.0)),
        RoundView(2, ROLLED_BACK, "gate failed", "c2", note(2, ROLLED_BACK, None)),
        RoundView(3, "ACCEPTED", "faster", "c3", note(3, "ACCEPTED", 110.0)),
    ]
    plot_aggregate(views, "Forward TFLOPS", ["a"], tmp_path / "a.png", ["c3", "c1"])
    legend = [t.get_text() for t in figures[-1].axes[0].get_legend().get_texts()]
    assert any(text.startswith("not measured (gate failed") for text in legend), legend

    rows = [{"shape": "a", "speedup": 0.99}, {"shape": "b", "speedup": 1.2}]
    plot_speedup(rows, tmp_path / "s.png")
    ax = figures[-1].axes[0]
    labels = {t.get_text(): t for t in ax.texts}
    below, above = labels["0.990x"], labels["1.200x"]
    # Each label sits past its bar's end, away from the 1.0 line: below it for a loss.
    assert below.get_va() == "top" and below.xy[1] == 0.99 and below.xyann[1] < 0
    assert above.get_va() == "bottom" and above.xyann[1] > 0
    assert ax.get_ylim()[0] < 0.99 < 1.2 < ax.get_ylim()[1]


def test_the_plotted_best_line_follows_the_order_it_took_the_rounds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Round-3 (x1.2) was accepted before round-2 (x1.1, rebased onto it): drawn in round order,
    # the best line fell from 132 at round-2 to 120 at round-3, though it never went down.
    from matplotlib.figure import Figure

    from kgit.records.notes import RoundNote, ShapeResult
    from kgit.views.plots import plot_aggregate
    from kgit.views.record import RoundView

    figures: list[Figure] = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: figures.append(fig))

    def view(number: int, status: str, value: float) -> RoundView:
        shapes = [ShapeResult("a", "PASS", value)]
        note = RoundNote("c1", number, status, "h", "Forward TFLOPS", shapes=shapes)
        return RoundView(number, status, "h", f"c{number}", note)

    views = [view(1, "BASELINE", 100.0), view(2, "ACCEPTED", 132.0), view(3, "ACCEPTED", 120.0)]
    plot_aggregate(views, "Forward TFLOPS", ["a"], tmp_path / "a.png", ["c2", "c3", "c1"])
    ax = figures[-1].axes[0]
    best = next(line for line in ax.get_lines() if line.get_label() == "accepted (best line)")
    assert list(best.get_ydata()) == pytest.approx([100.0, 120.0, 132.0])
    assert list(best.get_xdata()) == [1, 3, 3]  # round-2 raised the line where round-3 stood
    assert [t.get_text() for t in ax.texts] == ["round-2"]
