"""One hypotheses file shared by `kgit worker --remote` in several clones, each line tried once.

A worker claims a line in the campaign record, as `claims/<key>` (kgit/records/claims.py), in
the commit that starts the round testing it (kgit/engine/rounds/round.py: start_round's WITH_FILES),
so the claim travels between clones with the record, under its compare-and-swap
(kgit/engine/sharing/publish.py). Two clones that claim at once have both opened a round from one
number: the remote takes one push, the other clone's start is dropped with its claim, and its
worker pulls the record and takes the next line nobody claimed. A claim is never without its
round, and a round in flight says whose line it is.

A worker that dies leaves its round in flight and its claim, as a local worker leaves its
ledger line (kgit/engine/rounds/hypotheses.py). Restarted in its clone under its name (its worker lock
proves the earlier process gone), it rolls that round back, saying so, and gives the line back
to the queue; `kgit worker --take-over CLONE` does the same, from any clone, for the rounds of a
clone that will not come back.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from kgit.engine.campaign import Campaign, now
from kgit.engine.rounds.hypotheses import Hypothesis
from kgit.engine.rounds.parallel import check_out_in_worktree
from kgit.engine.rounds.rollback import rollback_round
from kgit.engine.rounds.round import StartFiles
from kgit.engine.sharing.publish import Link
from kgit.errors import KgitError, UsageError
from kgit.gitdoor import Repo, open_repo
from kgit.progress import Say
from kgit.records.claims import CLAIMS_DIR, Claim, claim_path


class Claimed(KgitError):
    """The line was claimed by another worker first: the worker takes the next one."""


def clone_id(repo: Repo) -> str:
    """`host:path`, how a claim names the clone its worker ran in."""
    return f"{socket.gethostname()}:{repo.common_dir.resolve().parent}"


def claimed(campaign: Campaign) -> dict[str, str]:
    """key -> blob of every claim in the campaign record."""
    found = campaign.repo.read_objects([f"{campaign.record_sha}:{CLAIMS_DIR}"])[0]
    return {key: sha for key, (_mode, sha) in Repo.parse_tree(found[1]).items()} if found else {}


def read_claims(campaign: Campaign) -> dict[str, Claim]:
    """Every claim kgit can read; one it cannot (written by hand) is left out, and its line
    stays claimed."""
    listing = claimed(campaign)
    blobs = campaign.repo.read_blobs(list(listing.values()))
    found = {}
    for key, blob in listing.items():
        try:
            found[key] = Claim.from_text(blobs[blob])
        except (KgitError, TypeError):
            continue
    return found


class SharedQueue:
    """The lines of one hypotheses file, claimed in campaign NAME's record."""

    def __init__(self, repo: Repo, name: str, items: list[Hypothesis], worker: str) -> None:
        self.repo, self.name, self.worker = repo, name, worker
        # Keyed once: a patch's key is its bytes, read when the worker starts, as the lines are.
        self.keys = {item: item.shared_key() for item in items}

    def next(self, skip: set[str]) -> Hypothesis | None:
        """The first line the record, as this clone last pulled it, does not claim (nor SKIP,
        the keys of this clone's ledger). The claim itself comes with the round's start."""
        taken = claimed(Campaign.load(self.repo, self.name))
        return next((i for i, k in self.keys.items() if k not in taken and i.key not in skip), None)

    def claim(self, item: Hypothesis) -> StartFiles:
        """ITEM's claim, recorded with the start of round NUMBER unless the record, as re-read
        under the write lock, already holds one (Claimed: nothing is started)."""
        key = self.keys[item]

        def files(current: Campaign, number: int) -> dict[str, bytes]:
            blob = claimed(current).get(key)
            if blob is not None:
                raise Claimed(
                    f"{item.text!r} was claimed first ({_whose(current.repo, blob)})",
                    hint="the worker takes the next line",
                )
            mine = Claim(
                item.text, number, self.worker, clone_id(self.repo), os.getpid(), now(), item.line
            )
            return {claim_path(key): mine.to_text().encode()}

        return files


def _whose(repo: Repo, blob: str) -> str:
    try:
        found = Claim.from_text(repo.read_blob(blob))
    except (KgitError, TypeError):
        return "by a claim kgit cannot read"
    return f"round-{found.round}, by {found.claimer}"


def in_flight(campaign: Campaign) -> list[tuple[str, Claim]]:
    """The claims whose rounds are still in flight."""
    return [
        (key, found)
        for key, found in sorted(read_claims(campaign).items(), key=lambda kv: kv[1].round)
        if campaign.state.open_numbered(found.round) is not None
    ]


def take_back(
    repo: Repo,
    name: str,
    tree: Path,
    link: Link,
    whose: tuple[str, str | None],
    say: Say,
) -> list[int]:
    """Roll back, from this worker's work tree TREE, the rounds in flight claimed by the workers
    of clone WHOSE[0] (WHOSE[1] alone, when named: this worker's own name, its earlier process
    ended), and give their lines back to the queue. The rounds rolled back, in order; naming
    another clone's workers, WHOSE[1] None, that clone must hold one."""
    clone, worker = whose
    link.sync()
    found = [
        (key, claim)
        for key, claim in in_flight(Campaign.load(repo, name))
        if claim.clone == clone and worker in (None, claim.worker)
    ]
    if worker is None:
        _check_take_over(repo, name, clone, found)
    done = []
    for key, claim in found:
        here = _on_round(repo, name, tree, claim.round)
        release(Campaign.load(here, name), key)
        ended = "ended" if worker is not None else "was declared gone (kgit worker --take-over)"
        reason = (
            f"its worker {claim.claimer} (pid {claim.pid}) {ended} before the round did; the "
            "hypothesis went back to the queue"
        )
        rollback_round(Campaign.load(here, name), reason, say)
        if link.publish(here, keep_dropped=True):
            say(f"round-{claim.round} rolled back: {reason}")
            done.append(claim.round)
        else:
            say(f"round-{claim.round} was not taken back: {link.conflict}")
    return done


def _check_take_over(repo: Repo, name: str, clone: str, found: list[tuple[str, Claim]]) -> None:
    """`--take-over CLONE` names another clone, whose workers hold rounds in flight."""
    if clone == clone_id(repo):
        raise UsageError(
            f"{clone} is this clone",
            hint="a worker restarted here under its --name takes its own rounds back by itself",
        )
    if not found:
        holders = sorted({claim.clone for _key, claim in in_flight(Campaign.load(repo, name))})
        raise UsageError(
            f"no round in flight was claimed by a worker of {clone}",
            hint="clones whose workers hold rounds in flight: " + (", ".join(holders) or "none"),
        )


def _on_round(repo: Repo, name: str, tree: Path, number: int) -> Repo:
    """TREE, this worker's own work tree, holding round NUMBER's branch with nothing else: what
    a worker killed mid-change left there (edits, untracked files) goes."""
    if tree.exists():
        here = open_repo(tree)
        here.reset_hard()
        here.clean(ignored=False)
    campaign = Campaign.load(repo, name)
    check_out_in_worktree(campaign, tree, campaign.refs.round_branch(number))
    return open_repo(tree)


def release(campaign: Campaign, key: str) -> None:
    """Give the line of claim KEY back to the queue (its claim leaves the record)."""
    with campaign.repo.write_lock():
        current = campaign.reload()
        if key in claimed(current):
            current.save(f"claim {key[:10]} released", extra_files={claim_path(key): None})
