"""The text of `kgit status` and `kgit log`, from the data the engine read
(kgit/engine/status.py, kgit/engine/lineage.py: the `--json` output)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kgit.records.lineage_results import PAIRED, Lineage, LineageRow
from kgit.records.notes import ACCEPT, BASELINE, CHANGED, ROLLBACK
from kgit.records.reader import RecordReader
from kgit.views.numbers import change, num

if TYPE_CHECKING:  # what status renders: not loaded by `kgit log`
    from kgit.records.status_results import CampaignStatus


def render_status(data: CampaignStatus) -> str:
    target, best = data.target, data.best
    lines = [
        f"campaign  {data.campaign}  ({target.op}, {target.backend}"
        + (f", {target.gpu}" if target.gpu else "")
        + f"; metric {target.metric})",
        f"best      {best.ref.removeprefix('refs/heads/')} at {best.commit[:10]}"
        + (
            f", round-{best.round}, first pass {num(best.aggregate)}, "
            f"{change(best.vs_baseline)} vs baseline"
            if best.round
            else ""
        ),
        f"rounds    {data.rounds_recorded} recorded: {data.accepted} accepted, "
        f"{data.rolled_back} rolled back; next is round-{data.next_round} "
        f"(max_iterations {data.max_iterations})",
    ]
    current = data.open_round
    if current:
        lines.append(
            f"open      round-{current.round}: {current.hypothesis}"
            + (f" [verdict: {current.verdict}]" if current.verdict else "")
        )
    if len(data.rounds_in_flight) > 1:
        shown = ", ".join(f"round-{number}" for number in data.rounds_in_flight)
        lines.append(f"parallel  {shown} in flight, each in its own work tree")
    lines += _recovery_lines(data)
    lines += gate_audit_lines(data.gate_audit, best.commit)
    lines += background_audit_lines(data.gate_audit_background)
    if data.stagnation_review_due:
        lines.append(
            f"warning   {data.consecutive_rollbacks} rollbacks in a row: stagnation "
            f"review due; escalate: {data.escalation}"
        )
    elif data.escalation:
        lines.append(f"note      last round rolled back; next: {data.escalation}")
    if data.finished:
        lines.append("finished  yes")
    lines.append(f"next      {data.next_step}")
    return "\n".join(lines)


def background_audit_lines(state: dict[str, Any] | None) -> list[str]:
    """`kgit status`'s line about the baseline's audit in the background, while it runs or once
    it was interrupted (kgit/engine/guards/audit_background.py)."""
    if state is None:
        return []
    if state["running"]:
        return [f"gate      the baseline's audit is running in the background (pid {state['pid']})"]
    return [
        f"warning   the baseline's gate audit was interrupted (pid {state['pid']}), nothing "
        f"recorded; run it again: {state['rerun']}"
    ]


def gate_audit_lines(summary: dict[str, Any] | None, best_commit: str) -> list[str]:
    """`kgit status`'s line about the latest audit (nothing when none was recorded)."""
    if summary is None:
        return []
    older = "" if summary["commit"] == best_commit else " (an earlier best line)"
    where = f"gate audit of {summary['commit'][:10]}{older}"
    if summary["error"]:
        return [
            f"warning   {where} could not judge: {summary['error'].removeprefix('gate audit: ')}"
        ]
    weak = summary["survived"] or summary["unexercised"]
    text = f"{where}: {summary['caught']} of {summary['tried']} mutants caught"
    if summary.get("unreached"):
        text += f" ({summary['unreached']} in code neither the gate nor the shapes run)"
    if not weak:
        return [f"gate      {text}"]
    survivors = ", ".join(s.split(" ", 1)[0] for s in summary["survivors"][:3])
    more = " ..." if len(summary["survivors"]) > 3 else ""
    never = f"; never loads {', '.join(summary['unexercised'])}" if summary["unexercised"] else ""
    return [
        f"warning   {text}, {summary['survived']} SURVIVED"
        + (f" ({survivors}{more})" if survivors else "")
        + f"{never}: the gate passes wrong kernels; kgit gate audit shows them"
    ]


def _recovery_lines(data: CampaignStatus) -> list[str]:
    """What a killed command left, in words (the next step says how to go on)."""
    lines = []
    if not data.trusted:
        lines.append(
            "warning   this campaign's commands are not trusted in this repository (its record "
            "came from elsewhere, or its manifest changed): nothing runs them until "
            f"kgit trust --campaign {data.campaign}"
        )
    if not data.gate_installed:
        lines.append(
            "warning   the commit gate is not installed in this clone: commits on round "
            "branches are not gated here (round validate still gates each one); install it: "
            + ("kgit trust, then " if not data.trusted else "")
            + "kgit hooks install"
        )
    if data.notes_changed:
        rounds = ", ".join(f"round-{n}" for n in data.notes_changed)
        lines.append(
            f"warning   the note(s) of {rounds} changed after kgit wrote them (kgit reads what it "
            "recorded): kgit doctor explains"
        )
    lines += [
        f"warning   unstaged edits saved by an interrupted commit gate: git apply {path} "
        "(then delete it)"
        for path in data.saved_patches
    ]
    stale = data.closed_round_checked_out
    if stale is not None:
        lines.append(
            f"warning   round-{stale} is closed but its branch is checked out (a kgit command "
            "was killed before it switched away); the hook refuses commits here"
        )
    if data.stray_branches:
        lines.append(
            f"warning   leftover round branch(es): {', '.join(data.stray_branches)}; "
            "kgit doctor explains them (the next round start removes those whose commits are kept)"
        )
    return lines + _best_and_round_lines(data)


def _best_and_round_lines(data: CampaignStatus) -> list[str]:
    """A best line moved outside kgit; the open round's interrupted or missing steps."""
    lines = []
    moved = data.best_moved
    if moved:
        lines.append(
            f"warning   the best line was moved outside kgit: it is at {moved.tip[:10]}, the "
            f"record puts it at {moved.recorded[:10]}; rounds are refused until it is put "
            f"back: {moved.restore}"
        )
    current = data.open_round
    if current and current.interrupted == ACCEPT:
        lines.append(
            f"warning   accepting round-{current.round} was interrupted after the best line "
            "moved to its commit: kgit round accept completes it, kgit round rollback moves "
            "the best line back"
        )
    elif current and current.interrupted == ROLLBACK:
        lines.append(
            f"warning   rolling back round-{current.round} was interrupted; rollback completes it"
        )
    elif current and current.branch_missing:
        lines.append(
            f"warning   round-{current.round} is open but its branch is gone; kgit doctor "
            "--fix restores it"
        )
    elif current and data.branch != current.branch:
        lines.append(f"warning   round-{current.round} is open but its branch is not checked out")
    return lines


def github_table(headers: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured Markdown table, left-aligned.

    `kgit log` renders its table here rather than through tabulate: importing tabulate costs
    60-130 ms (it loads importlib.metadata), up to a third of the log's 0.3 s budget at 1,000
    rounds, and its github format pads every header by two more blanks, so a swap would change
    the output too. With no rows (a campaign before its baseline) it is the header alone.
    """
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), rule, *map(line, rows)])


# Under the log when full and quick aggregates sit in one column: on an H200 the RMSNorm demo's
# baseline read 2214 (four shapes) and its accepted round 2025 (three), at +9.350%.
SHAPES_LEGEND = (
    "first pass: geomean of the round's first pass over its shapes, all target shapes (full) or "
    "the representative ones (quick); the two do not compare. A '(first pass)' change compares "
    "the shapes both rounds measured."
)
# Under the log whenever a change comes from pairs (kgit/judge/figures.py defines each figure).
CHANGES_LEGEND = (
    "'vs best' and 'vs baseline': the A/B pairs' estimate with its confidence interval (chained: "
    "multiplied along the accepted rounds back to the baseline, intervals added in quadrature); "
    "'(first pass)': no pairs, the first pass on the shapes both rounds measured."
)


def _said(row: LineageRow) -> str:
    """What the user said when closing the round: `reason: ...; lesson: ...` ('' if nothing)."""
    words = [("reason", row.reason), ("attribution", row.attribution), ("lesson", row.lesson)]
    return "; ".join(f"{key}: {text}" for key, text in words if text)


def quick_is_subset(campaign: RecordReader) -> bool:
    """Whether quick validations measure fewer shapes than full ones (inactive shapes, failing
    at baseline, are in neither)."""
    inactive = set(campaign.state.inactive)
    active = {shape["label"] for shape in campaign.manifest.target_shapes} - inactive
    return len(set(campaign.state.representative) - inactive) < len(active)


def _baseline_figures(rows: Sequence[LineageRow]) -> str:
    """Which baseline figure a round's 'vs baseline' is against, where the baseline row's own
    aggregate does not give it: a round measured on fewer shapes, or by resident harnesses (its
    first pass in blocks, against the calibration's blocks). In a CPU session round-2 read
    0.0005718 at +416% beside a baseline row of 0.0001349, which gives +324%."""
    from kgit.judge.scoring import pct  # the log's alone: `kgit status` does not load scoring

    base = next((r for r in rows if r.status == BASELINE and r.aggregate), None)
    groups: dict[str, list[int]] = {}
    for row in rows:
        vs, figure = row.delta_vs_baseline_pct, row.baseline_aggregate
        if row is base or vs is None or not row.aggregate or not figure:
            continue
        if (row.vs_baseline or {}).get("basis") == PAIRED:
            continue  # the pairs' figure, against no aggregate
        if (
            base is not None
            and base.aggregate
            and abs(pct(row.aggregate, base.aggregate) - vs) < 0.0005
        ):
            continue  # the table's own figures give it
        groups.setdefault(num(figure), []).append(row.round)
    return "\n".join(
        f"'vs baseline' of {', '.join(f'round-{n}' for n in numbers)}: against {figure}, the "
        "baseline on the same shapes, measured the same way"
        for figure, numbers in groups.items()
    )


# A hypothesis is cut to this many characters in the log's table, unless `kgit log -v`.
HYPOTHESIS_WIDTH = 60


def _hypothesis(text: str, whole: bool) -> str:
    if whole or len(text) <= HYPOTHESIS_WIDTH:
        return text
    return text[: HYPOTHESIS_WIDTH - 1].rstrip() + "…"


def render_log(lineage: Lineage, quick_is_subset: bool = False, whole: bool = False) -> str:
    """The log's table; `quick_is_subset` when quick rounds measure fewer shapes than the full
    ones, and a legend says so if both kinds of aggregate are in the table. A long hypothesis
    is cut, marked `…` and said to be, unless WHOLE (`kgit log -v`)."""
    rows = lineage.rows
    table = [
        [
            f"round-{r.round}",
            r.status,
            (r.commit or "(no commit)")[:11],
            num(r.aggregate),
            r.level or "-",
            change(r.vs_baseline),
            change(r.vs_best),
            _hypothesis(r.hypothesis, whole),
        ]
        for r in rows
    ]
    headers = ["round", "status", "commit", "first pass", "shapes", "vs baseline", "vs best",
               "hypothesis"]  # fmt: skip
    text = github_table(headers, table)
    if not rows:
        text += "\nno round recorded yet: kgit baseline records round-1"
    if quick_is_subset and len({r.level for r in rows if r.aggregate is not None}) > 1:
        text += "\n" + SHAPES_LEGEND
    if any((r.vs_best or {}).get("basis") == PAIRED for r in rows):
        text += "\n" + CHANGES_LEGEND
    against = _baseline_figures(rows)
    if against:
        text += "\n" + against
    if not whole and any(len(r.hypothesis) > HYPOTHESIS_WIDTH for r in rows):
        text += (
            f"\nhypotheses marked … are cut at {HYPOTHESIS_WIDTH} characters: kgit log -v shows "
            "them whole (and --json always does)"
        )
    said = [(r.round, _said(r)) for r in rows if _said(r)]
    if said:
        text += "\n\n" + "\n".join(f"round-{number}: {words}" for number, words in said)
    for row in rows:
        if row.note:
            what = "changed after kgit wrote it" if row.note == CHANGED else "was removed"
            text += (
                f"\nwarning: note of round-{row.round} {what} (this log shows what kgit "
                "recorded; kgit doctor explains)"
            )
    return text
