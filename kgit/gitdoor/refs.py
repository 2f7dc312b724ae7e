"""Refs: resolve, list, and move them by compare-and-swap, alone or in one transaction."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from kgit.errors import GitError, KgitError
from kgit.gitdoor.runner import ZERO_SHA, GitCore

WORKTREE_LIST_TRIES = 6  # about 0.75 s of waiting in all


class RefsMoved(KgitError):
    """A compare-and-swap lost: some ref was no longer at the sha the caller expected (or git
    could not take a ref's lock file: another writer was moving it)."""


class Refs(GitCore):
    """Refs by name, moved only by compare-and-swap."""

    def rev_parse(self, rev: str) -> str | None:
        """The full sha of REV, or None when it does not resolve."""
        out = self.git("rev-parse", "-q", "--verify", f"{rev}^{{object}}", check=False)
        sha = out.decode().strip()
        return sha or None

    def update_ref(self, ref: str, new: str, old: str | None, message: str = "kgit") -> None:
        """Compare-and-swap: move REF to NEW only if it still points at OLD (None: must not exist)."""
        expected = old if old is not None else ZERO_SHA
        proc = self._run(["update-ref", "-m", message, ref, new, expected])
        if proc.returncode != 0:
            raise RefsMoved(
                f"{ref} moved while kgit was updating it",
                hint="another kgit or git process changed it; run the command again",
                details=proc.stderr.decode(errors="replace").strip(),
            )

    def update_refs(self, moves: Sequence[tuple[str, str, str | None]], message: str) -> None:
        """Compare-and-swap of several refs in one transaction: each (REF, NEW, OLD) moves only
        if every REF still points at its OLD (None: must not exist), else none moves. One git
        process, so a kill leaves all of them moved or none."""
        lines = "".join(f"update {ref} {new} {old or ZERO_SHA}\n" for ref, new, old in moves)
        proc = self._run(["update-ref", "-m", message, "--stdin"], lines.encode())
        if proc.returncode != 0:
            raise RefsMoved(
                f"{', '.join(ref for ref, _, _ in moves)} moved while kgit was updating them",
                hint="another kgit or git process changed them; run the command again",
                details=proc.stderr.decode(errors="replace").strip(),
            )

    def delete_ref(self, ref: str, old: str) -> None:
        self.git("update-ref", "-d", ref, old)

    def delete_refs(self, refs: Mapping[str, str], message: str) -> None:
        """Delete every REF that still points at its sha, in one transaction (all or none)."""
        lines = "".join(f"delete {ref} {sha}\n" for ref, sha in refs.items())
        proc = self._run(["update-ref", "-m", message, "--stdin"], lines.encode())
        if proc.returncode != 0:
            raise KgitError(
                "refs moved while kgit was deleting them",
                hint="another kgit or git process changed them; run the command again",
                details=proc.stderr.decode(errors="replace").strip(),
            )

    def is_valid_ref_name(self, ref: str) -> bool:
        """Whether git accepts REF as the full name of a ref (`check-ref-format`)."""
        return self.succeeds("check-ref-format", ref)

    def refs(self, prefix: str) -> dict[str, str]:
        """All refs under PREFIX, name -> sha."""
        out = self.git("for-each-ref", "--format=%(objectname) %(refname)", prefix)
        result: dict[str, str] = {}
        for line in out.decode().splitlines():
            sha, name = line.split(" ", 1)
            result[name] = sha
        return result

    def tips_and_trees(self, prefix: str) -> dict[str, tuple[str, str | None]]:
        """All refs under PREFIX, name -> (sha, the tree of its commit; None for a ref to
        another kind of object), in one git process."""
        out = self.git("for-each-ref", "--format=%(objectname) %(tree) %(refname)", prefix)
        result: dict[str, tuple[str, str | None]] = {}
        for line in out.decode().splitlines():
            sha, tree, name = line.split(" ", 2)
            result[name] = (sha, tree or None)
        return result

    def current_branch(self) -> str | None:
        """The checked-out branch as a full ref, or None on a detached HEAD."""
        out = self.git("symbolic-ref", "-q", "HEAD", check=False).decode().strip()
        return out or None

    def branch_at_open(self) -> str | None:
        """`current_branch` as it was when the repository opened, read in open_repo's one git
        process (asked now where that could not say: an unborn branch). For a command that reads
        it once, at its start (`kgit status`); one that moves HEAD asks `current_branch`."""
        if self.head_at_open is None:
            return self.current_branch()
        return self.head_at_open if self.head_at_open.startswith("refs/") else None

    def checked_out_branches(self) -> set[str]:
        """The branches (full refs) checked out in any work tree of the repository."""
        return {branch for _, branch in self.checkouts()}

    def checkouts(self) -> list[tuple[Path, str]]:
        """(work tree, branch as a full ref) for each work tree of the repository that has a
        branch checked out (`git worktree list`: one record of `key value` fields per tree, a
        blank field between records)."""
        out = self._worktree_list()
        found, tree = [], None
        for field in out.decode(errors="replace").split("\0"):
            if field.startswith("worktree "):
                tree = Path(field.removeprefix("worktree "))
            elif field.startswith("branch ") and tree is not None:
                found.append((tree, field.removeprefix("branch ")))
        return found

    def _worktree_list(self) -> bytes:
        """`git worktree list`, read again while another process is creating a work tree: git
        writes a new tree's admin folder in steps, and a list taken between them fails ("failed
        to read .git/worktrees/NAME/commondir"; once in 15 runs of four workers on 2 cores)."""
        for attempt in range(WORKTREE_LIST_TRIES):
            try:
                return self.git("worktree", "list", "--porcelain", "-z")
            except GitError as error:
                half_made = "failed to read" in error.message and "worktrees" in error.message
                if not half_made or attempt == WORKTREE_LIST_TRIES - 1:
                    raise
            time.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")  # the last attempt returns or raises
