"""`kgit push [REMOTE]`: publish this clone's campaigns, as compare-and-swap on every ref.

A push fetches the remote's kgit refs first (kgit/engine/remote.py), reads this clone's refs under
the write lock (a snapshot no kgit write is half-way through: an accept racing the push is in it
whole or not at all), and pushes exactly those commits with `--atomic` and
`--force-with-lease=REF:EXPECT` on each ref, EXPECT being the value just fetched. So a ref that
moved on the remote since (another clone's push, an accept there) refuses the whole push.

What a push refuses before it sends anything:
- a campaign record that is not a fast-forward of the remote's (the remote is ahead: nothing to
  push; the two diverged: `kgit pull` names the colliding rounds; unrelated: another campaign of
  the same name is there);
- a best line whose remote value is not an ancestor of this clone's (someone accepted there), or
  a notes ref whose remote value holds a note this clone's lacks and the remote's record does
  not hold (someone wrote notes there: `kgit pull` first, which merges notes);
- a tips chain that diverged (`kgit pull` unites the two).
Round branches and kept rounds may move backward (a round amended and validated again) when
this clone's record contains the remote's, but never to an ancestor of the remote's: an older
copy of another clone's round, which moved on there, is not pushed. A closed round's branch is never pushed (a push
racing an accept may find it between the accept's record and its deleting the branch) and is
deleted there. Nothing kgit recorded is ever deleted on the remote.
"""

from __future__ import annotations

import contextlib
import re

from kgit.engine.remote import (
    RecordAt,
    campaign_refs,
    campaigns_in,
    check_remote,
    fetch,
    local_refs,
    remote_refs,
    tips_refs,
    tracking_ref,
)
from kgit.errors import KgitError, UsageError
from kgit.gitdoor import ZERO_SHA, Repo
from kgit.gitdoor.pushes import PushedRef, RefPush
from kgit.records.names import NOTE_KINDS, CampaignRefs, parse_round_branch
from kgit.records.sharing_results import Pushed, RefPushed


def push(repo: Repo, remote: str, only: str | None) -> Pushed:
    check_remote(repo, remote)
    fetch(repo, remote)
    with repo.write_lock():
        ours, theirs = local_refs(repo), remote_refs(repo, remote)
    names = campaigns_in(ours)
    if only is not None and only not in names:
        raise UsageError(f"no campaign named {only!r} here", hint="kgit status --all lists them")
    if not names:
        raise UsageError("no kgit campaign here to push", hint=f"kgit pull {remote}")
    updates: list[RefPush] = []
    reports = []
    for name in [only] if only else names:
        mine, there = campaign_refs(ours, name), campaign_refs(theirs, name)
        result = _plan_campaign(repo, remote, name, mine, there, updates)
        reports.append({"campaign": name, "result": result, "record": mine[_record(name)]})
    tips = _plan_tips(repo, remote, tips_refs(ours), tips_refs(theirs), updates)
    if updates:
        _send(repo, remote, updates)
    pushed = tuple(RefPushed(u.ref, u.new, u.expect) for u in updates)
    return Pushed(remote, tuple(reports), pushed, tuple(tips))


def _record(name: str) -> str:
    return CampaignRefs(name).record


def _plan_campaign(
    repo: Repo,
    remote: str,
    name: str,
    ours: dict[str, str],
    theirs: dict[str, str],
    updates: list[RefPush],
) -> str:
    """Add NAME's updates; returns what the push does to its record."""
    refs = CampaignRefs(name)
    mine, there = ours[refs.record], theirs.get(refs.record)
    record = RecordAt.read(repo, mine, ())
    if not record.sealed:
        raise KgitError(
            f"campaign {name}'s record was written by a kgit that did not keep its notes in it",
            hint="kgit doctor --fix (records the notes as they are), then kgit push",
        )
    result = _relation(repo, remote, name, mine, there)
    if result == "behind":
        return result
    published = RecordAt.read(repo, there, NOTE_KINDS).notes if there else {}
    for ref, sha in sorted(ours.items()):
        old = theirs.get(ref)
        if old == sha or record.round_branch_closed(ref):
            continue  # a closed round's branch: an accept or rollback is about to delete it
        if old is not None and parse_round_branch(ref) and repo.is_ancestor(sha, old):
            # The remote is ahead on this ref: this clone's copy is older (another clone's
            # round that moved on there), and pushing it would take that clone's commits away.
            continue
        if ref.startswith("refs/notes/"):
            theirs_recorded = published.get(ref.rsplit("/", 1)[1], {})
            kept = old is None or _holds_notes(repo, sha, old, theirs_recorded)
        else:
            forward_only = ref == refs.best or result == "up to date"
            kept = old is None or not forward_only or repo.is_ancestor(old, sha)
        if not kept:
            raise _moved_there(remote, name, ref, refs)
        updates.append(RefPush(ref, sha, old))
    for ref, old in sorted(theirs.items()):
        if record.round_branch_closed(ref):
            updates.append(RefPush(ref, None, old))
    return result


def _holds_notes(repo: Repo, sha: str, old: str, published: dict[str, str]) -> bool:
    """Whether the notes commit SHA keeps every note of OLD, the remote's, but those it holds as
    the remote's record does (PUBLISHED, target -> blob: this clone's record, a fast-forward of
    it, may have written them again since). kgit's notes commits have no parent
    (kgit/gitdoor/git_notes.py), so a notes ref moves forward by what it keeps, not by descent; a
    note written there by hand (or another note on a recorded target) is never replaced."""
    if repo.is_ancestor(old, sha):
        return True
    ours = repo.notes_at(sha)
    return all(
        ours.get(target) == blob or published.get(target) == blob
        for target, blob in repo.notes_at(old).items()
    )


def _relation(repo: Repo, remote: str, name: str, mine: str, there: str | None) -> str:
    if there is None:
        return "created"
    if there == mine:
        return "up to date"
    if repo.is_ancestor(there, mine):
        return "fast-forward"
    if repo.is_ancestor(mine, there):
        return "behind"
    if repo.merge_base(mine, there) is None:
        raise KgitError(
            f"{remote} holds another campaign named {name} (its record shares no history with "
            "this clone's)",
            hint=f"push it to another remote, or look at {remote}'s: kgit pull {remote} -c "
            f"{name} (it refuses to mix the two)",
        )
    raise KgitError(
        f"campaign {name}: this clone and {remote} both wrote the campaign record since they "
        "last met: the push would overwrite the other clone's rounds",
        hint=f"kgit pull {remote} -c {name} (it names the rounds that collide and what to do)",
    )


def _moved_there(remote: str, name: str, ref: str, refs: CampaignRefs) -> KgitError:
    short = ref.removeprefix("refs/heads/")
    if ref == refs.best:
        what = f"{remote}'s best line {short} moved where this clone's does not lead (someone "
        what += "accepted a round there)"
    elif ref.startswith("refs/notes/"):
        what = f"{remote}'s {ref} has notes this clone's lacks"
    else:
        what = f"{remote}'s {short} is not an ancestor of this clone's"
    return KgitError(
        f"campaign {name}: {what}; the push would overwrite it",
        hint=f"kgit pull {remote} -c {name} (it merges notes and reports what collides), then "
        "kgit push",
    )


def _plan_tips(
    repo: Repo, remote: str, ours: dict[str, str], theirs: dict[str, str], updates: list[RefPush]
) -> list[str]:
    pushed = []
    for ref, sha in sorted(ours.items()):
        old = theirs.get(ref)
        if old == sha or (old is not None and repo.is_ancestor(sha, old)):
            continue
        if old is not None and not repo.is_ancestor(old, sha):
            raise KgitError(
                f"the tips chain {ref} has tips on {remote} that this clone lacks",
                hint=f"kgit pull {remote} (it unites the two chains), then kgit push",
            )
        updates.append(RefPush(ref, sha, old))
        pushed.append(ref)
    return pushed


def _send(repo: Repo, remote: str, updates: list[RefPush]) -> None:
    ok, results, stderr = repo.push(remote, updates)
    if not ok:
        raise _refused(remote, [r for r in results if not r.ok], stderr)
    # The remote-tracking refs follow what the remote now holds (a fetch would say the same).
    moves = [
        (
            tracking_ref(remote, u.ref),
            u.new or ZERO_SHA,
            repo.rev_parse(tracking_ref(remote, u.ref)),
        )
        for u in updates
    ]
    with contextlib.suppress(KgitError):  # a fetch meanwhile wrote them: the next one will too
        repo.update_refs(moves, "kgit push")


def _refused(remote: str, refused: list[PushedRef], stderr: str) -> KgitError:
    if "does not support --atomic" in stderr:
        return KgitError(
            f"{remote} does not take atomic pushes, and a campaign's refs pushed one by one could "
            "leave its record and its best line apart there",
            hint="push to a git server that supports atomic pushes (git, GitHub, GitLab do)",
            details=stderr,
        )
    hint = f"kgit pull {remote}, then kgit push (nothing was pushed: the push is atomic)"
    # The lease failed (`stale info`), the remote moved before git could tell (`fetch first`),
    # or two pushes passed their checks at the same moment and the remote's ref transaction
    # took the other one (`cannot lock ref 'R': is at X but expected Y`).
    locked = re.search(r"cannot lock ref '([^']+)'", stderr)
    raced = [r for r in refused if "stale info" in r.summary or "fetch first" in r.summary]
    if raced or locked:
        ref = locked.group(1) if locked else raced[0].ref
        why = "another push took it at the same moment" if locked else raced[0].summary
        return KgitError(
            f"{remote} refused the push: {ref} moved there since kgit fetched it ({why})",
            hint=hint,
            details=stderr,
        )
    first = refused[0] if refused else PushedRef("?", False, "")
    return KgitError(
        f"{remote} refused the push ({first.ref}: {first.summary or 'see above'})",
        hint=hint,
        details=stderr,
    )
