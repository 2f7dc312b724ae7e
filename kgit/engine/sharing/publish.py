"""A worker's link to a shared remote: sync before a step, publish after it.

`kgit worker --remote NAME` shares its campaign with workers in other clones of one remote. It
pulls before each step whose decision needs the latest record (a round's number, the best line
a validation and an accept compare against) and pushes after each step that wrote the record.
The push is compare-and-swap on every ref (kgit/engine/sharing/push.py). A refused push means another
clone wrote first: this clone's writes since it last met the remote are replayed on top of the
remote's record (kgit/engine/sharing/replay.py) and pushed again. A write that cannot be replayed (the
same round number opened on both sides, two accepts) is dropped: the clone takes the remote's
campaign as it is, which the next pull accepts, and the step is done again from there; a write
about the worker's own round that another clone also wrote is kept under refs/kgit-salvage/
when it is dropped (kgit/engine/rounds/worker.py says what the worker does then).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgit.engine.remote import RecordAt, Sides, campaign_refs, fetch, local_refs, remote_refs
from kgit.engine.sharing.inbound import check_best, require_no_rewrite, require_readable
from kgit.engine.sharing.merge import merge_notes
from kgit.engine.sharing.pull import Plan, apply_plan, check_work_trees, pull, salvage
from kgit.engine.sharing.push import push
from kgit.engine.sharing.replay import ReplayConflict, merge_refs, replay_record
from kgit.errors import KgitError
from kgit.gitdoor import Repo
from kgit.records.names import NOTE_KINDS, CampaignRefs

# How often one publish replays onto a remote that keeps moving before it gives up.
MAX_REPLAYS = 20


@dataclass
class Link:
    """REPO's campaign NAME shared through REMOTE; REMOTE None: a clone of its own (no-op)."""

    repo: Repo
    name: str
    remote: str | None
    met: dict[str, str] = field(default_factory=dict)  # the remote's refs when last met
    conflict: str = ""  # why the last dropped writes could not be replayed
    conflicts: list[str] = field(default_factory=list)  # every such reason, in order
    set_aside: str | None = None  # where the last publish that kept its dropped writes put them
    counts: dict[str, int] = field(
        default_factory=lambda: {"pushes": 0, "push_refusals": 0, "replayed": 0, "redone": 0}
    )

    def sync(self) -> None:
        """Take the remote's writes (a fast-forward: this clone published all of its own)."""
        if self.remote is None:
            return
        pull(self.repo, self.remote, self.name, take_remote=False)
        self.met = self._theirs()

    def publish(self, tree: Repo | None, *, keep_dropped: bool = False) -> bool:
        """Push this clone's writes since the last meeting, replaying them on the remote's as
        often as another clone pushes first. False: they conflicted with the remote's and were
        dropped (TREE, the worker's work tree if it has one, is left detached; KEEP_DROPPED:
        the refs they had moved are kept under `set_aside`); the caller does its step again."""
        if self.remote is None:
            return True
        self.set_aside = None
        for _ in range(MAX_REPLAYS):
            try:
                push(self.repo, self.remote, self.name)
            except KgitError:
                fetch(self.repo, self.remote)
                theirs = self._theirs()
                if theirs == self.met:
                    raise  # the remote did not move: the refusal is about something else
                self.counts["push_refusals"] += 1
                try:
                    self._replay(tree, theirs, take_theirs=False)
                except ReplayConflict as conflict:
                    self._replay(tree, theirs, take_theirs=True, keep_dropped=keep_dropped)
                    self.counts["redone"] += 1
                    self.conflict = str(conflict)
                    self.conflicts.append(self.conflict)
                    return False
                self.counts["replayed"] += 1
                continue
            self.counts["pushes"] += 1
            self.met = self._theirs()
            return True
        raise KgitError(
            f"campaign {self.name}: {self.remote} moved {MAX_REPLAYS} times while this clone "
            "pushed its writes",
            hint=f"kgit pull {self.remote}, then kgit push (the writes are still here)",
        )

    def report(self) -> dict[str, Any]:
        if self.remote is None:
            return {"remote": None}
        return {"remote": self.remote, **self.counts, "conflicts": self.conflicts}

    def _theirs(self) -> dict[str, str]:
        assert self.remote is not None
        return campaign_refs(remote_refs(self.repo, self.remote), self.name)

    def _check_theirs(self, mine: dict[str, str], theirs: dict[str, str]) -> None:
        """What `kgit pull` checks of a record it takes: the remote's record grew from the one
        last met, rewrote nothing recorded there, reads, and its best line is one it accepted."""
        assert self.remote is not None
        repo, record = self.repo, CampaignRefs(self.name).record
        met, now = self.met[record], theirs[record]
        sides = Sides(self.name, self.remote, mine, theirs)
        if not repo.is_ancestor(met, now):
            raise KgitError(
                f"campaign {self.name}: {self.remote}'s record no longer holds the one this clone "
                "last pulled (it was rewritten or replaced there)",
                hint=f"kgit pull {self.remote} -c {self.name} (it says what differs)",
            )
        old, new = RecordAt.read(repo, met, NOTE_KINDS), RecordAt.read(repo, now, NOTE_KINDS)
        require_no_rewrite(repo, sides, old, new)
        require_readable(repo, sides, old, new)
        check_best(repo, sides, new)

    def _replay(
        self,
        tree: Repo | None,
        theirs: dict[str, str],
        *,
        take_theirs: bool,
        keep_dropped: bool = False,
    ) -> None:
        """Move this clone's campaign refs onto THEIRS plus (unless TAKE_THEIRS) its own writes
        since the last meeting; raises ReplayConflict before moving anything. KEEP_DROPPED: the
        refs this clone moved since the last meeting that TAKE_THEIRS moves away are kept under
        refs/kgit-salvage/, in the same transaction."""
        refs, repo = CampaignRefs(self.name), self.repo
        with repo.write_lock():
            mine = campaign_refs(local_refs(repo), self.name)
            self._check_theirs(mine, theirs)
            if take_theirs:
                record = theirs[refs.record]
                # Refs only this clone has stay (a round branch the record no longer opens is
                # swept by the next round start).
                branches = {ref: theirs.get(ref) for ref in _plain(self.met) | _plain(theirs)}
            else:
                base = self.met[refs.record]
                record = replay_record(repo, base, mine[refs.record], theirs[refs.record])
                branches = merge_refs(
                    {r: self.met[r] for r in _plain(self.met)},
                    {r: mine[r] for r in _plain(mine)},
                    {r: theirs[r] for r in _plain(theirs)},
                    refs.best,
                    repo.is_ancestor,
                )
            plan = Plan()
            plan.move(refs.record, record, mine.get(refs.record))
            for ref, sha in sorted(branches.items()):
                plan.move(ref, sha, mine.get(ref))
            notes = RecordAt.read(repo, record, NOTE_KINDS).notes
            for kind in NOTE_KINDS:
                ref = refs.notes(kind)
                merged = merge_notes(repo, mine.get(ref), theirs.get(ref), notes[kind])
                if merged.new is not None:
                    plan.move(ref, merged.new, mine.get(ref))
            if keep_dropped:
                dropped = {
                    ref: old
                    for ref, _new, old in plan.moves
                    if old is not None and old != self.met.get(ref)
                }
                self.set_aside = salvage(repo, plan, self.name, dropped) if dropped else None
            if take_theirs and tree is not None and tree.current_branch() is not None:
                tree.detach()  # its round's branch goes back to what the remote holds
            check_work_trees(repo, plan)
            apply_plan(repo, plan)
        self.met = theirs


def _plain(refs: dict[str, str]) -> set[str]:
    """The campaign's refs other than its record and notes: branches and kept rounds."""
    return {
        ref
        for ref in refs
        if ref.startswith(("refs/heads/", "refs/kgit/")) and not ref.endswith("/campaign")
    }
