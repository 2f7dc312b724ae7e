"""kgit's measuring trees on disk, `.git/kgit/worktrees/<campaign>/` (kgit/engine/measuring/sides/
side_trees.py checks them out): which there are, what they cost, and their removal once nothing
will measure in them (a finished or deleted campaign, a round's work tree that is gone).

Each tree is a full checkout of one commit (and a rebuild's outputs), and a campaign has up to
six of them: reference, candidate, audit and up to three more audit trees side by side. They
are scratch: `measuring_tree` checks one out again, sealed the same way, the next time a side
needs it, so removing one loses only the checkout. Its `.built` marker goes with it, or a fresh
checkout would pass for a built one."""

from __future__ import annotations

import os
import shutil
from collections.abc import Collection
from pathlib import Path

from kgit.gitdoor import Repo

MB = 1_000_000


def trees_root(repo: Repo) -> Path:
    return repo.kgit_dir() / "worktrees"


def campaign_folder(repo: Repo, name: str) -> Path:
    return trees_root(repo) / name


def disk_bytes(path: Path) -> int:
    """What PATH takes on disk, counted as `du` does, links not followed."""
    total = 0
    for top, folders, files in os.walk(path):
        for entry in (*folders, *files):
            try:
                total += os.lstat(os.path.join(top, entry)).st_blocks * 512
            except OSError:
                continue  # gone while walking
    return total


def is_checkout(path: Path) -> bool:
    return (path / ".git").exists()


def checkouts_in(folder: Path, keep: Collection[str] = ()) -> list[Path]:
    """The measuring trees under a campaign's FOLDER: its sides, and the sides of rounds run in
    linked work trees (`<linked>/<side>`), but for the linked work trees named in KEEP."""
    if not folder.is_dir():
        return []
    found = []
    for child in sorted(folder.iterdir()):
        if is_checkout(child):
            found.append(child)
        elif child.is_dir() and child.name not in keep:
            found += [side for side in sorted(child.iterdir()) if is_checkout(side)]
    return found


def remove_trees(repo: Repo, folder: Path, *, whole: bool, keep: Collection[str] = ()) -> int:
    """Remove the measuring trees under FOLDER (checkouts_in) with their build markers, and with
    WHOLE the folder itself (its locks and logs); git forgets them. The bytes freed."""
    if not folder.is_dir():
        return 0
    before = disk_bytes(folder)
    for tree in checkouts_in(folder, keep):
        repo.remove_worktree(str(tree))
        shutil.rmtree(tree, ignore_errors=True)  # what git's remove left (a locked tree)
    if whole:
        shutil.rmtree(folder, ignore_errors=True)
    else:
        for marker in folder.rglob("*.built"):
            if marker.parent == folder or marker.parent.name not in keep:
                marker.unlink(missing_ok=True)
    repo.prune_worktrees()
    return before - (disk_bytes(folder) if folder.exists() else 0)


def remove_campaign_trees(repo: Repo, name: str) -> dict[str, int]:
    """After a campaign is finished: its measuring trees go, but those of a linked work tree
    other than this one, where a round may still be measured; locks and logs stay."""
    folder = campaign_folder(repo, name)
    keep = repo.linked_tree_names() - {repo.linked_tree() or ""}
    trees = len(checkouts_in(folder, keep))
    return {
        "trees_removed": trees,
        "bytes_freed": remove_trees(repo, folder, whole=False, keep=keep),
    }
