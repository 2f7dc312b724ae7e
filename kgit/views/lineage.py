"""Read-only views of a campaign: `kgit status`, `kgit log`, `kgit show`.

Each view is data first (a dict or a list of dicts, the `--json` output) and text second.
"""

from __future__ import annotations

import json
from typing import Any

from kgit.engine.campaign import Campaign, write_cache
from kgit.engine.hooks import hooks_missing
from kgit.engine.recovery import (
    ACCEPT,
    ROLLBACK,
    closed_round_checked_out,
    interrupted_close,
    stray_round_branches,
)
from kgit.engine.seal import CHANGED, UNRECORDED, drifts
from kgit.engine.trust import trust_of
from kgit.judge.escalation import consecutive_rollbacks, escalation, stagnation_review_due
from kgit.judge.scoring import pct
from kgit.records.gate_audit import GateAudit
from kgit.records.names import parse_round_branch
from kgit.records.notes import ACCEPTING, BASELINE, ROLLED_BACK, RoundNote
from kgit.views.numbers import num, signed


def log_rows(campaign: Campaign, rounds: list[tuple[str, RoundNote]]) -> list[dict[str, Any]]:
    """The whole lineage, rejected rounds included, as kgit recorded it; `note` says when the
    round's note on the notes ref differs from that record (changed or missing)."""
    baseline = rounds[0][1] if rounds and rounds[0][1].status == BASELINE else None
    drifted = {d.target: d.how for d in drifts(campaign, ["rounds"]) if d.how != UNRECORDED}
    rows = []
    for commit, note in rounds:
        vs_base = note.delta_vs_baseline_pct
        # Older notes carry no delta: derived from the aggregates only over the same shapes.
        if vs_base is None and baseline and note.aggregate and baseline.aggregate:
            if note is baseline:
                vs_base = 0.0
            elif note.level == baseline.level:
                vs_base = pct(note.aggregate, baseline.aggregate)
        rows.append(
            {
                "round": note.round,
                "status": note.status,
                "hypothesis": note.hypothesis,
                "aggregate": note.aggregate,
                "delta_vs_baseline_pct": vs_base,
                "delta_vs_best_pct": note.delta_vs_best_pct,
                "level": note.level,
                "commit": commit,
                "decided_at": note.decided_at,
                "decision": note.decision,
                "reason": note.rollback_reason,
                "attribution": note.attribution,
                "lesson": note.lesson,
                "note": drifted.get(commit),
            }
        )
    for lost in campaign.state.abandoned:  # rolled back before any commit: no note to hold them
        rows.append(
            {
                "round": lost["round"],
                "status": ROLLED_BACK,
                "hypothesis": lost["hypothesis"],
                "aggregate": None,
                "delta_vs_baseline_pct": None,
                "delta_vs_best_pct": None,
                "level": None,
                "commit": None,
                "decided_at": lost["at"],
                "decision": ROLLED_BACK,
                "reason": lost.get("reason"),
                "attribution": None,
                "lesson": lost.get("lesson"),
                "note": None,
            }
        )
    return sorted(rows, key=lambda row: row["round"])


def lineage(campaign: Campaign) -> list[dict[str, Any]]:
    """`log_rows` of every round, cached in .git/kgit/cache/ under the commits of the notes ref
    and the campaign record it was computed from: any new note or state moves one of them.
    At 1,000 rounds this saves listing, loading and building every note (~70 ms of 0.3 s)."""
    key = [campaign.notes_at_load, campaign.record_sha]
    path = campaign.repo.kgit_dir() / "cache" / f"lineage-{campaign.name}.json"
    try:
        cached = json.loads(path.read_bytes())
        if cached.get("key") == key and key[0]:
            return list(cached["rows"])
    except (OSError, ValueError, AttributeError):
        pass
    rows = log_rows(campaign, campaign.all_rounds(with_shapes=False))
    if key[0]:
        write_cache(path, {"key": key, "rows": rows})
    return rows


def status_data(campaign: Campaign, branch: str | None) -> dict[str, Any]:
    rows = lineage(campaign)
    recorded = [row for row in rows if row["commit"]]
    best_tip = campaign.best_at_load or campaign.best_tip()
    best_row = next((row for row in recorded if row["commit"] == best_tip), None)
    parsed = parse_round_branch(branch)
    here = (
        campaign.state.open_numbered(parsed[1]) if parsed and parsed[0] == campaign.name else None
    )
    open_round = here or campaign.state.open_round  # this work tree's round, else the oldest
    statuses = [row["status"] for row in rows]
    stall = consecutive_rollbacks(statuses)
    data: dict[str, Any] = {
        "campaign": campaign.name,
        "target": {
            "op": campaign.manifest.target_op,
            "backend": campaign.manifest.target_backend,
            "gpu": campaign.manifest.target_gpu,
            "metric": campaign.manifest.primary_metric,
        },
        "branch": branch,
        "baselined": campaign.state.baselined,
        "finished": campaign.state.finished,
        "best": {
            "ref": campaign.refs.best,
            "commit": best_tip,
            "round": best_row["round"] if best_row else None,
            "aggregate": best_row["aggregate"] if best_row else None,
        },
        "baseline_aggregate": recorded[0]["aggregate"] if recorded else None,
        "rounds_recorded": len(statuses),
        "accepted": sum(status in ACCEPTING for status in statuses),
        "rolled_back": statuses.count(ROLLED_BACK),
        "next_round": campaign.state.next_round,
        "max_iterations": campaign.manifest.max_iterations,
        "representative_shapes": campaign.state.representative,
        "open_round": None,
        # Every round in flight (several at once when each has its own work tree).
        "rounds_in_flight": [found.number for found in campaign.state.open_rounds],
        "consecutive_rollbacks": stall,
        # A finished campaign has no next round to review or escalate.
        "stagnation_review_due": stagnation_review_due(stall) and not campaign.state.finished,
        "escalation": None if campaign.state.finished else escalation(stall),
        # A closed round's branch still checked out (a kill at the end of accept or rollback).
        "closed_round_checked_out": closed_round_checked_out(campaign, branch),
        # Round branches no open round owns (kgit doctor explains each).
        "stray_branches": [b.short for b in stray_round_branches(campaign)],
        # Unstaged edits the commit gate set aside and could not put back (a killed commit).
        "saved_patches": saved_patches(campaign),
        # Whether this repository approves the manifest's commands (kgit/engine/trust.py).
        "trusted": trust_of(campaign).trusted,
        # Whether kgit's commit gate is installed in this clone (a clone gets no hooks).
        "gate_installed": not hooks_missing(campaign.repo),
        # Rounds whose note on the notes ref differs from what kgit recorded (kgit doctor).
        "notes_changed": [row["round"] for row in rows if row.get("note")],
        # The latest gate audit's counts and survivors (kgit gate audit), None before any.
        "gate_audit": _gate_audit(campaign),
    }
    if open_round:
        tip = campaign.repo.rev_parse(campaign.refs.round_branch(open_round.number))
        has_commit = tip is not None and tip != open_round.parent
        # The round's own verdict: with no commit yet the tip is the best line's commit, whose
        # row is an earlier round's.
        row = next(
            (r for r in recorded if r["commit"] == tip and r["round"] == open_round.number), None
        )
        gate = campaign.read_gate(campaign.repo.tree_of(tip)) if has_commit and tip else None
        data["open_round"] = {
            "round": open_round.number,
            "hypothesis": open_round.hypothesis,
            "branch": campaign.refs.round_branch(open_round.number),
            "has_commit": has_commit,
            "branch_missing": tip is None,
            "verdict": row["decision"] if row else None,
            # The commit gate's result on the tip's tree: None when never gated (--no-verify).
            "gate": None if gate is None else ("passed" if gate.passed else "failed"),
            # "accept" or "rollback" when one was killed half-way (kgit/engine/recovery.py).
            "interrupted": interrupted_close(
                open_round,
                tip,
                best_tip,
                row["status"] if row and row["round"] == open_round.number else None,
            ),
        }
    data["next_step"] = next_step(data)
    return data


def next_step(data: dict[str, Any]) -> str:
    if not data["trusted"] and not data["finished"]:
        return f"kgit trust --campaign {data['campaign']}"
    if not data.get("gate_installed", True) and not data["finished"]:
        return "kgit hooks install"
    if not data["baselined"]:
        return "kgit baseline"
    if data["finished"]:
        return "the campaign is finished: kgit log"
    current = data["open_round"]
    best = data["best"]["ref"].removeprefix("refs/heads/")
    if current is None:
        if data["closed_round_checked_out"] is not None:
            return f"git checkout {best}"
        return 'kgit round start "HYPOTHESIS"'
    if current["interrupted"] == ROLLBACK:
        return 'kgit round rollback --reason "..."'
    if current["branch_missing"]:
        return "kgit doctor --fix"
    if data["branch"] != current["branch"]:
        return f"git checkout {current['branch'].removeprefix('refs/heads/')}"
    if current["interrupted"] == ACCEPT and current["verdict"] in ACCEPTING:
        return "kgit round accept"
    if not current["has_commit"]:
        return "edit the kernel, then git commit (the hook gates it)"
    if current["verdict"] is None and current.get("gate") == "failed":
        return "fix the kernel and commit again (the correctness gate failed on this commit)"
    if current["verdict"] is None:
        return "kgit round validate"
    if current["verdict"] in ACCEPTING:
        return "kgit round accept"
    return 'kgit round rollback --reason "..."'


def render_status(data: dict[str, Any]) -> str:
    target = data["target"]
    best = data["best"]
    lines = [
        f"campaign  {data['campaign']}  ({target['op']}, {target['backend']}"
        + (f", {target['gpu']}" if target["gpu"] else "")
        + f"; metric {target['metric']})",
        f"best      {best['ref'].removeprefix('refs/heads/')} at {best['commit'][:10]}"
        + (f", round-{best['round']}, aggregate {num(best['aggregate'])}" if best["round"] else ""),
        f"rounds    {data['rounds_recorded']} recorded: {data['accepted']} accepted, "
        f"{data['rolled_back']} rolled back; next is round-{data['next_round']} "
        f"(max_iterations {data['max_iterations']})",
    ]
    if data["open_round"]:
        current = data["open_round"]
        lines.append(
            f"open      round-{current['round']}: {current['hypothesis']}"
            + (f" [verdict: {current['verdict']}]" if current["verdict"] else "")
        )
    if len(data.get("rounds_in_flight", [])) > 1:
        shown = ", ".join(f"round-{number}" for number in data["rounds_in_flight"])
        lines.append(f"parallel  {shown} in flight, each in its own work tree")
    lines += _recovery_lines(data)
    lines += gate_audit_lines(data.get("gate_audit"), best["commit"])
    if data["stagnation_review_due"]:
        lines.append(
            f"warning   {data['consecutive_rollbacks']} rollbacks in a row: stagnation "
            f"review due; escalate: {data['escalation']}"
        )
    elif data["escalation"]:
        lines.append(f"note      last round rolled back; next: {data['escalation']}")
    if data["finished"]:
        lines.append("finished  yes")
    lines.append(f"next      {data['next_step']}")
    return "\n".join(lines)


def _gate_audit(campaign: Campaign) -> dict[str, Any] | None:
    stored = campaign.state.gate_audit
    return GateAudit.from_dict(stored).summary() if stored else None


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


def saved_patches(campaign: Campaign) -> list[str]:
    folder = campaign.repo.kgit_dir() / "patches"
    return [str(p) for p in sorted(folder.glob("*.patch"))] if folder.is_dir() else []


def _recovery_lines(data: dict[str, Any]) -> list[str]:
    """What a killed command left, in words (the next step says how to go on)."""
    lines = []
    if not data["trusted"]:
        lines.append(
            "warning   this campaign's commands are not trusted in this repository (its record "
            "came from elsewhere, or its manifest changed): nothing runs them until "
            f"kgit trust --campaign {data['campaign']}"
        )
    if not data.get("gate_installed", True):
        lines.append(
            "warning   the commit gate is not installed in this clone: commits on round "
            "branches are not gated here (round validate still gates each one); install it: "
            + ("kgit trust, then " if not data["trusted"] else "")
            + "kgit hooks install"
        )
    if data["notes_changed"]:
        rounds = ", ".join(f"round-{n}" for n in data["notes_changed"])
        lines.append(
            f"warning   the note(s) of {rounds} changed after kgit wrote them (kgit reads what it "
            "recorded): kgit doctor explains"
        )
    lines += [
        f"warning   unstaged edits saved by an interrupted commit gate: git apply {path} "
        "(then delete it)"
        for path in data.get("saved_patches", [])
    ]
    stale = data["closed_round_checked_out"]
    if stale is not None:
        lines.append(
            f"warning   round-{stale} is closed but its branch is checked out (a kgit command "
            "was killed before it switched away); the hook refuses commits here"
        )
    if data["stray_branches"]:
        lines.append(
            f"warning   leftover round branch(es): {', '.join(data['stray_branches'])}; "
            "kgit doctor explains them (the next round start removes those whose commits are kept)"
        )
    current = data["open_round"]
    if current and current["interrupted"] == ACCEPT:
        lines.append(
            f"warning   accepting round-{current['round']} was interrupted after the best line "
            "moved to its commit: kgit round accept completes it, kgit round rollback moves "
            "the best line back"
        )
    elif current and current["interrupted"] == ROLLBACK:
        lines.append(
            f"warning   rolling back round-{current['round']} was interrupted; rollback "
            "completes it"
        )
    elif current and current["branch_missing"]:
        lines.append(
            f"warning   round-{current['round']} is open but its branch is gone; kgit doctor "
            "--fix restores it"
        )
    elif current and data["branch"] != current["branch"]:
        lines.append(
            f"warning   round-{current['round']} is open but its branch is not checked out"
        )
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
    "aggregate: geomean over the round's shapes, all target shapes (full) or the representative "
    "ones (quick); the two do not compare. 'vs baseline' and 'vs best' compare the shapes both "
    "rounds measured."
)


def _said(row: dict[str, Any]) -> str:
    """What the user said when closing the round: `reason: ...; lesson: ...` ('' if nothing)."""
    words = [(key, row.get(key)) for key in ("reason", "attribution", "lesson")]
    return "; ".join(f"{key}: {text}" for key, text in words if text)


def quick_is_subset(campaign: Campaign) -> bool:
    """Whether quick validations measure fewer shapes than full ones (inactive shapes, failing
    at baseline, are in neither)."""
    inactive = set(campaign.state.inactive)
    active = {shape["label"] for shape in campaign.manifest.target_shapes} - inactive
    return len(set(campaign.state.representative) - inactive) < len(active)


def render_log(rows: list[dict[str, Any]], quick_is_subset: bool = False) -> str:
    """The log's table; `quick_is_subset` when quick rounds measure fewer shapes than the full
    ones, and a legend says so if both kinds of aggregate are in the table."""
    table = [
        [
            f"round-{r['round']}",
            r["status"],
            (r["commit"] or "(no commit)")[:11],
            num(r["aggregate"]),
            r["level"] or "-",
            signed(r["delta_vs_baseline_pct"]),
            signed(r["delta_vs_best_pct"]),
            r["hypothesis"][:60],
        ]
        for r in rows
    ]
    headers = ["round", "status", "commit", "aggregate", "shapes", "vs baseline", "vs best",
               "hypothesis"]  # fmt: skip
    text = github_table(headers, table)
    if not rows:
        text += "\nno round recorded yet: kgit baseline records round-1"
    if quick_is_subset and len({r["level"] for r in rows if r["aggregate"] is not None}) > 1:
        text += "\n" + SHAPES_LEGEND
    said = [(r["round"], _said(r)) for r in rows if _said(r)]
    if said:
        text += "\n\n" + "\n".join(f"round-{number}: {words}" for number, words in said)
    for row in rows:
        if row.get("note"):
            what = "changed after kgit wrote it" if row["note"] == CHANGED else "was removed"
            text += (
                f"\nwarning: note of round-{row['round']} {what} (this log shows what kgit "
                "recorded; kgit doctor explains)"
            )
    return text
