"""What a killed kgit leaves behind, and how the next command recognises it.

Every state-changing command orders its steps so that a kill between any two of them leaves one
of a few states, each recognisable from refs, notes and the campaign record alone:

- `round start` creates the round branch, then saves the record, then checks the branch out.
  Killed after the branch: an *orphan* branch at the best line's tip for the next round number;
  the next `round start` adopts it. Killed after the save: the round is open but another branch
  is checked out; `status` says `git checkout` it.
- `round accept` moves the best line first, then marks the note and closes the round in one
  record commit. Killed after the best line moved: the round is still open but the best line already holds its commit
  (an *interrupted accept*). Accept completes it; rollback first moves the best line back to the
  round's parent (nothing can have been built on it while the round was open), so no commit
  marked ROLLED BACK is ever left on the best line.
- `round rollback` marks the note ROLLED BACK, keeps the commit and closes the round in one record
  commit, so a kill leaves no state between. A kgit before that saved the closing apart: killed
  in between, the round is open and its note says ROLLED BACK (an *interrupted rollback*);
  rollback completes it and accept refuses it.
- A note is never half written: kgit writes it into the campaign record and onto its notes ref in
  one transaction (kgit/engine/campaign.py), with the keep-ref (accept, rollback) or the evidence
  and the keep-ref (validate), so a kill between any two of those is not a state at all.
- accept and rollback end by checking out the best line and deleting the round's branch. Killed
  before that: a *stale* branch of a closed round, perhaps still checked out; `status` says so,
  the hook refuses commits on it and the next `round start` deletes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgit.engine.campaign import Campaign
from kgit.records.names import parse_round_branch
from kgit.records.notes import ACCEPT, ROLLBACK, ROLLED_BACK, OpenRound


@dataclass(frozen=True)
class RoundBranch:
    """A `kgit/<campaign>/round-<N>` branch that is not the open round's."""

    number: int
    ref: str
    tip: str
    kept: bool  # its tip is reachable from the best line or the round's keep-ref: nothing to lose

    @property
    def short(self) -> str:
        return self.ref.removeprefix("refs/heads/")


# A round branch: its ref, its tip, and the tip's tree (None: the branch is on no commit).
Branches = dict[int, tuple[str, str, str | None]]


def round_branches(campaign: Campaign) -> Branches:
    """Round number -> (branch ref, tip, tree) of every round branch of the campaign, in one git
    process (`kgit status` reads the open round's tip and tree from it, and the strays)."""
    prefix = campaign.refs.round_branch(0).rsplit("/", 1)[0] + "/"
    found: Branches = {}
    for ref, (sha, tree) in campaign.repo.tips_and_trees(prefix).items():
        parsed = parse_round_branch(ref)
        if parsed is not None and parsed[0] == campaign.name:
            found[parsed[1]] = (ref, sha, tree)
    return found


def _reachable(campaign: Campaign, number: int, tip: str, best: str | None) -> bool:
    repo = campaign.repo
    kept = repo.rev_parse(campaign.refs.kept(number))
    return any(line is not None and repo.is_ancestor(tip, line) for line in (best, kept))


def stray_round_branches(campaign: Campaign, branches: Branches | None = None) -> list[RoundBranch]:
    """Round branches other than those of the rounds in flight: orphans of a killed start,
    stale branches of closed rounds, or branches someone made by hand (of BRANCHES, where the
    caller read them already)."""
    listed = round_branches(campaign) if branches is None else branches
    strays = {
        number: found[:2]
        for number, found in sorted(listed.items())
        if campaign.state.open_numbered(number) is None
    }
    if not strays:  # the common case, and `kgit status` asks on every call: one git call
        return []
    best = campaign.repo.rev_parse(campaign.refs.best)
    return [
        RoundBranch(number, ref, tip, _reachable(campaign, number, tip, best))
        for number, (ref, tip) in strays.items()
    ]


def adoptable_orphan(campaign: Campaign, number: int, parent: str) -> bool:
    """Whether round NUMBER's branch exists at PARENT although the round was never opened:
    what `round start` leaves when it is killed between creating the branch and saving."""
    tip = campaign.repo.rev_parse(campaign.refs.round_branch(number))
    return tip is not None and tip == parent and number == campaign.state.next_round


def sweep_stray_branches(campaign: Campaign) -> list[str]:
    """Delete the stray round branches whose commits are kept elsewhere and that are not checked
    out in any work tree. Callers hold the write lock and read CAMPAIGN under it, so a round
    another process just opened is never taken for a stray one."""
    strays = stray_round_branches(campaign)
    if not strays:
        return []
    checked_out = campaign.repo.checked_out_branches()
    swept = []
    for branch in strays:
        if (
            branch.kept
            and branch.ref not in checked_out
            and branch.number < campaign.state.next_round
        ):
            campaign.repo.delete_ref(branch.ref, branch.tip)
            swept.append(branch.short)
    return swept


def interrupted_close(
    open_round: OpenRound, tip: str | None, best: str | None, note_status: str | None
) -> str | None:
    """ACCEPT when an accept of the open round (branch at TIP) was killed after it moved the best
    line (at BEST), ROLLBACK when a rollback was killed after it marked the note; else None."""
    if tip is not None and tip != open_round.parent and best == tip:
        return ACCEPT
    if note_status == ROLLED_BACK:
        return ROLLBACK
    return None


def closed_round_checked_out(campaign: Campaign, branch: str | None) -> int | None:
    """The round number when BRANCH is one of this campaign's round branches but not the open
    round's (an accept or rollback killed before it left the branch)."""
    parsed = parse_round_branch(branch)
    if parsed is None or parsed[0] != campaign.name:
        return None
    return None if campaign.state.open_numbered(parsed[1]) is not None else parsed[1]
