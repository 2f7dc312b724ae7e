"""kgit's measuring trees on disk, `.git/kgit/worktrees/<campaign>/` (kgit/engine/measuring/sides/
side_trees.py checks them out): which there are, what they cost, and their removal once nothing
will measure in them (a finished or deleted campaign, a round's work tree that is gone).

Each tree is a full checkout of one commit (and a rebuild's outputs), and a campaign has up to
six of them: reference, candidate, audit and up to three more audit trees side by side. They
are scratch: `measuring_tree` checks one out again, sealed the same way, the next time a side
needs it, so removing one loses only the checkout. Its `.built` marker goes with it, or a fresh
checkout would pass for a built one.

A tree a kgit process measures in carries a holder mark beside it (`<side>.holder`: that process's
pid and start time, written before the checkout), which that process keeps locked (flock) until
it ends: while it runs, nothing removes the tree, whatever the campaign's state (a finished
campaign reopened and measured meanwhile, an audit of a finished one). A mark holds a tree only
while it is locked and its process runs: the kernel drops the lock of a killed kgit, a recycled
pid is known by its start time, and a mark written by hand naming a live process (pid 1, which
never ends) holds nothing, or `kgit gc` would keep that tree forever."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Collection
from pathlib import Path
from typing import IO

from kgit.engine.orphans import process_start, running
from kgit.gitdoor import Repo, locks

MB = 1_000_000

# The marks this process holds, open and locked until it ends (the kernel then drops the locks).
_HELD: dict[Path, IO[str]] = {}


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


def mark_held(tree: Path) -> None:
    """This process measures in TREE from now until it ends (see the module's docstring)."""
    tree.parent.mkdir(parents=True, exist_ok=True)
    if tree in _HELD and _same_file(_HELD[tree], _holder_mark(tree)):
        return
    mark = _holder_mark(tree).open("a+")  # not truncated before it is locked
    fcntl.flock(mark, fcntl.LOCK_SH)  # shared: two kgit processes may measure in one tree
    mark.truncate(0)
    mark.write(f"{os.getpid()}:{process_start(os.getpid())}\n")
    mark.flush()
    old, _HELD[tree] = _HELD.get(tree), mark
    if old is not None:
        old.close()


def _same_file(handle: IO[str], path: Path) -> bool:
    """Whether HANDLE is still the file at PATH (this process's own finish removes its marks)."""
    try:
        return os.path.samestat(os.fstat(handle.fileno()), path.stat())
    except OSError:
        return False


def holder_of(tree: Path) -> int | None:
    """The pid of the live kgit process, other than this one, that measures in TREE; None when
    none does (this process removes what it measured in itself: a finish its trees)."""
    try:
        pid, _, start = _holder_mark(tree).read_text().strip().partition(":")
    except OSError:
        return None
    if not pid.isdigit() or int(pid) == os.getpid():
        return None
    return int(pid) if running(int(pid), start) and locks.held(_holder_mark(tree)) else None


def _holder_mark(tree: Path) -> Path:
    return tree.with_name(f"{tree.name}.holder")


def remove_trees(repo: Repo, folder: Path, *, whole: bool, keep: Collection[str] = ()) -> int:
    """Remove the measuring trees under FOLDER (checkouts_in) with their build and holder marks,
    and with WHOLE the folder itself (its locks and logs); git forgets them. A tree another live
    kgit measures in stays, with its marks and its folder. The bytes freed."""
    if not folder.is_dir():
        return 0
    before = disk_bytes(folder)
    trees = checkouts_in(folder, keep)
    held = {tree for tree in trees if holder_of(tree) is not None}
    for tree in trees:
        if tree in held:
            continue
        repo.remove_worktree(str(tree))
        shutil.rmtree(tree, ignore_errors=True)  # what git's remove left (a locked tree)
    if whole and not held:
        shutil.rmtree(folder, ignore_errors=True)
    else:
        for marker in [*folder.rglob("*.built"), *folder.rglob("*.holder")]:
            side = marker.with_suffix("")
            if (marker.parent == folder or marker.parent.name not in keep) and side not in held:
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
