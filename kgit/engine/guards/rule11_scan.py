"""Rule 11 over a round's change, as validate, accept and `kgit finish` run it: the changed
files' texts on both sides, read from git, handed to the scan (kgit/judge/rule11.py: a shortcut
that vanishes in a training step, or tampering)."""

from __future__ import annotations

from kgit.gitdoor import Repo
from kgit.judge.rule11 import Finding, scan_change


def change_files(repo: Repo, old: str, new: str) -> dict[str, tuple[str | None, str | None]]:
    """Each path changed from commit OLD to NEW, with its text on both sides (None: absent).
    Binary-looking files are read too (a NUL byte in a C++ comment must not hide a line). Read
    through one `git cat-file --batch`, never through `git diff`, whose output a
    committed .gitattributes can turn into "Binary files differ"."""
    paths = repo.changed_paths(old, new)
    found = repo.read_objects([f"{old}:{p}" for p in paths] + [f"{new}:{p}" for p in paths])
    return {path: (_text(found[i]), _text(found[len(paths) + i])) for i, path in enumerate(paths)}


def _text(found: tuple[str, bytes] | None) -> str | None:
    return None if found is None else found[1].decode("utf-8", errors="replace")


def rule11_findings(repo: Repo, old: str, new: str) -> list[Finding]:
    """What the change OLD..NEW adds that rule 11 forbids."""
    return scan_change(change_files(repo, old, new))
