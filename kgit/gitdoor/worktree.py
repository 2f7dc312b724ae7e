"""The work tree: its state, checkouts and linked work trees (the staged snapshot a commit hook
tests: kgit/gitdoor/snapshot.py)."""

from __future__ import annotations

from collections.abc import Sequence
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

    def clean_at(self, commit: str) -> bool:
        """Whether the index and the tracked files hold COMMIT's files exactly, whatever HEAD
        says (a branch moved under this work tree leaves them at its old commit)."""
        self.git("update-index", "-q", "--refresh", check=False)  # stat-only changes are none
        return self.succeeds("diff-index", "--quiet", "--cached", commit, "--") and self.succeeds(
            "diff-files", "--quiet"
        )

    def unclean_paths(self) -> list[str]:
        """Tracked files that differ from HEAD, and untracked files git does not ignore."""
        out = self.git("status", "--porcelain=v1", "-z", "--untracked-files=all")
        return [entry[3:].decode() for entry in out.split(b"\0") if len(entry) > 3]

    def switch(self, branch_ref: str) -> None:
        """Check out a local branch (full ref) in this work tree."""
        self.git("checkout", "-q", branch_ref.removeprefix("refs/heads/"))

    def detach(self, commit: str | None = None) -> None:
        """Check out COMMIT (default: HEAD's, the files staying as they are) without a branch in
        this work tree."""
        self.git("checkout", "-q", "--detach", *([commit] if commit is not None else []))

    def force_detach(self, commit: str) -> None:
        """Check out COMMIT without a branch, overwriting any change to its tracked files."""
        self.git("checkout", "-q", "-f", "--detach", commit)

    def fresh_index(self) -> None:
        """A new index for this work tree, from HEAD, every tracked file written from it: an
        index's skip-worktree and assume-unchanged bits hide a changed file from checkout,
        clean and status alike (kgit's candidate tree ran a harness edited under such a bit)."""
        index = Path(self.git_text("rev-parse", "--path-format=absolute", "--git-path", "index"))
        index.unlink(missing_ok=True)
        self.git("reset", "-q", "--hard", "HEAD")

    def restore_from_index(self, *, force: bool = False) -> None:
        """Put the index's version of every tracked file back in the work tree; FORCE also
        overwrites what git would refuse to (unmerged paths)."""
        self.git("checkout", *(["-q", "-f"] if force else []), "--", ".")

    def clean(self, *, ignored: bool) -> None:
        """Remove the untracked files (and the ignored ones, build outputs, when IGNORED)."""
        self.git("clean", "-q", "-ffdx" if ignored else "-ffd")

    def stage_all(self) -> None:
        """Stage every change of the work tree, new and removed files included."""
        self.git("add", "-A")

    def reset_hard(self) -> None:
        """Back to HEAD: the index and the tracked files lose every change."""
        self.git("reset", "-q", "--hard")

    def tracked_files(self) -> list[str]:
        return [p.decode() for p in self.git("ls-files", "-z").split(b"\0") if p]

    def rebase_or_abort(self, onto: str) -> bool:
        """Rebase the checked-out branch onto ONTO; on a conflict, abort (nothing moves) and
        return False. Notes are not copied onto the rebased commits (`notes.rewriteRef` would):
        a rebased round is a new tree with no verdict yet, and git's copy writes kgit's notes
        refs without kgit's lock."""
        if self.succeeds("-c", "notes.rewrite.rebase=false", "rebase", "-q", onto):
            return True
        self.succeeds("rebase", "--abort")
        return False

    def add_trailers(self, message_file: str, trailers: Sequence[str]) -> None:
        """Append TRAILERS (`Key: value`) to the commit message in MESSAGE_FILE, each one only
        if the message has no trailer of that key yet."""
        args = ["interpret-trailers", "--in-place", "--if-exists", "doNothing"]
        for trailer in trailers:
            args += ["--trailer", trailer]
        self.git(*args, message_file)

    # -- linked work trees -----------------------------------------------------------------------

    def worktree_paths(self) -> list[str]:
        """Every work tree `git worktree list` shows, the main one first."""
        out = self.git("worktree", "list", "--porcelain", "-z")
        return [
            f.decode()[len("worktree ") :] for f in out.split(b"\0") if f.startswith(b"worktree ")
        ]

    def linked_tree_names(self) -> set[str]:
        """The names of the linked work trees git keeps (.git/worktrees/NAME, `linked_tree`)."""
        folder = self.common_dir / "worktrees"
        return {p.name for p in folder.iterdir() if p.is_dir()} if folder.is_dir() else set()

    def prune_worktrees(self) -> None:
        """Forget the linked work trees whose folders are gone."""
        with self.worktree_lock():
            self.git("worktree", "prune")

    def add_worktree(self, path: Path, branch_ref: str) -> None:
        """A new linked work tree at PATH with the local branch BRANCH_REF checked out."""
        self._add(str(path), branch_ref.removeprefix("refs/heads/"))

    def add_detached_worktree(self, path: Path, commit: str) -> None:
        """A new linked work tree of kgit's own at PATH holding COMMIT without a branch (PATH may
        be a folder git still lists, e.g. one removed by hand, even one marked locked: a
        `worktree add` killed mid-checkout leaves its "initializing" mark, and under kgit's
        work-tree lock no other add of kgit's is under way)."""
        self._add("-f", "-f", "--detach", str(path), commit)

    def _add(self, *args: str) -> None:
        """`git worktree add` after a prune, both under kgit's work-tree lock: git's add makes
        .git/worktrees/NAME before it writes the `locked` file that keeps `worktree prune` off,
        and a prune in between deletes the folder under it ("could not open
        '.git/worktrees/NAME/locked' for writing"): 16 of 525 adds beside a pruning loop here,
        and a parallel worker lost a gain to it."""
        with self.worktree_lock():
            self.git("worktree", "prune")
            self.git("worktree", "add", "-q", *args)

    def remove_worktree(self, path: str) -> None:
        """Remove kgit's linked work tree at PATH, its changes with it, locked or not; one
        already gone is not an error."""
        with self.worktree_lock():
            self.git("worktree", "remove", "-f", "-f", path, check=False)

    def move_work_tree(self, old: str, new: str) -> None:
        """Bring this work tree's index and files from commit OLD to commit NEW (its branch ref
        was just moved from OLD to NEW): a two-tree `read-tree -m -u`, which refuses to overwrite
        local changes."""
        self.git("read-tree", "-m", "-u", old, new)
