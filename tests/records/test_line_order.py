"""The order in which the best line took its rounds, which the best-line figures and rule 9
follow: with rounds in parallel, not round order."""

from __future__ import annotations

from kgit.records.notes import in_line_order


def test_rounds_follow_the_order_the_best_line_took_them() -> None:
    # The line, newest first: round-3 was accepted before round-2; round-4 is off the line.
    line = ["c2", "c3", "c1", "base"]
    rounds = [("c1", 1), ("c2", 2), ("c3", 3), ("c4", 4)]
    assert in_line_order(rounds, line) == [4, 1, 3, 2]
    assert in_line_order([], line) == [] and in_line_order(rounds[:2], []) == [1, 2]
