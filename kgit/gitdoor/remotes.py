"""Remotes: fetch, ask and push kgit's refs, each push a compare-and-swap."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kgit.gitdoor.refs import Refs
from kgit.gitdoor.runner import clean_env, spawn

if TYPE_CHECKING:
    from kgit.gitdoor.pushes import PushedRef, RefPush


class Remotes(Refs):
    """The repository's remotes."""

    def remote_names(self) -> list[str]:
        return self.git_text("remote").split()

    def upstream_remote(self) -> str | None:
        """The remote of the checked-out branch's upstream (None: no upstream, or a local one)."""
        branch = self.current_branch()
        if branch is None:
            return None
        found = self.config_get(f"branch.{branch.removeprefix('refs/heads/')}.remote")
        return found[-1] if found and found[-1] != "." else None

    def fetch(self, remote: str, refspecs: Sequence[str]) -> None:
        """`git fetch --prune` of REFSPECS only (no tags, no submodules, no FETCH_HEAD)."""
        self.git(
            "fetch", "--quiet", "--prune", "--no-tags", "--no-write-fetch-head",
            "--recurse-submodules=no", remote, *refspecs,
        )  # fmt: skip

    def ls_remote(
        self, remote: str, patterns: Sequence[str], timeout: float
    ) -> dict[str, str] | None:
        """Ref -> sha of REMOTE's refs matching PATTERNS, or None when the remote cannot be asked
        within TIMEOUT seconds without a prompt (for hints: never worth a hang)."""
        try:
            proc = spawn(
                ["git", "ls-remote", remote, *patterns],
                self.root,
                None,
                clean_env({"GIT_TERMINAL_PROMPT": "0"}),
                timeout=timeout,
                detached=True,
            )
        except subprocess.TimeoutExpired:
            return None
        if proc.returncode != 0:
            return None
        found: dict[str, str] = {}
        for line in proc.stdout.decode(errors="replace").splitlines():
            sha, _, ref = line.partition("\t")
            found[ref] = sha
        return found

    def push(
        self, remote: str, updates: Sequence[RefPush], *, atomic: bool = True
    ) -> tuple[bool, list[PushedRef], str]:
        """Push each update as a compare-and-swap: REF moves to NEW (None: deleted) only if it is
        still at EXPECT on the remote (None: must not exist), `--force-with-lease=REF:EXPECT`.
        Returns (all pushed, git's word on each ref, stderr)."""
        from kgit.gitdoor.pushes import PushedRef  # a push's own: not loaded by other commands

        args = ["push", "--porcelain", "--no-recurse-submodules", *(["--atomic"] if atomic else [])]
        for update in updates:
            args.append(f"--force-with-lease={update.ref}:{update.expect or ''}")
        args += [remote, *(f"{u.new or ''}:{u.ref}" for u in updates)]
        proc = self._run(args)
        results = []
        for line in proc.stdout.decode(errors="replace").splitlines():
            flag, sep, rest = line.partition("\t")
            if not sep or len(flag) != 1:
                continue
            spec, _, summary = rest.partition("\t")
            results.append(PushedRef(spec.rpartition(":")[2], flag != "!", summary))
        return proc.returncode == 0, results, proc.stderr.decode(errors="replace").strip()
