"""`kgit report`: the campaign's REPORT phase, from the git record alone.

Data first (`report_data`, the `--json` output), then one document (`report_document`) that
renders to Markdown or to a self-contained HTML page.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kgit.judge.figures import figure_dict
from kgit.judge.floor import campaign_floor
from kgit.judge.monotonic import memory_bound
from kgit.judge.rule11 import PATTERNS, added_lines, scan_change
from kgit.judge.termination import termination
from kgit.records.gate_audit import GateAudit
from kgit.records.notes import ROLLED_BACK
from kgit.records.reader import RecordReader
from kgit.records.report_results import (
    Applicability,
    CampaignReport,
    EfficiencyCheck,
    ReportBest,
    RolledBack,
    Termination,
)
from kgit.views.audit_text import audit_data, audit_words
from kgit.views.audit_text import report_blocks as gate_audit_blocks
from kgit.views.document import (
    FAIL_MARK,
    PASS_MARK,
    Block,
    Bullets,
    Document,
    Heading,
    Image,
    Para,
    Table,
)
from kgit.views.numbers import change, num, percent
from kgit.views.record import RoundView, figures_of, load_rounds
from kgit.views.summary import peak_pcts, summary_blocks, summary_data
from kgit.views.trend import (
    TrendLayout,
    best_vs_baseline,
    rule9,
    trend_rows,
    vs_baseline_cell,
)

OK, NO = PASS_MARK, FAIL_MARK  # words, coloured in HTML (kgit/views/document.py)
REACHED, NOT_REACHED = "**reached**", "**not reached**"


def _target(campaign: RecordReader) -> dict[str, Any]:
    m, state = campaign.manifest, campaign.state
    return {
        "op": m.target_op,
        "backend": m.target_backend,
        "lang": m.target_lang,
        "gpu": m.target_gpu,
        "execution_mode": m.execution_mode,
        "metric": m.primary_metric,
        "policy": m.decision_policy,
        "thresholds": vars(m.thresholds),
        "shapes": m.target_shapes,
        "representative_shapes": state.representative,
        "inactive_shapes": state.inactive,
        "kernel_source": m.kernel_source,
        "performance_target": m.performance_target,
        "max_iterations": m.max_iterations,
        "base": state.base,
        "created": state.created,
        "peaks": floor.to_dict() if (floor := campaign_floor(m, state)) else None,
    }


def _efficiency(campaign: RecordReader, best: RoundView | None) -> EfficiencyCheck:
    """Rule 10's "acceptable hardware efficiency", measured as each shape's % of the device's
    peak where the peaks are known (kgit/judge/termination.py never calls it reached)."""
    pcts = {k: v for k, v in (peak_pcts(campaign, best) if best else {}).items() if v is not None}
    floor = campaign_floor(campaign.manifest, campaign.state)
    device = floor.device if floor else None
    return EfficiencyCheck(measured=bool(pcts), device=device, pct_of_peak=pcts)


def _termination(campaign: RecordReader, best: RoundView | None) -> Termination:
    return termination(
        target=campaign.manifest.performance_target,
        best_aggregate=best.note.aggregate if best is not None and best.note is not None else None,
        efficiency=_efficiency(campaign, best),
        rounds_used=campaign.state.next_round - 1,
        max_iterations=campaign.manifest.max_iterations,
        finished=campaign.state.finished,
    )


def _applicability(campaign: RecordReader, best_commit: str) -> Applicability:
    files = campaign.change_files(campaign.state.base, best_commit)
    return Applicability(
        diff=f"{campaign.state.base[:10]}..{best_commit[:10]}",
        files=tuple(sorted(path for path, (_, new) in files.items() if new is not None)),
        added_lines=sum(added_lines(old, new) for old, new in files.values()),
        patterns=tuple(PATTERNS),
        findings=tuple(f.to_dict() for f in scan_change(files)),
        training_step_measured=False,
    )


def _gate_audit(campaign: RecordReader) -> dict[str, Any] | None:
    stored = campaign.state.gate_audit
    return audit_data(GateAudit.from_dict(stored)) if stored else None


def _best(
    best: RoundView | None, commit: str, vs_baseline: dict[str, Any] | None, pct: float | None
) -> ReportBest:
    if best is None:
        return ReportBest(None, commit, None, None, vs_baseline, pct)
    aggregate = best.note.aggregate if best.note else None
    return ReportBest(best.number, commit, best.hypothesis, aggregate, vs_baseline, pct)


def report_data(campaign: RecordReader) -> CampaignReport:
    views = load_rounds(campaign)
    metric = campaign.manifest.primary_metric
    best_commit = campaign.best_commit()
    best = next((v for v in views if v.commit == best_commit), None)
    baseline = next((v for v in views if v.is_baseline), None)
    figures = figures_of(views)
    best_vs = figures.vs_baseline(best.note) if best and best.note else None
    shape_rows = best_vs_baseline(views, best_commit)
    best_pcts = peak_pcts(campaign, best) if best else {}
    for row in shape_rows:
        row["best_pct_of_peak"] = best_pcts.get(row["shape"]) if row["best"] is not None else None
    return CampaignReport(
        campaign=campaign.name,
        target=_target(campaign),
        baseline=summary_data(baseline, figures, peak_pcts(campaign, baseline))
        if baseline
        else None,
        rounds=tuple(
            summary_data(v, figures, peak_pcts(campaign, v)) for v in views if not v.is_baseline
        ),
        best=_best(best, best_commit, figure_dict(best_vs), best_vs.pct if best_vs else None),
        did_not_work=tuple(
            RolledBack(v.number, v.hypothesis, v.rollback_reason)
            for v in views
            if v.status == ROLLED_BACK
        ),
        memory_bound=memory_bound(metric),
        trend=tuple(trend_rows(views, metric)),
        rule9=rule9(views, metric, campaign.best_line()),
        best_vs_baseline=tuple(shape_rows),
        termination=_termination(campaign, best),
        applicability=_applicability(campaign, best_commit),
        gate_audit=_gate_audit(campaign),
        views=tuple(views),
        policy_words=campaign.policy_words(),
    )


# -- the document ----------------------------------------------------------------------------


def _target_blocks(data: CampaignReport) -> list[Block]:
    t = data.target
    shapes = ", ".join(
        s["label"] + (f" ({s['M']}×{s['N']}×{s['K']})" if {"M", "N", "K"} <= set(s) else "")
        for s in t["shapes"]
    )
    return [
        Heading(2, "Target"),
        Bullets(
            [
                f"Op: `{t['op']}`, backend {t['backend']}"
                + (f" ({t['lang']})" if t["lang"] else "")
                + f", GPU: {t['gpu'] or 'not recorded'}, {t['execution_mode']}",
                f"Primary metric: **{t['metric']}** (geomean over PASS shapes)",
                f"Decision policy: `{t['policy']}` ({data.policy_words})",
                f"Target shapes ({len(t['shapes'])}): {shapes}",
                "Representative (quick) shapes: " + (", ".join(t["representative_shapes"]) or "-"),
                "Kernel source: " + (", ".join(f"`{p}`" for p in t["kernel_source"]) or "-"),
                f"Performance target: {t['performance_target'] or 'not set'}; "
                f"max_iterations: {t['max_iterations']}",
                f"Campaign base: `{t['base'][:10]}`, created {t['created']}",
            ]
        ),
    ]


def _baseline_blocks(data: CampaignReport) -> list[Block]:
    base = data.baseline
    if base is None:
        return [Heading(2, "Baseline"), Para("No baseline recorded.")]
    with_peak = any(s["pct_of_peak"] is not None for s in base["shapes"])
    rows = [
        [
            s["shape"],
            s["check"],
            num(s["value"]),
            *([percent(s["pct_of_peak"])] if with_peak else []),
            ", ".join(f"{k} {v:.1f}" for k, v in s["snr_db"].items()) or "-",
        ]
        for s in base["shapes"]
    ]
    headers = ["shape", "check", data.target["metric"], *(["% of peak"] if with_peak else [])]
    return [
        Heading(2, "Baseline (round-1)"),
        Para(
            f"Commit `{(base['commit'] or '')[:10]}`, full validation: aggregate "
            f"**{num(base['aggregate'])}** {data.target['metric']}."
        ),
        Table([*headers, "SNR (dB)"], rows),
    ]


def _best_blocks(data: CampaignReport) -> list[Block]:
    best = data.best
    if best.round is None:
        text = f"The best line is at `{best.commit[:10]}`, which holds no round record."
    elif best.round == 1:
        text = "The best line is still the baseline: no round was accepted."
    else:
        text = (
            f"round-{best.round} (`{best.commit[:10]}`): {best.hypothesis} — "
            f"{change(best.vs_baseline)} vs baseline; first pass "
            f"**{num(best.aggregate)}** on its shapes."
        )
    blocks: list[Block] = [Heading(2, "Current best"), Para(text)]
    failed = [
        f"round-{r.round}: {r.hypothesis} — {r.reason or 'no reason recorded'}"
        for r in data.did_not_work
    ]
    blocks += [
        Heading(2, "Directions that did not work"),
        Bullets(failed) if failed else Para("None."),
    ]
    return blocks


def trend_blocks(
    metric: str, bound: bool, trend: Sequence[dict[str, Any]], rule: dict[str, Any]
) -> list[Block]:
    """The trend table (its rows: kgit/views/trend.py) and the rule-9 line (RULE); BOUND: the
    campaign is memory-bound."""
    layout = TrendLayout.for_metric(metric)
    blocks: list[Block] = [Heading(2, "Performance trend")]
    if bound:
        blocks.append(
            Para(
                f"Memory-bound campaign ({metric}): the trend uses the GB/s "
                "columns instead of TFLOPS, and the primary metric where the GEMM table has "
                "Combined Step TFLOPS."
            )
        )
    blocks.append(
        Para(
            "Avg = geomean over PASS shapes, Peak = per-shape max, of the round's first pass; "
            "vs Baseline is the round's change (the A/B pairs' estimate where it has pairs), then "
            "its first pass against the baseline's on the round's own shapes."
        )
    )
    rows = [
        [
            f"round-{r['round']}",
            r["status"],
            r["description"],
            *(num(r["values"][key]) for key, _ in layout.columns),
            vs_baseline_cell(r) or "-",
            r["key_finding"] or "-",
        ]
        for r in trend
    ]
    blocks.append(Table(layout.headers, rows))
    if rule["ok"]:
        text = (
            f"{OK} {rule['value']} never decreased by more than {rule['noise_pct']:g}% along "
            f"the accepted rounds ({len(rule['steps'])} steps checked)."
        )
    else:
        bad = [s for s in rule["steps"] if s["round"] in rule["offending_rounds"]]
        text = f"{NO} {rule['value']} decreased along accepted rounds: " + "; ".join(
            f"round-{s['round']} {s['change_pct']:+.3f}% ({s['basis']}) after round-{s['after']}"
            for s in bad
        )
    if rule["unchecked_rounds"]:
        text += " Not checkable (no bench CSV): " + ", ".join(
            f"round-{n}" for n in rule["unchecked_rounds"]
        )
    blocks += [
        Heading(3, "Rule 9: the step metric never decreases along accepted rounds"),
        Para(text),
    ]
    return blocks


def _shape_blocks(data: CampaignReport) -> list[Block]:
    with_peak = any(r["best_pct_of_peak"] is not None for r in data.best_vs_baseline)
    rows = [
        [
            r["shape"],
            num(r["baseline"]),
            num(r["best"]) if r["best"] is not None else "not measured at best",
            f"{r['speedup']:.3f}x" if r["speedup"] else "-",
            change(r["vs_baseline"]),
            *([percent(r["best_pct_of_peak"])] if with_peak else []),
        ]
        for r in data.best_vs_baseline
    ]
    metric = data.target["metric"]
    headers = [
        "shape",
        f"baseline {metric}, first pass",
        f"best {metric}, first pass",
        "speedup",
        "vs baseline",
    ]
    return [
        Heading(2, "Best vs baseline, per shape"),
        Para(
            "Speedup and vs baseline: the best line's change (the A/B pairs' estimate where it "
            "has pairs); the first passes are shown as measured, not divided."
        ),
        Table([*headers, *(["best % of peak"] if with_peak else [])], rows),
    ]


def _termination_blocks(data: CampaignReport) -> list[Block]:
    # A stop condition is reached or not: "FAIL" would call an unfinished campaign an error.
    t = data.termination
    target = t.target
    if target.target is None:
        target_line = f"{NOT_REACHED} performance target: none set in the manifest"
    elif not target.checkable:
        target_line = (
            f"{NOT_REACHED} performance target: {target.target!r} is not numeric (check by hand)"
        )
    else:
        mark = REACHED if target.reached else NOT_REACHED
        target_line = (
            f"{mark} performance target {target.target}: best aggregate "
            f"{num(target.best_aggregate)}"
        )
    it = t.max_iterations
    return [
        Heading(2, "Termination check"),
        Bullets(
            [
                target_line,
                _efficiency_line(t.hardware_efficiency),
                f"{REACHED if it.reached else NOT_REACHED} max_iterations: {it.used} of {it.max} rounds used",
                f"{REACHED if t.user_stop.reached else NOT_REACHED} user stop: "
                + (
                    "the campaign is marked finished"
                    if t.user_stop.reached
                    else "the campaign is not finished"
                ),
            ]
        ),
    ]


def _efficiency_line(e: EfficiencyCheck) -> str:
    if not e.measured:
        return f"{NOT_REACHED} acceptable hardware efficiency: not measured (no device peaks known: set peaks: in the manifest)"
    pcts = e.pct_of_peak.values()
    return (
        f"{NOT_REACHED} acceptable hardware efficiency: not judged (no efficiency target); the best line "
        f"runs at {min(pcts):.1f}-{max(pcts):.1f}% of the {e.device} peak"
    )


def _applicability_blocks(data: CampaignReport) -> list[Block]:
    a = data.applicability
    checked = [
        f"Training-shortcut check of the best line's change vs the campaign base (`{a.diff}`: "
        f"{len(a.files)} file(s), {a.added_lines} added lines; every round's change is "
        "checked at validate and accept, and a finding rolls it back) for: "
        + ", ".join(a.patterns),
        "Not checked: a real training step (none recorded).",
    ]
    blocks: list[Block] = [Heading(2, "Real-training applicability"), Bullets(checked)]
    if a.findings:
        rows = [[f["where"], f["pattern"], f"`{f['text']}`", f["why"]] for f in a.findings]
        blocks += [
            Para(f"{NO} {len(rows)} finding(s):"),
            Table(["where", "pattern", "line", "why"], rows),
        ]
    else:
        blocks.append(Para(f"{OK} no flagged pattern in the added lines."))
    return blocks


def report_document(data: CampaignReport) -> Document:
    t = data.target
    doc = Document()
    doc.add(Heading(1, f"kgit report: {data.campaign}"))
    doc.add(
        Para(
            f"{t['op']} on {t['backend']}, {t['gpu'] or 'GPU not recorded'}; metric {t['metric']}."
        )
    )
    doc.add(*_target_blocks(data), *_baseline_blocks(data))
    doc.add(Heading(2, "Rounds"))
    for summary in data.rounds:
        doc.add(*summary_blocks(summary, level=3))
    doc.add(
        *_best_blocks(data),
        *trend_blocks(data.target["metric"], data.memory_bound, data.trend, data.rule9),
        *_shape_blocks(data),
    )
    doc.add(*_termination_blocks(data), *_applicability_blocks(data))
    doc.add(*gate_audit_blocks(data.gate_audit, data.best.commit))
    if data.gate_audit_background:
        doc.add(Para(audit_words(data.gate_audit_background)))
    if data.plots:
        doc.add(Heading(2, "Plots"))
        doc.add(*(Image(Path(p).stem.replace("_", " "), Path(p)) for p in data.plots))
    return doc


def plots_for(data: CampaignReport, campaign: RecordReader, folder: Path) -> list[Path]:
    from kgit.views.plots import write_plots

    labels = [
        label for label in campaign.state.representative if label not in campaign.state.inactive
    ]
    return write_plots(
        folder,
        list(data.views),
        campaign.manifest.primary_metric,
        labels,
        list(data.best_vs_baseline),
        campaign.best_line(),
    )
