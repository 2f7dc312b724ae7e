"""Iteration rule 7: the escalation ladder, counted from the rounds' statuses alone."""

from __future__ import annotations

from kgit.judge.escalation import (
    ESCALATION_MAX,
    consecutive_rollbacks,
    escalation,
    stagnation_review_due,
)
from kgit.records.notes import ACCEPTED, ACCEPTED_TRADEOFF, BASELINE, ROLLED_BACK


def test_rollbacks_count_back_to_the_last_accepted_round() -> None:
    assert consecutive_rollbacks([]) == 0
    assert consecutive_rollbacks([BASELINE]) == 0
    assert consecutive_rollbacks([BASELINE, ROLLED_BACK, ROLLED_BACK]) == 2
    assert consecutive_rollbacks([BASELINE, ROLLED_BACK, ACCEPTED, ROLLED_BACK]) == 1
    assert consecutive_rollbacks([BASELINE, ROLLED_BACK, ACCEPTED_TRADEOFF]) == 0


def test_a_status_that_decides_nothing_neither_counts_nor_stops_the_count() -> None:
    # A round still open (or of an unknown status) sits between two rollbacks.
    assert consecutive_rollbacks([BASELINE, ROLLED_BACK, "OPEN", ROLLED_BACK]) == 2


def test_the_ladder_climbs_one_rung_per_rollback_and_stays_on_the_last() -> None:
    rungs = [escalation(n) for n in range(6)]
    assert rungs[0] is None
    assert rungs[1:4] == [
        "try a different approach",
        "re-profile the kernel",
        "read the ISA / generated assembly",
    ]
    assert rungs[4] == rungs[5] == ESCALATION_MAX


def test_a_stagnation_review_is_due_from_the_second_rollback_in_a_row() -> None:
    assert [stagnation_review_due(n) for n in range(4)] == [False, False, True, True]
