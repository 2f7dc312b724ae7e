"""The work tree: its state, checkouts, and linked work trees."""

from __future__ import annotations

from pathlib import Path

from kgit.gitdoor.runner import GitCore


class WorkTree(GitCore):
    """The work tree and the linked work trees."""

    def dirty_paths(self) -> list[str]:
        """Tracked files with staged or unstaged changes (untracked files are the user's)."""
        out = self.git("status", "--porcelain=v1", "-z", "--untracked-files=no")
        paths = []
        for entry in out.split(b"\0"):
            if len(entry) > 3:
                paths.append(entry[3:].decode())
        return paths

    def unclean_paths(self) -> list[str]:
        """Tracked files that differ from HEAD, and untracked files git does not ignore."""
        out = self.git("status", "--porcelain=v1", "-z", "--untracked-files=all")
        return [entry[3:].decode() for entry in out.split(b"\0") if len(entry) > 3]

    def switch(self, branch_ref: str) -> None:
        """Check out a local branch (full ref) in this work tree."""
        self.git("checkout", "-q", branch_ref.removeprefix("refs/heads/"))

    def detach(self, commit: str) -> None:
        """Check out COMMIT without a branch in this work tree."""
        self.git("checkout", "-q", "--detach", commit)

    def add_worktree(self, path: Path, branch_ref: str) -> None:
        """A new linked work tree at PATH with the local branch BRANCH_REF checked out."""
        self.git("worktree", "prune")
        self.git("worktree", "add", "-q", str(path), branch_ref.removeprefix("refs/heads/"))

    def move_work_tree(self, old: str, new: str) -> None:
        """Bring this work tree's index and files from commit OLD to commit NEW (its branch ref
        was just moved from OLD to NEW): a two-tree `read-tree -m -u`, which refuses to overwrite
        local changes."""
        self.git("read-tree", "-m", "-u", old, new)
