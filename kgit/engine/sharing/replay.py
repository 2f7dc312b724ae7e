"""Replaying this clone's campaign writes onto a remote's record that moved meanwhile.

Two clones that share a campaign through a remote each write its record, and a push is refused
when the other pushed first: the two records have diverged. They are never merged. Instead the
clone that lost the push replays its own record commits since it last met the remote, one by
one, on top of the remote's record, as `git rebase` would: the record stays one chain. A write
is replayed only when it touches what the remote's writes did not: its own round (its open-round
entry, its notes, its runs), or a field the remote left alone. Both clones opening the same
round number, or both moving the best line (two accepts), is a conflict: nothing is replayed,
the clone takes the remote's campaign as it is, and the caller does its step again from there
(a new round number; a rebase and a new validation against the new best line).

The campaign's other refs follow the same rule, ref by ref: the side that moved a ref since the
last meeting wins, and a ref both sides moved to different commits is a conflict.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from kgit.gitdoor import Repo
from kgit.records.names import STATE_FILE
from kgit.records.notes import CampaignState

# Lists that only grow, one entry per event: both sides' new entries are kept.
APPENDED = ("abandoned", "reopened")


class ReplayConflict(Exception):
    """A write of this clone that cannot be replayed on the remote's: the reason, in words."""


def merge_state(base: CampaignState, mine: CampaignState, theirs: CampaignState) -> CampaignState:
    """THEIRS with the changes MINE made to BASE; raises ReplayConflict where both changed a
    field differently (open rounds are compared round by round)."""
    b, m, t = asdict(base), asdict(mine), asdict(theirs)
    if m["next_round"] != b["next_round"] != t["next_round"]:
        # Both took numbers from the same next_round, even if the other's round is closed now.
        raise ReplayConflict(
            f"both clones opened round-{b['next_round']} (the remote's record took the number "
            "first)"
        )
    merged = dict(t)
    for key, value in m.items():
        if value == b.get(key) or value == t.get(key):
            continue
        if t.get(key) == b.get(key):
            merged[key] = value
        elif key == "open_rounds":
            merged[key] = _merge_open_rounds(b[key], value, t[key])
        elif key in APPENDED:
            merged[key] = t[key] + [entry for entry in value if entry not in b[key]]
        else:
            raise ReplayConflict(f"both clones changed the campaign's {key}")
    return CampaignState.from_json(json.dumps(merged).encode())


def _merge_open_rounds(
    base: list[dict[str, Any]], mine: list[dict[str, Any]], theirs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    b, m, t = ({r["number"]: r for r in side} for side in (base, mine, theirs))
    merged = dict(t)
    for number in b.keys() | m.keys():
        if m.get(number) in (b.get(number), t.get(number)):
            continue
        if t.get(number) != b.get(number):
            raise ReplayConflict(f"both clones changed round-{number}")
        if number in m:
            merged[number] = m[number]
        else:
            merged.pop(number, None)
    return [merged[number] for number in sorted(merged)]


def replay_record(repo: Repo, base: str, mine: str, theirs: str) -> str:
    """The record commit that holds THEIRS and then each of this clone's commits BASE..MINE,
    replayed in order (MINE itself when it already holds THEIRS)."""
    if repo.is_ancestor(theirs, mine):
        return mine
    if repo.is_ancestor(mine, theirs):
        return theirs
    met = set(repo.rev_list(base))
    ours = [sha for sha in reversed(repo.rev_list(mine)) if sha not in met]
    messages = repo.commit_messages(ours)
    onto, parent = theirs, base
    for commit in ours:
        onto = _replay_commit(repo, parent, commit, onto, messages[commit])
        parent = commit
    return onto


def _replay_commit(repo: Repo, parent: str, commit: str, onto: str, message: str) -> str:
    before, after, there = (_files(repo, sha) for sha in (parent, commit, onto))
    files: dict[str, bytes | str | None] = {}
    for path in before.keys() | after.keys():
        old, new, now = before.get(path), after.get(path), there.get(path)
        if new in (old, now):
            continue
        if now == old:
            files[path] = new
        elif path == STATE_FILE and old and new and now:
            states = repo.read_blobs([old, new, now])
            merged = merge_state(*(CampaignState.from_json(states[s]) for s in (old, new, now)))
            files[path] = merged.to_json()
        else:
            raise ReplayConflict(f"both clones wrote {path} of the campaign record")
    return repo.commit_tree(repo.tree_with(onto, files), [onto], message)


def _files(repo: Repo, commit: str) -> dict[str, str]:
    return {path: sha for path, (_mode, sha) in repo.ls_tree(commit).items()}


def merge_refs(
    base: dict[str, str],
    mine: dict[str, str],
    theirs: dict[str, str],
    best: str,
    behind: Callable[[str, str], bool],
) -> dict[str, str | None]:
    """Each ref's commit after a replay (None: deleted): the side that moved it since BASE wins;
    both moving it elsewhere is a conflict (for BEST, the best line: two accepts). BEHIND(A, B)
    says whether commit A is an ancestor of B: a copy here that the remote's ref only extends
    (another clone's round, moved on there) is no move of this clone's."""
    merged: dict[str, str | None] = {}
    for ref in base.keys() | mine.keys() | theirs.keys():
        old, new, now = base.get(ref), mine.get(ref), theirs.get(ref)
        if new in (old, now) or (new and now and behind(new, now)):
            merged[ref] = now
        elif now == old:
            merged[ref] = new
        elif ref == best:
            raise ReplayConflict(
                "both clones accepted a round: the remote's best line moved first, so this "
                "accept's comparison is stale"
            )
        else:
            raise ReplayConflict(f"both clones moved {ref.removeprefix('refs/heads/')}")
    return merged
