"""`kgit doctor`'s text: each problem in words, then the command that repairs it."""

from __future__ import annotations

from kgit.records.campaign_results import DoctorReport


def render_doctor(data: DoctorReport) -> str:
    lines = [f"repaired  {finding.repair}" for finding in data.fixed]
    for finding in data.problems:
        mark = "" if finding.safe else " (not applied by --fix: it needs your decision)"
        lines += [f"problem   {finding.problem}", f"  repair  {finding.repair}{mark}"]
    if data.problems:
        safe = sum(finding.safe for finding in data.problems)
        lines.append(
            f"{len(data.problems)} problem(s) in campaign {data.campaign}"
            + (f"; kgit doctor --fix repairs {safe} of them" if safe else "")
        )
    else:
        lines.append(f"campaign {data.campaign}: no problem found")
    return "\n".join(lines)
