"""The final report `kgit finish` records: a compact Markdown summary of the campaign (target,
result per shape, the accepted lineage, the directions that did not work and their lessons, the
acceptance checks, the branch to merge). `kgit report` renders the full one."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from kgit.views.numbers import change, num, percent, signed
from kgit.views.status_log import github_table

if TYPE_CHECKING:
    from kgit.records.final_results import CampaignFinished, FinalFacts
    from kgit.records.reader import RecordReader


def _gain(vs_baseline: dict[str, Any] | None, pct: float | None) -> str:
    """The change finish measured, spelled as every view spells a change (kgit/views/numbers.py);
    a change without its figure has its bare percentage."""
    return change(vs_baseline) if vs_baseline else signed(pct)


def render_final_report(data: FinalFacts) -> str:
    target = data.target
    lines = [
        f"# kgit campaign {data.campaign}: final acceptance",
        "",
        f"{target.op} on {target.backend}"
        + (f", {target.gpu}" if target.gpu else "")
        + f"; metric {target.metric}.",
        "",
        f"**Result:** {num(data.aggregate)} vs baseline {num(data.baseline_aggregate)}"
        f" ({_gain(data.vs_baseline, data.gain_pct)}), full validation on {len(data.shapes)} "
        "shape(s).",
        "",
    ]
    if data.shapes:
        with_peak = any(s.get("pct_of_peak") is not None for s in data.shapes)
        rows = [
            [
                s["label"],
                num(s["baseline"]),
                num(s["final"]),
                _gain(s.get("vs_baseline"), s["delta_pct"]),
            ]
            + ([percent(s.get("pct_of_peak"))] if with_peak else [])
            for s in data.shapes
        ]
        headers = ["shape", "baseline", "final", "delta"] + (["% of peak"] if with_peak else [])
        lines += [github_table(headers, rows), ""]
    lines += ["## Accepted rounds", ""]
    lines += [f"- round-{r.round} {r.status}: {r.hypothesis}" for r in data.accepted]
    lines += ["- none: the best line is the baseline"] if not data.accepted else []
    lines += ["", "## Directions that did not work", ""]
    lines += [
        f"- round-{r.round}: {r.hypothesis}" + (f" ({r.why})" if r.why else "")
        for r in data.did_not_work
    ] or ["- none"]
    if data.lessons:
        lines += ["", "## Lessons recorded (kgit tips)", ""]
        lines += [
            f"- {t['takeaway']} (signal: {t['signal']}; applies: {t['applicability']})"
            for t in data.lessons
        ]
    return "\n".join(lines + _acceptance_lines(data)) + "\n"


def _acceptance_lines(data: FinalFacts) -> list[str]:
    outside = data.allowed_outside_kernel_source
    return [
        "",
        "## Acceptance",
        "",
        f"- {data.independent_of_notes}",
        f"- test suite `{data.suite.command}`: {'passed' if data.suite.passed else 'FAILED'}",
        f"- full validation: {'; '.join(data.verdict) or '-'}",
        f"- diff against the campaign base: {len(data.changed)} file(s)"
        + (
            f"; outside kernel_source, allowed: {', '.join(outside)}"
            if outside
            else ", all in kernel_source"
        ),
        f"- branch to merge: `{data.final_branch.removeprefix('refs/heads/')}` "
        f"({len(data.final_rounds)} commit(s), one per accepted round)",
    ]


def render_final_note(campaign: RecordReader, data: FinalFacts) -> str:
    """What `kgit finish` records: the acceptance summary, then the full `kgit report`."""
    summary = render_final_report(data)
    try:
        from kgit.views.campaign_report import report_data, report_document
        from kgit.views.document import to_markdown

        full = to_markdown(report_document(report_data(campaign)))
    except Exception as exc:  # a view's bug must not block an acceptance whose checks passed
        print(
            f"kgit: warning: full report not rendered ({type(exc).__name__}: {exc})",
            file=sys.stderr,
        )
        return summary
    return summary + "\n---\n\n" + full


def render_finish(result: CampaignFinished) -> str:
    branch = result.final_branch.removeprefix("refs/heads/")
    squashed = [f"round-{r.round}" for r in result.final_rounds if r.squashed > 1]
    lines = [
        f"campaign {result.campaign} finished: {result.target.metric} "
        f"{num(result.aggregate)} vs baseline {num(result.baseline_aggregate)} "
        f"({_gain(result.vs_baseline, result.gain_pct)}) on all {len(result.shapes)} shapes",
        f"test suite passed: `{result.suite.command}`",
        result.independent_of_notes,
        f"final branch {branch} at {result.final_commit[:10]}: "
        f"{len(result.final_rounds)} commit(s), one per accepted round"
        + (f" ({', '.join(squashed)} squashed)" if squashed else ""),
        f"report: git notes --ref={result.final_notes} show {result.best[:10]}",
        *_trees_line(result),
        f"next: git push origin {branch} (open a pull request), or git merge {branch}",
    ]
    return "\n".join(lines)


def _trees_line(result: CampaignFinished) -> list[str]:
    """The measuring trees finish removed, when it removed any."""
    if not result.trees_removed:
        return []
    freed = result.bytes_freed / 1_000_000
    return [f"removed kgit's {result.trees_removed} measuring trees ({freed:.1f} MB freed)"]
