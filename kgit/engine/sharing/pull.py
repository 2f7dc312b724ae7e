"""`kgit pull [REMOTE]`: take a remote's campaigns into this clone, losing no record.

The campaign record (`refs/kgit/<c>/campaign`) is one chain of commits, each written under the
write lock of the clone that made it, and it holds every note kgit wrote. Two clones that both
wrote a campaign's record since they last met have both opened rounds from the same
`next_round`: their round numbers collide, and round numbers are never reused. So the record is
never merged: a pull takes the remote's record when it contains this clone's (a fast-forward),
keeps this clone's when it contains the remote's, and otherwise refuses, naming the rounds that
collide; `--take-remote` then keeps this clone's campaign refs under `refs/kgit-salvage/` and takes
the remote's. A push of the record right after `kgit round start` reserves the round's number:
the second clone's push is refused before anyone measures (kgit/engine/sharing/push.py).

What a pull checks before it moves anything (all or nothing, under the write lock):
- the remote's record shares history with this clone's (else it is another campaign that has the
  same name), keeps its notes (a sealed record), and did not rewrite what this clone had: no note
  removed, no closed round's note changed, no abandoned round dropped, no round number reused;
- the remote's best line is on a commit its record accepted (or the campaign's base);
- a branch that moves holds no commit the remote's lacks (or is exactly what the remote held
  when this clone last fetched: a copy of another clone's round, rebased there since); a branch
  checked out in a work tree of this clone (here, or the main one while a pull runs in a round's
  own) moves with that tree's files, only when the tree is clean (kgit/engine/sharing/follow.py).
Notes refs and tips chains are merged by the rules of kgit/engine/sharing/merge.py. A pull runs nothing
and installs nothing: a campaign that arrives is not trusted here (kgit/engine/guards/trust.py) until
`kgit trust`, and the commit gate is installed only by `kgit hooks install`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgit.engine.campaign import Campaign, now
from kgit.engine.guards.hooks import hooks_missing
from kgit.engine.guards.trust import trust_of
from kgit.engine.remote import (
    SALVAGE,
    RecordAt,
    Sides,
    campaign_refs,
    campaigns_in,
    check_remote,
    fetch,
    local_refs,
    remote_refs,
    tips_refs,
)
from kgit.engine.sharing.follow import other_trees_on
from kgit.engine.sharing.inbound import (
    best_elsewhere,
    check_best,
    diverged,
    require_no_rewrite,
    require_readable,
    unsealed,
)
from kgit.engine.sharing.merge import merge_notes, merge_tips
from kgit.errors import KgitError, UsageError
from kgit.gitdoor import ZERO_SHA, Repo
from kgit.records.names import NOTE_KINDS, validate_campaign_name
from kgit.records.notes import RoundNote
from kgit.records.sharing_results import Pulled


@dataclass
class Plan:
    """Every ref a pull moves, as one compare-and-swap transaction, and the work tree move."""

    moves: list[tuple[str, str, str | None]] = field(default_factory=list)
    # (work tree, old, new) of each moving branch checked out in a work tree of this repository
    work_trees: list[tuple[Repo, str, str]] = field(default_factory=list)

    def move(self, ref: str, new: str | None, old: str | None) -> None:
        if new != old:
            self.moves.append((ref, new or ZERO_SHA, old))


def pull(repo: Repo, remote: str, only: str | None, take_remote: bool) -> Pulled:
    check_remote(repo, remote)
    fetched = remote_refs(repo, remote)  # what the remote held when this clone last fetched
    fetch(repo, remote)
    with repo.write_lock():
        ours, theirs = local_refs(repo), remote_refs(repo, remote)
        names = [name for name in campaigns_in(theirs) if _valid_name(name)]
        if only is not None and only not in names:
            raise UsageError(
                f"{remote} has no campaign named {only!r}",
                hint=f"campaigns on {remote}: {', '.join(names) or 'none'}",
            )
        plan = Plan()
        reports = [
            _plan_campaign(
                repo,
                plan,
                Sides(name, remote, campaign_refs(ours, name), campaign_refs(theirs, name)),
                take_remote,
                fetched,
            )
            for name in ([only] if only else names)
        ]
        tips = _plan_tips(repo, plan, tips_refs(ours), tips_refs(theirs))
        check_work_trees(repo, plan)
        apply_plan(repo, plan)
    for report in reports:
        _after(repo, report)
    return Pulled(remote, tuple(reports), tips)


def _valid_name(name: str) -> bool:
    """A remote may hold refs named anything git allows (`refs/kgit/a$(x)/campaign`): a name
    kgit would refuse to create is not taken (it would end up in hints people paste)."""
    try:
        validate_campaign_name(name)
    except UsageError:
        return False
    return True


def _plan_campaign(
    repo: Repo, plan: Plan, sides: Sides, take_remote: bool, fetched: dict[str, str]
) -> dict[str, Any]:
    record = sides.refs.record
    mine, theirs_sha = sides.ours.get(record), sides.theirs[record]
    theirs = RecordAt.read(repo, theirs_sha, NOTE_KINDS)
    report: dict[str, Any] = {
        "campaign": sides.name,
        "record": {"old": mine, "new": mine},
        "moved": [],
        "deleted": [],
        "salvaged": None,
        "set_aside": [],
        "notes_not_taken": [],
        "warnings": [],
    }
    if not theirs.sealed:
        raise unsealed(sides, sides.remote)
    ours = RecordAt.read(repo, mine, NOTE_KINDS) if mine else None
    if ours is not None and not ours.sealed:
        raise unsealed(sides, None)
    result = _relation(repo, sides, ours, theirs, take_remote)
    report["result"] = result
    taking = result in ("created", "fast-forward", "taken")
    start = len(plan.moves)
    if result == "taken":
        assert ours is not None
        report["salvaged"] = salvage(repo, plan, sides.name, sides.ours)
        report["set_aside"] = _set_aside(repo, sides, ours)
    if taking:
        require_readable(repo, sides, ours if result == "fast-forward" else None, theirs)
        check_best(repo, sides, theirs)
        _take_refs(repo, plan, sides, fetched, theirs, replace=result == "taken")
        report["record"]["new"] = theirs_sha
    else:
        report["warnings"] += best_elsewhere(repo, sides)
    final = theirs if taking else ours
    assert final is not None
    for kind in NOTE_KINDS:
        ref = sides.refs.notes(kind)
        ours_notes = None if result == "taken" else sides.ours.get(ref)
        merged = merge_notes(repo, ours_notes, sides.theirs.get(ref), final.notes[kind])
        if merged.new is not None:
            plan.move(ref, merged.new, sides.ours.get(ref))
        elif result == "taken" and ref in sides.ours:  # salvaged; the record taken has none
            plan.move(ref, None, sides.ours[ref])
        report["notes_not_taken"] += [
            {"kind": kind, "target": t, "blob": b} for t, b in sorted(merged.not_taken.items())
        ]
    report["moved"] = [m[0] for m in plan.moves[start:] if m[1] != ZERO_SHA]
    report["deleted"] = [m[0] for m in plan.moves[start:] if m[1] == ZERO_SHA]
    report["next_round"] = final.state.next_round
    report["open_round"] = final.state.open_round.number if final.state.open_round else None
    return report


def _relation(
    repo: Repo, sides: Sides, ours: RecordAt | None, theirs: RecordAt, take_remote: bool
) -> str:
    """created, up to date, ahead, fast-forward or taken; a refusal otherwise."""
    if ours is None:
        return "created"
    if ours.commit == theirs.commit:
        return "up to date"
    if repo.is_ancestor(theirs.commit, ours.commit):
        return "ahead"
    if repo.is_ancestor(ours.commit, theirs.commit):
        require_no_rewrite(repo, sides, ours, theirs)
        return "fast-forward"
    if take_remote:
        return "taken"
    base = repo.merge_base(ours.commit, theirs.commit)
    if base is None:
        raise KgitError(
            f"{sides.remote} holds another campaign named {sides.name}: its record shares no "
            "history with this clone's (created apart, or its record was replaced)",
            hint=f"keep this one: nothing to do (kgit pull -c OTHER for {sides.remote}'s other "
            f"campaigns); take {sides.remote}'s: kgit pull {sides.remote} -c {sides.name} "
            f"--take-remote (this clone's refs stay under {SALVAGE}{sides.name}/)",
        )
    raise diverged(repo, sides, ours, theirs, RecordAt.read(repo, base, ("rounds",)))


def _wanted(sides: Sides, theirs: RecordAt) -> dict[str, str]:
    """The remote's refs of the campaign that its record accounts for: the best line, the final
    branch, the open round's branch and the kept rounds it numbered. Others (a closed round's
    branch pushed before its accept deleted it, a branch or ref made by hand there) are not
    taken: they would only be strays here."""
    refs, state = sides.refs, theirs.state
    named = {refs.best, f"refs/heads/kgit/{sides.name}/final", refs.record}
    named |= {refs.round_branch(found.number) for found in state.open_rounds}
    named |= {refs.kept(n) for n in range(1, state.next_round)}
    return {ref: sha for ref, sha in sides.theirs.items() if ref in named}


def _take_refs(
    repo: Repo,
    plan: Plan,
    sides: Sides,
    fetched: dict[str, str],
    theirs: RecordAt,
    *,
    replace: bool,
) -> None:
    """Every ref of the remote's campaign its record accounts for (notes aside); REPLACE: this
    clone's refs were salvaged and those the remote lacks go, else a branch moves only forward
    and a closed round's branch goes only when the remote keeps its commit, or when it is a
    copy of what the remote held when this clone last FETCHED it: another clone's round, whose
    owner rebased it there onto a new best line, or closed it, holds nothing of this clone's."""
    skip = ("refs/notes/",)
    for ref, sha in sorted(_wanted(sides, theirs).items()):
        old = sides.ours.get(ref)
        branch = ref.startswith("refs/heads/")
        if (
            branch
            and not replace
            and old
            and old != sha
            and not repo.is_ancestor(old, sha)
            and fetched.get(ref) != old
        ):
            short = ref.removeprefix("refs/heads/")
            raise KgitError(
                f"{short} here holds commits that {sides.remote}'s {short} does not",
                hint=f"keep them under another name: git branch -m {short} "
                f"salvage/{short.replace('/', '-')}; then kgit pull {sides.remote}",
            )
        plan.move(ref, sha, old)
    for ref, old in sorted(sides.ours.items()):
        if ref in sides.theirs or ref.startswith(skip):
            continue
        if replace or (
            theirs.round_branch_closed(ref)
            and (_kept_there(repo, sides, ref, old) or fetched.get(ref) == old)
        ):
            plan.move(ref, None, old)


def _kept_there(repo: Repo, sides: Sides, branch: str, tip: str) -> bool:
    number = int(branch.rsplit("-", 1)[1])
    lines = [sides.theirs.get(sides.refs.kept(number)), sides.theirs.get(sides.refs.best)]
    return any(line is not None and repo.is_ancestor(tip, line) for line in lines)


def salvage(repo: Repo, plan: Plan, name: str, refs: dict[str, str]) -> str:
    """Keep REFS (full name -> sha) of campaign NAME under refs/kgit-salvage/<c>/<time>/."""
    stamp = now().replace("-", "").replace(":", "")
    prefix = f"{SALVAGE}{name}/{stamp}/"
    while repo.refs(prefix):
        prefix = prefix[:-1] + "x/"
    for ref, sha in refs.items():
        plan.move(prefix + ref.removeprefix("refs/"), sha, None)
    return prefix


def _set_aside(repo: Repo, sides: Sides, ours: RecordAt) -> list[dict[str, Any]]:
    """This clone's rounds that the remote's record does not hold, as `--take-remote` leaves
    them (salvaged): each one's number, hypothesis, status and commit, to redo as a new round."""
    kept = {ref: sha for ref, sha in sides.ours.items() if ref.startswith(sides.refs.kept_prefix)}
    commits = {
        int(ref.rsplit("/", 1)[1]): sha for ref, sha in kept.items() if sides.theirs.get(ref) != sha
    }
    for open_round in ours.state.open_rounds:
        tip = sides.ours.get(sides.refs.round_branch(open_round.number))
        if tip is not None and tip != open_round.parent:
            commits.setdefault(open_round.number, tip)
    blobs = {t: b for t, b in ours.notes["rounds"].items() if t in commits.values()}
    texts = repo.read_blobs(list(blobs.values()))
    notes = {t: RoundNote.from_text(texts[b]) for t, b in blobs.items()}
    found = []
    for number, commit in sorted(commits.items()):
        note = notes.get(commit)
        in_flight = ours.state.open_numbered(number)
        fallback = in_flight.hypothesis if in_flight else ""
        found.append(
            {
                "round": number,
                "commit": commit,
                "hypothesis": note.hypothesis if note else fallback,
                "status": note.status if note else "in progress",
            }
        )
    return found


def _plan_tips(
    repo: Repo, plan: Plan, ours: dict[str, str], theirs: dict[str, str]
) -> dict[str, Any]:
    taken, clashes = [], []
    for ref, sha in sorted(theirs.items()):
        merged = merge_tips(repo, ours.get(ref), sha)
        if merged.new is not None:
            plan.move(ref, merged.new, ours.get(ref))
            taken.append(ref)
        clashes += [f"{ref}: {name}" for name in merged.not_taken]
    return {"updated": taken, "clashes": clashes}


def check_work_trees(repo: Repo, plan: Plan) -> None:
    """A moving branch checked out here, or in another work tree of this repository (the main
    one, where a pull ran in a round's work tree), moves with that tree's files when nothing
    local would be overwritten; otherwise the pull is refused before anything moves."""
    branches = [m for m in plan.moves if m[0].startswith("refs/heads/")]
    if not branches:
        return
    checked_out, here = repo.checked_out_branches(), repo.current_branch()
    for ref, new, old in branches:
        if ref not in checked_out:
            continue
        trees = ([repo] if ref == here else []) + other_trees_on(repo, ref)
        for tree in trees:
            _require_movable(tree, ref, new, "here" if tree is repo else f"in {tree.root}")
            assert old is not None
            plan.work_trees.append((tree, old, new))


def _require_movable(tree: Repo, ref: str, new: str, where: str) -> None:
    short = ref.removeprefix("refs/heads/")
    if new == ZERO_SHA:
        raise KgitError(
            f"{short} is checked out {where} and kgit pull would delete it (its round was "
            "closed in the other clone)",
            hint="git checkout the best line there (kgit status names it), then kgit pull",
        )
    if tree.dirty_paths():
        raise KgitError(
            f"{short} is checked out {where} with uncommitted changes, and kgit pull would move it",
            hint="there: commit or set the changes aside (git diff > FILE; git checkout -- .), "
            "then kgit pull",
        )


def apply_plan(repo: Repo, plan: Plan) -> None:
    """The work trees first (one can refuse: an untracked file in the way), then every ref in
    one transaction; a refusal puts the work trees already moved back."""
    if not plan.moves:
        return
    moved: list[tuple[Repo, str, str]] = []
    try:
        for tree, old, new in plan.work_trees:
            tree.move_work_tree(old, new)
            moved.append((tree, old, new))
        repo.update_refs(plan.moves, "kgit pull")
    except KgitError:
        for tree, old, new in reversed(moved):
            tree.move_work_tree(new, old)
        raise


def _after(repo: Repo, report: dict[str, Any]) -> None:
    """What this clone still lacks to run the campaign: trust, then the commit gate."""
    campaign = Campaign.load(repo, report["campaign"])
    report["trusted"] = trust_of(campaign).trusted
    report["gate_installed"] = not hooks_missing(repo)
