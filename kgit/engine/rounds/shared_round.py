"""A worker's own round in a campaign shared through a remote (`kgit worker --remote`).

The worker pulls before each step that needs the latest record and pushes each write about its
round (kgit/engine/sharing/publish.py), and another clone may write the same round meanwhile: someone
validated it there, or rolled it back. The remote's record wins, as every other clone has seen
it. The worker's dropped write is kept under refs/kgit-salvage/ (nothing measured is lost); a
round still in flight there goes on from the remote's copy, the step done again; a round closed
there ends the worker's turn with that clone's status and reason, and the worker goes on with
its next line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgit.engine.campaign import Campaign
from kgit.engine.sharing.publish import Link
from kgit.gitdoor import Repo
from kgit.progress import Say
from kgit.records.notes import ROLLED_BACK


class ClosedElsewhere(Exception):
    """The worker's round was closed in another clone; KEPT: where this clone's write that the
    close dropped is kept (refs/kgit-salvage/), if one was."""

    def __init__(self, kept: str | None) -> None:
        super().__init__(kept)
        self.kept = kept


@dataclass(frozen=True)
class SharedRound:
    """Round NUMBER of campaign NAME, checked out in the work tree TREE of worker WORKER."""

    link: Link
    tree: Repo
    name: str
    number: int
    worker: str
    say: Say

    def sync(self) -> None:
        """Take the remote's writes, the round's branch with them: TREE steps off the branch
        meanwhile, as a pull never deletes a branch checked out (another clone closed the round:
        ClosedElsewhere)."""
        if self.link.remote is None:
            return
        self.tree.detach()
        try:
            self.link.sync()
        finally:  # a refused pull moved nothing: the round is where it was
            self.back_on_round(None)

    def published(self) -> bool:
        """Publish a write about this round only (a gate note, a verdict, a rebase, a
        rollback), replayable on any record the other clones write unless one of them wrote
        this round too. Then the remote's wins and this write is kept aside: False, with the
        round's branch as the remote has it checked out (the caller does its step again), or
        ClosedElsewhere."""
        if self.link.publish(self.tree, keep_dropped=True):
            return True
        kept = self.link.set_aside
        where = f"; this clone's write is kept under {kept}" if kept else ""
        self.say(
            f"{self.worker}: round-{self.number}: another clone wrote it too "
            f"({self.link.conflict}){where}"
        )
        self.back_on_round(kept)
        return False

    def back_on_round(self, kept: str | None) -> None:
        """TREE on the round's branch as this clone's record now has it; ClosedElsewhere when
        the record closed the round."""
        campaign = Campaign.load(self.tree, self.name)
        if campaign.state.open_numbered(self.number) is None:
            raise ClosedElsewhere(kept)
        self.tree.switch(campaign.refs.round_branch(self.number))

    def closed_outcome(self, kept: str | None) -> dict[str, Any]:
        """The worker's outcome of a round another clone closed: the status and reason recorded
        there, and where this clone's dropped write is kept."""
        self.tree.reset_hard()
        campaign, number = Campaign.load(self.tree, self.name), self.number
        commit = campaign.repo.rev_parse(campaign.refs.kept(number))
        note = campaign.read_round(commit) if commit is not None else None
        if note is not None and note.round == number:
            status, why = note.status, note.rollback_reason or "; ".join(note.reasons)
        else:  # rolled back there before any commit
            gone = next((e for e in campaign.state.abandoned if e.get("round") == number), {})
            status, why = ROLLED_BACK, str(gone.get("reason") or "")
        reason = f"closed in another clone ({status}" + (f": {why})" if why else ")")
        if kept:
            reason += f"; this clone's write on it is kept under {kept}"
        return {"status": status, "commit": commit, "reason": reason, "closed_elsewhere": True}
