"""The gate audit in words: `kgit gate audit`'s table, its line in `kgit status`, its section in
the report. Reads the stored audit (kgit/records/gate_audit.py); runs nothing."""

from __future__ import annotations

from typing import Any

from kgit.judge.audit_coverage import covered_words
from kgit.records.gate_audit import SURVIVED, UNREACHED_WORDS, GateAudit
from kgit.records.results import to_json
from kgit.records.upkeep_results import GateAuditShown
from kgit.views.document import FAIL_MARK, PASS_MARK, Block, Bullets, Heading, Para, Table
from kgit.views.status_log import github_table

OK, NO = PASS_MARK, FAIL_MARK  # words, coloured in HTML (kgit/views/document.py)


def audit_shown(audit: GateAudit) -> GateAuditShown:
    """`kgit gate audit --json`: the stored audit with its counts."""
    return GateAuditShown(
        audit=audit.to_dict(),
        tried=audit.tried,
        caught=audit.caught,
        timed_out=audit.timed_out,
        survived=len(audit.survivors),
        unreached=len(audit.unreached),
        equivalent=len(audit.equivalent),
        weak=audit.weak,
        drawn=audit.drawn,
    )


def audit_data(audit: GateAudit) -> dict[str, Any]:
    """The stored audit with its counts, as JSON data: what the text below and the report's
    section read (the same document `kgit gate audit --json` prints)."""
    data: dict[str, Any] = to_json(audit_shown(audit))
    return data


def _rows(data: dict[str, Any]) -> list[list[str]]:
    return [
        [
            str(number),
            m["where"],
            m["kind"],
            m["mutation"],
            m["outcome"].upper() if m["outcome"] == SURVIVED else m["outcome"],
            m["caught_by"] or m.get("note") or "",
            f"{m['seconds']:.1f}",
        ]
        for number, m in enumerate(data["mutants"], 1)
    ]


def counts_line(data: dict[str, Any]) -> str:
    hangs = (
        f" ({data['timed_out']} by timeout: a hang counts as caught)" if data["timed_out"] else ""
    )
    extra = [
        f"{data[key]} {words}"
        for key, words in (
            (
                "equivalent",
                "equivalent on the target shapes (no shape's result changes beyond tolerance)",
            ),
            ("unreached", f"{UNREACHED_WORDS} (not run)"),
        )
        if data.get(key)
    ]
    covered = covered_words(data.get("coverage") or {})
    extra += [f"covered {covered}"] if covered else []
    if data.get("not_run"):
        extra.append(
            f"{data['not_run']} of {data.get('drawn') or data['not_run']} drawn not run (out of "
            "time, or after a survivor in the same kernel)"
        )
    return f"caught {data['caught']} of {data['tried']}{hangs}; survived {data['survived']}" + (
        "; " + "; ".join(extra) if extra else ""
    )


def verdict(data: dict[str, Any]) -> str:
    """The audit's verdict, saying what it covered: a pass over a few mutants is no more."""
    if data["survived"]:
        return f"{NO} the gate passed {data['survived']} wrong kernel(s)."
    covered = covered_words(data.get("coverage") or {})
    coverage = data.get("coverage") or {}
    partial = coverage.get("lines", 0) < coverage.get("lines_of", 0) or len(
        coverage.get("kinds", [])
    ) < len(coverage.get("kinds_of", []))
    return (
        f"{OK} the gate caught all {data['caught']} mutant(s) it was given"
        + (f", on {covered}" if covered else "")
        + (f"; {data['not_run']} drawn not run" if data.get("not_run") else "")
        + ("; the rest is not judged (kgit gate audit --max N draws more)" if partial else "")
        + "."
    )


FIGURE_HEADERS = ["kernel", "where", "shapes", "gate", "sites", "tried", "caught", "survived",
                  "unreached", "equivalent"]  # fmt: skip


def _ran(value: bool | None) -> str:
    return "?" if value is None else "runs" if value else "never"


def figure_rows(data: dict[str, Any]) -> list[list[str]]:
    """Per kernel function: who runs it and what its mutants came to (the gate's strength)."""
    return [
        [
            f["function"],
            f"{f['path']}:{f['line']}",
            _ran(f["shapes"]),
            _ran(f["gate"]),
            *(
                str(f[k])
                for k in ("sites", "tried", "caught", "survived", "unreached", "equivalent")
            ),
        ]
        for f in data.get("functions") or []
    ]


def render_audit(data: dict[str, Any]) -> str:
    lines = [
        f"gate audit of {data['campaign']} at {data['commit'][:10]}: {len(data['mutants'])} "
        f"mutant(s) of {data['sites']} site(s) in kernel_source; gate `{data['command']}`"
    ]
    if data["mutants"]:
        headers = ["#", "where", "kind", "mutation", "outcome", "caught by, or why", "s"]
        lines.append(github_table(headers, _rows(data)))
    lines.append(counts_line(data) + f"; {data['seconds']:.0f} s in all" + _budget(data))
    if data.get("functions"):
        lines.append("per kernel (shapes / gate: whether the target shapes / the gate launch it)")
        lines.append(github_table(FIGURE_HEADERS, figure_rows(data)))
    lines += list(data.get("reach") or [])
    lines += [f"not mutated: {item}" for item in data["skipped"]]
    lines += [f"never loaded by the gate: {path}" for path in data["unexercised"]]
    if data["weak"]:
        lines.append("next: strengthen the gate's tests, commit them, kgit gate audit")
    return "\n".join(lines)


def _budget(data: dict[str, Any]) -> str:
    if not data.get("budget_s"):
        return ""
    return f" (quick audit: {data['budget_s']:.0f} s allowed, two gate runs)"


def report_blocks(data: dict[str, Any] | None, best_commit: str) -> list[Block]:
    """The report's section: DATA is `audit_data` of the latest audit, None when none."""
    blocks: list[Block] = [Heading(2, "Correctness gate audit")]
    if data is None:
        blocks.append(
            Para(
                f"{NO} not audited: no gate audit is recorded (gate_audit_mutants: 0 at "
                "baseline, or nothing in kernel_source kgit can mutate); `kgit gate audit` "
                "runs one."
            )
        )
        return blocks
    older = "" if data["commit"] == best_commit else ", an earlier best line"
    facts = [
        f"Gate `{data['command']}` run on mutants of `{data['commit'][:10]}`{older} "
        f"({data['trigger']}, {data['at']}): {counts_line(data)}.",
        *(line[0].upper() + line[1:] + "." for line in data.get("reach") or []),
    ]
    facts += [f"Not mutated: {item}" for item in data["skipped"]]
    facts += [f"{NO} never loaded by the gate: `{path}`" for path in data["unexercised"]]
    if data["tail_warning"]:
        facts.append(f"{NO} {data['tail_warning']}")
    blocks.append(Bullets(facts))
    if data["error"]:
        blocks.append(Para(f"{NO} {data['error']}"))
    elif data["mutants"]:
        if data.get("functions"):
            blocks.append(Table(FIGURE_HEADERS, figure_rows(data)))
        headers = ["#", "where", "kind", "mutation", "outcome", "caught by, or why", "s"]
        blocks.append(Table(headers, _rows(data)))
        blocks.append(Para(verdict(data)))
    return blocks


def audit_words(state: dict[str, Any] | None) -> str:
    """One line of what the background audit is doing; empty when nothing is pending."""
    if state is None:
        return ""
    if state["running"]:
        return (
            f"gate audit: still running in the background (pid {state['pid']}, log {state['log']})"
        )
    return (
        f"gate audit: interrupted (pid {state['pid']} ended without recording it; its log: "
        f"{state['log']}); run it again: {state['rerun']}"
    )
