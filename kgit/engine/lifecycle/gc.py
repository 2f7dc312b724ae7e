"""`kgit gc`: the measuring trees nothing will measure in again, removed (kgit/engine/measuring/
sides/trees.py): those of a campaign that is gone (deleted, or its refs removed by hand), of a
finished one, and of a round's linked work tree that was removed; then git forgets the work trees
whose folders are gone (`git worktree prune`).

A tree is scratch (checked out again, sealed the same way, when a side needs it), so a tree of a
campaign still running is kept only to save the next checkout, and is not collected. Nor are the
trees of a finished campaign's other linked work trees while those exist: a round may still be
measured there. Nor is a tree another live kgit measures in (its holder mark,
kgit/engine/measuring/sides/trees.py): the campaign may have been reopened meanwhile, or an audit
runs there. What goes is decided under the write lock, so a reopen that ran while gc looked is seen."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from kgit.engine.campaign import Campaign, list_campaigns
from kgit.engine.measuring.sides.trees import (
    MB,
    checkouts_in,
    disk_bytes,
    holder_of,
    is_checkout,
    remove_trees,
    trees_root,
)
from kgit.gitdoor import Repo
from kgit.records.upkeep_results import Collected, TreeInUse, TreesFolder


@dataclass(frozen=True)
class Leftover:
    """A folder of measuring trees that nothing will measure in again, and why."""

    folder: Path
    campaign: str
    reason: str
    whole: bool  # the folder goes with its locks and logs, not only its trees
    keep: frozenset[str] = frozenset()  # sub-folders whose trees stay (or go on their own)

    def trees(self) -> list[Path]:
        """The trees that go: those another live kgit measures in stay (`in_use`)."""
        return [tree for tree in checkouts_in(self.folder, self.keep) if holder_of(tree) is None]

    def in_use(self) -> list[tuple[Path, int]]:
        held = ((tree, holder_of(tree)) for tree in checkouts_in(self.folder, self.keep))
        return [(tree, pid) for tree, pid in held if pid is not None]

    def shown(self, repo: Repo, size: int) -> TreesFolder:
        return TreesFolder(
            path=str(self.folder.relative_to(repo.common_dir.parent)),
            campaign=self.campaign,
            reason=self.reason,
            trees=tuple(tree.name for tree in self.trees()),
            in_use=tuple(
                TreeInUse(tree=str(tree.relative_to(self.folder)), pid=pid)
                for tree, pid in self.in_use()
            ),
            mb=round(size / MB, 1),
        )


def leftovers(repo: Repo) -> list[Leftover]:
    """Every folder of measuring trees `kgit gc` removes, in name order."""
    root = trees_root(repo)
    if not root.is_dir():
        return []
    names, linked = set(list_campaigns(repo)), repo.linked_tree_names()
    found: list[Leftover] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        name = folder.name
        if name not in names:
            found.append(Leftover(folder, name, "no such campaign (deleted)", whole=True))
            continue
        children = [p for p in sorted(folder.iterdir()) if p.is_dir() and not is_checkout(p)]
        gone = [child for child in children if child.name not in linked]
        found += [Leftover(c, name, f"work tree {c.name} is gone", whole=True) for c in gone]
        # A finished campaign's own sides go; those of a live linked work tree stay.
        keep = frozenset(linked | {child.name for child in gone})
        if checkouts_in(folder, keep) and Campaign.load(repo, name).state.finished:
            found.append(Leftover(folder, name, "campaign finished", whole=False, keep=keep))
    return found


def collect(repo: Repo, *, dry_run: bool) -> Collected:
    """Remove the leftovers (with DRY_RUN, only say what would go); what went and what it freed."""
    listed_before, total_before = len(repo.worktree_paths()), disk_bytes(trees_root(repo))
    # Decided and removed under the lock: no finish, delete or reopen of a campaign meanwhile.
    with contextlib.nullcontext() if dry_run else repo.write_lock():
        found = leftovers(repo)
        sizes = [_freed_size(item) for item in found]
        rows = tuple(item.shown(repo, size) for item, size in zip(found, sizes, strict=True))
        freed = sum(sizes)
        if not dry_run:
            freed = sum(remove_trees(repo, i.folder, whole=i.whole, keep=i.keep) for i in found)
            repo.prune_worktrees()
    trees = sum(len(row.trees) for row in rows)
    return Collected(
        dry_run=dry_run,
        leftovers=rows,
        trees=trees,
        freed_mb=round(freed / MB, 1),
        kept_mb=round((total_before - freed) / MB, 1),
        git_worktrees_before=listed_before,
        git_worktrees_after=listed_before - trees if dry_run else len(repo.worktree_paths()),
    )


def _freed_size(item: Leftover) -> int:
    if item.whole and not item.in_use():
        return disk_bytes(item.folder)
    return sum(disk_bytes(tree) for tree in item.trees())
