"""What a gate audit covered: of the lines with mutation sites that the target shapes run (the
code a round edits), how many, and how many of the mutation kinds found there, got a mutant
judged. A verdict over one or two mutants must not read as one over the kernel. Pure."""

from __future__ import annotations

from typing import Any

from kgit.judge.mutants import KINDS
from kgit.judge.mutation import Mutant
from kgit.judge.reach import UNREACHED, ReachMap
from kgit.records.gate_audit import CAUGHT, EQUIVALENT, SURVIVED, TIMED_OUT, MutantResult

JUDGED = (CAUGHT, TIMED_OUT, SURVIVED, EQUIVALENT)
SHAPES_RUN = "the target shapes run"
ALL_CODE = "the kernel's code (what the target shapes run was not recorded)"


def coverage(mutants: list[Mutant], reach: ReachMap, results: list[MutantResult]) -> dict[str, Any]:
    """{of, lines, lines_of, kinds, kinds_of}: lines (path:line) and kinds of MUTANTS (every
    site) in the audit's scope, and those a judged result of RESULTS lies on. The scope is the
    code the target shapes run; where that was not recorded, every site not known unreached."""
    where = {m: reach.of(m) for m in mutants}
    known = any(r is not None and r.shapes is not None for r in where.values())
    scope = [
        m
        for m, r in where.items()
        if (r is not None and bool(r.shapes)) or (not known and (r is None or r.tier != UNREACHED))
    ]
    judged = {f"{r.where} {r.mutation}" for r in results if r.outcome in JUDGED}
    covered = [m for m in scope if f"{m.where} {m.description}" in judged]
    return {
        "of": SHAPES_RUN if known else ALL_CODE,
        "lines": len({m.where for m in covered}),
        "lines_of": len({m.where for m in scope}),
        "kinds": _kinds(covered),
        "kinds_of": _kinds(scope),
    }


def _kinds(mutants: list[Mutant]) -> list[str]:
    return sorted({m.kind for m in mutants}, key=KINDS.index)


def covered_words(data: dict[str, Any]) -> str:
    """The coverage in words: "3 of 5 lines and 2 of 6 kinds that the target shapes run"."""
    if not data or not data.get("lines_of"):
        return ""
    return (
        f"{data['lines']} of {data['lines_of']} lines and {len(data['kinds'])} of "
        f"{len(data['kinds_of'])} kinds of mutation site in {data['of']}"
    )
