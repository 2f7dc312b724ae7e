"""Rounds in parallel: each round in flight beyond the first lives on a work tree of its own
(`git worktree`), so that its edits, commits and gate never touch another round's files. The
record stays one (the campaign's refs, shared by every work tree of the repository); round
numbers come from it under the write lock, so two work trees never open the same round."""

from __future__ import annotations

from pathlib import Path

from kgit.engine.campaign import Campaign
from kgit.engine.rounds.preconditions import require_clean
from kgit.errors import KgitError
from kgit.gitdoor import open_repo
from kgit.progress import Say
from kgit.records.names import parse_round_branch


def require_free_worktree(campaign: Campaign, path: Path) -> None:
    """PATH may take a new round: missing (it will be added), or a work tree of this repository
    that is clean and holds no round in flight."""
    if not path.exists():
        return
    if not (path / ".git").exists():
        raise KgitError(
            f"{path} exists and is not a git work tree",
            hint="name a new folder, or one that a kgit worker used before",
        )
    tree = open_repo(path)
    if tree.common_dir.resolve() != campaign.repo.common_dir.resolve():
        raise KgitError(f"{path} is a work tree of another repository", hint="name a new folder")
    require_clean(tree, f"start a round in {path}")
    parsed = parse_round_branch(tree.current_branch())
    if parsed and parsed[0] == campaign.name and campaign.state.open_numbered(parsed[1]):
        raise KgitError(
            f"round-{parsed[1]} is still in progress in {path}: one change at a time per work tree",
            hint="validate it, then accept or roll it back there",
        )


def check_out_in_worktree(campaign: Campaign, path: Path, branch: str) -> None:
    """BRANCH checked out in the work tree at PATH, adding the work tree if it is missing."""
    if path.exists():
        open_repo(path).switch(branch)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        campaign.repo.add_worktree(path, branch)


def leave_for_best(campaign: Campaign, branch: str) -> None:
    """Step off the round's BRANCH: the main work tree checks out the best line; a linked work
    tree (the best line is checked out in the main one, and git checks a branch out once) holds
    the best line's tip detached, ready for its next round."""
    repo = campaign.repo
    if repo.linked_tree() is None:
        repo.switch(campaign.refs.best)
    elif repo.current_branch() in (branch, None):
        repo.detach(campaign.best_tip())


def rebase_round(campaign: Campaign, say: Say) -> str | None:
    """Replay the round checked out here onto the best line's tip, which another round's accept
    moved, and record the new parent. Returns the conflict in words (the rebase is aborted and
    nothing moves), None once rebased. The rebased tree is new: validate gates and measures it."""
    repo = campaign.repo
    parsed = parse_round_branch(repo.current_branch())
    if parsed is None or parsed[0] != campaign.name:
        raise KgitError("no round branch of this campaign is checked out here", hint="kgit status")
    number, best = parsed[1], campaign.best_tip()
    if not repo.rebase_or_abort(best):
        return f"its change conflicts with the best line at {best[:10]} (another round's accept)"
    with repo.write_lock():
        current = campaign.reload()
        open_round = current.state.open_numbered(number)
        if open_round is None:
            raise KgitError(
                f"round-{number} was closed by another kgit process", hint="kgit status"
            )
        open_round.parent = best
        current.save(f"round-{number} rebased onto {best[:10]}")
    say(f"round-{number}: the best line moved; rebased onto {best[:10]}, validating again")
    return None
