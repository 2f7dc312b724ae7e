"""How the audit judges a mutant from the launches alone (kgit/engine/guards/audit_run.py): never as
SURVIVED where the gate cannot launch it and nobody is known to run it."""

from __future__ import annotations

from kgit.engine.guards.audit_run import rejudged, tier_of
from kgit.judge.mutation import Mutant
from kgit.judge.reach import Reach
from kgit.records.gate_audit import CAUGHT, SURVIVED, UNREACHED, MutantResult

MUTANT = Mutant("k.py", 9, "arith", "`+` -> `-`", 0, 1, b"-", function="block")


def _ran(outcome: str) -> MutantResult:
    return MutantResult("k.py:9", "arith", "`+` -> `-`", outcome, 4.0, function="block")


def _reach(shapes: bool | None, gate: bool | None) -> Reach:
    return Reach("k.py", "block", 7, shapes, gate)


def test_a_survivor_of_a_kernel_the_gate_never_launches_is_rejudged() -> None:
    # The quick audit may run a mutant before the control's record is read.
    nobody = rejudged(_ran(SURVIVED), MUTANT, _reach(False, False))
    assert nobody.outcome == UNREACHED and "block (k.py:7) is never launched" in (nobody.note or "")
    unknown = rejudged(_ran(SURVIVED), MUTANT, _reach(None, False))
    assert unknown.outcome == UNREACHED and "was not recorded" in (unknown.note or "")
    hole = rejudged(_ran(SURVIVED), MUTANT, _reach(True, False))
    assert hole.outcome == SURVIVED and "the gate never launches block" in (hole.note or "")
    # A gate that launches it judged it: its result stands.
    assert rejudged(_ran(SURVIVED), MUTANT, _reach(True, True)).note is None
    assert rejudged(_ran(CAUGHT), MUTANT, _reach(False, False)).outcome == CAUGHT


def test_what_no_run_can_judge_is_drawn_last() -> None:
    tiers = [tier_of(_reach(*r)) for r in [(True, True), (False, True), (None, None), (None, False),
                                           (False, False)]]  # fmt: skip
    assert tiers == [0, 1, 2, 3, 3]
    assert tier_of(None) == 2
