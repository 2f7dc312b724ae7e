"""What the commands that change a campaign's record require and read before they start: a work
tree with no uncommitted change (round start, validate, accept, rollback, finish, a round's own
work tree, `kgit baseline`), and the best line's per-shape values that validate and accept judge
a candidate against."""

from __future__ import annotations

from kgit.errors import KgitError
from kgit.gitdoor import Repo
from kgit.records.notes import RoundNote, in_line_order


def require_clean(repo: Repo, action: str) -> None:
    dirty = repo.dirty_paths()
    if dirty:
        shown = ", ".join(dirty[:5]) + (" ..." if len(dirty) > 5 else "")
        raise KgitError(
            f"cannot {action}: uncommitted changes in tracked files ({shown})",
            hint="on a round's branch, commit them (git commit runs the gate); elsewhere set "
            'them aside: git stash, then kgit round start "HYPOTHESIS" and git stash pop (a '
            "best line moves only through kgit round accept)",
        )


def best_values(rounds: list[tuple[str, RoundNote]], line: list[str]) -> dict[str, float]:
    """Per-shape values of the best line: the baseline, overlaid by each accepted round's shapes
    in the order the best line took them (LINE: its commits, newest first)."""
    values: dict[str, float] = {}
    for note in in_line_order([(c, n) for c, n in rounds if n.accepted], line):
        values.update(note.values())
    return values
