"""Iteration rule 7, the escalation ladder: after N rollbacks in a row, what to try next.

`kgit status` shows the rung and asks for a stagnation review from the second rollback on.
"""

from __future__ import annotations

from kgit.records.notes import KEPT, ROLLED_BACK

ESCALATION = {
    1: "try a different approach",
    2: "re-profile the kernel",
    3: "read the ISA / generated assembly",
}
ESCALATION_MAX = "compare with state-of-the-art kernels"
REVIEW_AFTER = 2  # rollbacks in a row that call for a stagnation review


def consecutive_rollbacks(statuses: list[str]) -> int:
    """Rollbacks since the last accepted round (or the baseline), in round order."""
    count = 0
    for status in reversed(statuses):
        if status == ROLLED_BACK:
            count += 1
        elif status in KEPT:
            break
    return count


def escalation(count: int) -> str | None:
    """The rung after COUNT rollbacks in a row (None before the first)."""
    if count == 0:
        return None
    return ESCALATION.get(count, ESCALATION_MAX)


def stagnation_review_due(count: int) -> bool:
    return count >= REVIEW_AFTER
