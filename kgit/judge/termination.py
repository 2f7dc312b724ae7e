"""Iteration rule 10, when a campaign may end: the performance target reached, acceptable
hardware efficiency, max_iterations used up, or the user's stop. Pure over the campaign's
figures; `kgit report` shows each condition and whether it holds.
"""

from __future__ import annotations

from kgit.records.report_results import (
    EfficiencyCheck,
    IterationsCheck,
    StopCheck,
    TargetCheck,
    Termination,
)


def target_reached(target: float | str | None, best_aggregate: float | None) -> TargetCheck:
    """A numeric TARGET is checked against the best line's aggregate; a target in words (or
    none) cannot be, and is never reported reached."""
    goal = None if isinstance(target, (bool, str)) or target is None else float(target)
    reached = goal is not None and best_aggregate is not None and best_aggregate >= goal
    return TargetCheck(target, best_aggregate, reached, goal is not None)


def termination(
    *,
    target: float | str | None,
    best_aggregate: float | None,
    efficiency: EfficiencyCheck,
    rounds_used: int,
    max_iterations: int,
    finished: bool,
) -> Termination:
    """Each of rule 10's conditions, with what it was judged on. EFFICIENCY is measured by
    the caller (each shape's % of the device's peak) and never reached here: what is
    acceptable is the user's call."""
    return Termination(
        target=target_reached(target, best_aggregate),
        hardware_efficiency=efficiency,
        max_iterations=IterationsCheck(rounds_used, max_iterations, rounds_used >= max_iterations),
        user_stop=StopCheck(finished),
    )
