"""What a round may change: the kernel's files (`kernel_source`), and nothing that measures or
gates it. Pure functions over paths and commands."""

from __future__ import annotations

import fnmatch
import posixpath
import shlex
from collections.abc import Mapping, Sequence


def in_kernel_source(path: str, sources: Sequence[str]) -> bool:
    """PATH is one of SOURCES, under one of them (a folder), or matches one (a glob)."""
    for source in sources:
        folder = source.rstrip("/") + "/"
        if path == source or path.startswith(folder) or fnmatch.fnmatchcase(path, source):
            return True
    return False


def outside_kernel_source(changed: Sequence[str], sources: Sequence[str]) -> list[str]:
    """The changed paths a round may not make; none can be told when no source is declared."""
    if not sources:
        return []
    return [path for path in changed if not in_kernel_source(path, sources)]


def links_out_of_repo(links: Mapping[str, str]) -> list[str]:
    """The symbolic links of LINKS (path -> target) that point outside the repository, as
    `path -> target`: what runs through such a link is not in git, and the scans of a round's
    change read the link's text, not the code that runs."""
    out = []
    for path, target in sorted(links.items()):
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        if target.startswith("/") or resolved == ".." or resolved.startswith("../"):
            out.append(f"{path} -> {target}")
    return out


def command_paths(command: str) -> list[str]:
    """The words of COMMAND that may name files or folders (`tests/test_x.py::test_a` names
    `tests/test_x.py`): candidates for the frozen set; the caller keeps those in the tree."""
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    paths = []
    for word in words:
        if word.startswith("-") or "=" in word or not word.strip():
            continue
        path = word.split("::", 1)[0].rstrip("/")
        while path.startswith("./"):
            path = path[2:]
        if path and not path.startswith("/") and ".." not in path.split("/"):
            paths.append(path)
    return list(dict.fromkeys(paths))
