"""One round's summary (iteration rule 4): hypothesis, the single change, results with deltas
and SNR, the decision and its reasons, attribution and next direction; a rollback adds change /
expected / actual / root cause / lesson. A field nobody recorded is None in the data and left out
of the text (a report of "not recorded" lines says nothing).

Used by `kgit show`, by each round of `kgit report` and by the exported `summary.md`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kgit.errors import UsageError
from kgit.judge.figures import Figures, figure_dict
from kgit.judge.floor import campaign_floor, pct_of_peak, shape_dtypes
from kgit.records.notes import BASELINE, ROLLED_BACK, RoundNote
from kgit.records.reader import RecordReader
from kgit.records.review_results import RoundShown
from kgit.records.schema import BenchTable
from kgit.views.document import Block, Bullets, Code, Document, Heading, Para, Table, to_markdown
from kgit.views.numbers import change, num, percent
from kgit.views.record import RoundView, load_round

NOT_RECORDED = "not recorded"


def snr_by_shape(table: BenchTable | None) -> dict[str, dict[str, float]]:
    """The correctness columns (`*_snr`, dB) of each row of the bench CSV."""
    if table is None:
        return {}
    columns = [c for c in table.header if c.endswith("_snr")]
    return {r.label: {c.removesuffix("_snr"): r.values[c] for c in columns} for r in table.rows}


def peak_pcts(campaign: RecordReader, view: RoundView) -> dict[str, float | None]:
    """Each shape's primary metric as a percentage of the device's peak (the physical floor's
    peaks for the round's GPU, or the manifest's); None where no peak is known."""
    if view.note is None:
        return {}
    floor = campaign_floor(campaign.manifest, campaign.state, view.note.fingerprint)
    dtypes, metric = shape_dtypes(campaign.manifest), view.note.metric
    return {
        s.label: pct_of_peak(s.value, metric, dtypes.get(s.label), floor) for s in view.note.shapes
    }


def _shape_rows(
    view: RoundView, peaks: Mapping[str, float | None], figures: Figures
) -> list[dict[str, Any]]:
    note = view.note
    if note is None:
        return []
    snr = snr_by_shape(view.table)
    rows = []
    for s in note.shapes:
        vs_best = figures.shape_vs_best(note, s.label)
        vs_base = figures.shape_vs_baseline(note, s.label)
        rows.append(
            {
                "shape": s.label,
                "check": s.check,
                "value": s.value,
                "best": s.best,
                "vs_best": figure_dict(vs_best),
                "vs_best_pct": vs_best.pct if vs_best else None,
                "vs_baseline": figure_dict(vs_base),
                "vs_baseline_pct": vs_base.pct if vs_base else None,
                "pct_of_peak": peaks.get(s.label),
                "snr_db": snr.get(s.label, {}),
            }
        )
    return rows


def _actual(data: dict[str, Any], note: RoundNote | None) -> str:
    if note is None:
        return "nothing measured: rolled back before any commit"
    if note.aggregate is None:
        return "; ".join(note.reasons) or NOT_RECORDED
    return (
        f"first pass {num(note.aggregate)}; {change(data['vs_best'])} vs best, "
        f"{change(data['vs_baseline'])} vs baseline"
    )


def summary_data(
    view: RoundView, figures: Figures, peaks: Mapping[str, float | None] | None = None
) -> dict[str, Any]:
    """The round's summary; FIGURES: the campaign's changes (`figures_of`); PEAKS: each shape's
    % of the device's peak (`peak_pcts`)."""
    note, recorded = view.note, view.recorded
    vs_best = figures.vs_best(note) if note else None
    vs_base = figures.vs_baseline(note) if note else None
    data: dict[str, Any] = {
        "round": view.number,
        "status": view.status,
        "commit": view.commit,
        "hypothesis": view.hypothesis,
        "level": note.level if note else None,
        "change": view.diffstat if view.commit else None,
        "metric": note.metric if note else None,
        "aggregate": note.aggregate if note else None,
        "vs_best": figure_dict(vs_best),
        "vs_best_pct": vs_best.pct if vs_best else None,
        "vs_baseline": figure_dict(vs_base),
        "vs_baseline_pct": vs_base.pct if vs_base else None,
        "runs": list(note.run_aggregates) if note else [],
        "shapes": _shape_rows(view, peaks or {}, figures),
        "decision": (note.decision if note else None) or view.status,
        "cause": note.cause if note else None,
        "reasons": list(note.reasons) if note else [],
        "findings": list(note.findings) if note else [],
        "attribution": recorded.get("attribution"),
        "next_direction": recorded.get("next_direction"),
        "lesson": recorded.get("lesson"),
        "rollback": None,
        "warnings": list(view.warnings),
    }
    if view.status == ROLLED_BACK:
        data["rollback"] = {
            "change": (view.diffstat.splitlines() or [NOT_RECORDED])[-1].strip()
            if view.commit
            else "no commit was made",
            "expected": recorded.get("expected", f"the hypothesis: {view.hypothesis}"),
            "actual": _actual(data, note),
            "root_cause": recorded.get("root_cause") or view.rollback_reason,
            "lesson": recorded.get("lesson"),
            "reason": view.rollback_reason,
        }
    return data


def not_passing(checks: list[tuple[str, str]]) -> str:
    """`Check FAIL on a; ERROR (faster than the device allows) on b`, or ''."""
    fail = [label for label, check in checks if check == "FAIL"]
    error = [label for label, check in checks if check not in ("PASS", "FAIL")]
    parts = [f"Check FAIL on {', '.join(fail)}"] if fail else []
    parts += [f"ERROR (faster than the device allows) on {', '.join(error)}"] if error else []
    return "; ".join(parts)


def _snr_text(snr: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.1f}" for k, v in snr.items()) or "-"


def summary_blocks(data: dict[str, Any], level: int = 1, with_commit: bool = True) -> list[Block]:
    title = f"round-{data['round']} — {data['status']}"
    if with_commit and data["commit"]:
        title += f" ({data['commit'][:10]})"
    blocks: list[Block] = [Heading(level, title)]
    blocks += [
        Para(f"**Warning:** {warning}; `kgit doctor` explains it.")
        for warning in data.get("warnings", [])
    ]
    blocks.append(Para(f"**Hypothesis:** {data['hypothesis']}"))
    blocks.append(Heading(level + 1, "Change"))
    if data["status"] == BASELINE:
        blocks.append(Para("None: the baseline measures the code at the campaign's base."))
    elif data["change"] is None:
        blocks.append(Para("No commit: the round was rolled back before its change was committed."))
    else:
        blocks.append(Code(data["change"]) if data["change"] else Para("(no file changed)"))
    blocks.append(Heading(level + 1, "Results"))
    if data["metric"] and data["aggregate"] is not None:
        runs = f" over {len(data['runs'])} runs" if len(data["runs"]) > 1 else ""
        blocks.append(
            Para(
                f"{data['metric']} ({data['level']} validation{runs}): first pass "
                f"**{num(data['aggregate'])}**; {change(data['vs_best'])} vs best, "
                f"{change(data['vs_baseline'])} vs baseline."
            )
        )
    elif data["metric"] and data["shapes"]:
        failing = not_passing([(s["shape"], s["check"]) for s in data["shapes"]])
        if failing:
            blocks.append(Para(f"No aggregate: {failing}."))
    if data["shapes"]:
        blocks.append(_shape_table(data))
    elif data["aggregate"] is None:
        blocks.append(Para("Nothing was measured."))
    blocks.append(Heading(level + 1, "Decision"))
    blocks.append(Para(f"**{data['decision']}**"))
    if data["reasons"]:
        blocks.append(Bullets(list(data["reasons"])))
    if data["findings"]:
        rows = [[f["where"], f["pattern"], f"`{f['text']}`", f["why"]] for f in data["findings"]]
        blocks.append(
            Para("Real-training applicability: training shortcuts and tampering the round added")
        )
        blocks.append(Table(["where", "pattern", "line", "why"], rows))
    said = [
        f"{name}: {data[key]}"
        for name, key in (("Attribution", "attribution"), ("Next direction", "next_direction"))
        if data[key]
    ]
    if data["lesson"] and not data["rollback"]:
        said.append(f"Lesson: {data['lesson']}")
    if said:
        blocks.append(Bullets(said))
    blocks += _rollback_blocks(data, level)
    return blocks


def _shape_table(data: dict[str, Any]) -> Table:
    """Per-shape results; a % of peak column where the device's peaks are known."""
    with_peak = any(s["pct_of_peak"] is not None for s in data["shapes"])
    rows = [
        [
            s["shape"],
            s["check"],
            num(s["value"]),
            change(s["vs_best"]),
            change(s["vs_baseline"]),
            *([percent(s["pct_of_peak"])] if with_peak else []),
            _snr_text(s["snr_db"]),
        ]
        for s in data["shapes"]
    ]
    # No column of the best's figure: it was measured apart from the pairs, and beside their
    # estimate it read as a contradiction (0.001178 against a best of 0.001941 at +6.032%).
    headers = ["shape", "check", f"{data['metric']}, first pass", "vs best", "vs baseline"]
    return Table([*headers, *(["% of peak"] if with_peak else []), "SNR (dB)"], rows)


def _rollback_blocks(data: dict[str, Any], level: int) -> list[Block]:
    if not data["rollback"]:
        return []
    rb = data["rollback"]
    lines = [f"Change: {rb['change']}", f"Expected: {rb['expected']}", f"Actual: {rb['actual']}"]
    lines += [f"Root cause: {rb['root_cause']}"] if rb["root_cause"] else []
    lines += [f"Lesson: {rb['lesson']}"] if rb["lesson"] else []
    if rb["reason"] and rb["reason"] != rb["root_cause"]:
        lines.append(f"Reason given at rollback: {rb['reason']}")
    return [Heading(level + 1, "Rollback"), Bullets(lines)]


def render_summary(data: dict[str, Any], with_commit: bool = True) -> str:
    return to_markdown(Document(summary_blocks(data, 1, with_commit))).rstrip("\n")


def show_round(
    campaign: RecordReader, number: int, with_csv: bool
) -> tuple[RoundShown, Callable[[RoundShown], str]]:
    """`kgit show`: the data (`commit`, `note`, `csv` as before, plus `summary`) and its text."""
    view = load_round(campaign, number)
    if view is None:
        raise UsageError(f"round-{number} has no record", hint="kgit log lists the recorded rounds")
    data = RoundShown(
        commit=view.commit,
        note=view.note,
        csv=view.csv.decode(errors="replace") if view.csv else None,
        # Every round with its shapes: a shape's change vs baseline chains their estimates.
        summary=summary_data(view, Figures(campaign.all_rounds()), peak_pcts(campaign, view)),
    )

    def render(d: RoundShown) -> str:
        text = render_summary(d.summary)
        return text + (f"\n\nBenchmark CSV:\n{d.csv}" if with_csv and d.csv else "")

    return data, render
