"""A repository: every subject of the door on one object, and how to open one."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kgit.errors import KgitError
from kgit.gitdoor.git_notes import Notes
from kgit.gitdoor.history import History
from kgit.gitdoor.remotes import Remotes
from kgit.gitdoor.runner import clean_env, spawn
from kgit.gitdoor.snapshot import Snapshot


@dataclass(frozen=True)
class Repo(Notes, Remotes, History, Snapshot):
    """A work tree of a git repository. `index_file` is set only inside a commit hook."""


def open_repo(start: Path | None = None, *, index_file: str | None = None) -> Repo:
    """The repository containing START (default: the current directory)."""
    cwd = (start or Path.cwd()).resolve()
    cmd = ["git", "rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"]
    cmd += ["--git-path", "hooks"]  # in the same git process: `kgit status` shows the hooks
    # and reads the branch (`--` so that a file named HEAD is not taken for it): on an unborn
    # branch this part fails, after printing the rest, and the branch is asked for later
    cmd += ["--symbolic-full-name", "HEAD", "--"]
    proc = spawn(cmd, cwd, None, clean_env())
    lines = proc.stdout.decode().splitlines()
    if len(lines) < 4:
        raise KgitError(
            f"{cwd} is not inside a git work tree",
            hint="run kgit from the kernel repository (git init first if it has none)",
        )
    top, git_dir, common, hooks = lines[:4]
    head = lines[4] if proc.returncode == 0 and lines[5:] == ["--"] else None
    # --git-common-dir and --git-path are relative to the current directory, not to the top
    # of the work tree.
    common_path = Path(common) if os.path.isabs(common) else cwd / common
    hooks_path = (cwd / hooks).resolve()  # an absolute HOOKS stays as it is
    return Repo(Path(top), Path(git_dir), common_path.resolve(), index_file, hooks_path, head)
