"""The commit gate's hooks in a repository: installing the shims, and telling whether they are
there. A clone gets no hooks from its remote (git never transfers them), so a campaign pulled
into a clone has no gate until `kgit hooks install`, which runs only after `kgit trust`."""

from __future__ import annotations

import os
import stat
import sys

from kgit.errors import KgitError
from kgit.gitdoor import Repo
from kgit.resources import data_dir

HOOK_NAMES = ("pre-commit", "prepare-commit-msg")
_MARKER = "kgit hook shim"


def install_hooks(repo: Repo) -> list[str]:
    """Install the shim as each hook, chaining (never clobbering) a hook that was there."""
    template = (data_dir("hooks") / "pre-commit").read_text()
    shim = template.replace("@KGIT_PYTHON@", sys.executable)
    folder = repo.hooks_dir()
    folder.mkdir(parents=True, exist_ok=True)
    installed = []
    for name in HOOK_NAMES:
        path = folder / name
        if path.exists() and _MARKER not in path.read_text(errors="replace"):
            chained = folder / f"{name}.kgit-chained"
            if chained.exists():
                raise KgitError(
                    f"{path} is not kgit's and {chained.name} is taken",
                    hint=f"merge the two hooks by hand, remove {chained}, then kgit hooks install",
                )
            path.rename(chained)
            chained.chmod(chained.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            installed.append(f"{name} (chained to your existing hook)")
        else:
            installed.append(name)
        path.write_text(shim)
        path.chmod(0o755)  # a hook without its run bit is silently skipped by git
    return installed


def hooks_missing(repo: Repo) -> list[str]:
    """The hooks of HOOK_NAMES that are not kgit's shim, runnable, where git looks for hooks
    (a fresh clone: all of them; a hook without its run bit is skipped by git: missing too)."""
    folder = repo.hooks_dir()
    missing = []
    for name in HOOK_NAMES:
        path = folder / name
        try:
            ours = _MARKER in path.read_text(errors="replace")
        except OSError:
            ours = False
        if not ours or not os.access(path, os.X_OK):
            missing.append(name)
    return missing


def configure_git(repo: Repo) -> None:
    """`git log` shows each round's short summary without flags (the full round notes: `git log
    --notes=kgit/<campaign>/rounds`). kgit's notes do not follow amend and rebase: an amended or
    rebased round is a commit kgit has not judged, and git's copy (`notes.rewriteRef`, which a
    kgit before this set) writes kgit's notes refs without kgit's lock, so that a save at the
    same moment lost its swap, or its note to git's write."""
    repo.config_unset_local("notes.rewriteRef", r"^refs/notes/kgit/\*$")
    # A kgit before this displayed the whole round notes (~40 lines of YAML a round).
    repo.config_unset_local("notes.displayRef", r"^refs/notes/kgit/\*/rounds$")
    repo.config_add("notes.displayRef", "refs/notes/kgit/*/log")
