"""The repository's own modules that a gate's frozen Python files import, so the baseline can
freeze them too: a test's helpers (`tests/utils.py`, imported by a conftest or by the test
itself) decide what the test checks as much as the test does, and a round that loosened one
would pass a wrong kernel.

Imports are read with `ast`, never executed, and resolved the way pytest's default import mode
finds them: from the importing file's folder, from the first folder above it that is not a
package (pytest puts that on `sys.path`), and from the repository's root (the gate runs there).
The kernel is never frozen: a module of `kernel_source`, or one under the top-level folder that
holds a kernel source (its package: `__init__.py`, the other modules, which the round's scope
check guards already; the root's modules, for a kernel at the root), is left out unless it
lies under the folder of a test the gate runs. With no `kernel_source` declared, only modules
under such a folder are followed.
Pure functions over the commit's file list and a reader of its files.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Collection, Sequence
from pathlib import PurePosixPath

from kgit.judge.scope import in_kernel_source

# The texts of many files at the commit, by path; a file absent or unreadable is left out.
ReadMany = Callable[[Sequence[str]], dict[str, str]]

_TEST_NAME = re.compile(r"(test_.*|.*_test|test.*|conftest)\.py")


def imported_support(
    frozen: Sequence[str],
    files: Collection[str],
    read_many: ReadMany,
    kernel_source: Sequence[str],
) -> list[str]:
    """The files of FILES that the Python files of FROZEN (files, or folders frozen whole)
    import, directly or through one another, that are not frozen yet: in the order found.
    Read a wave at a time through READ_MANY (one `git cat-file` per wave, not per file)."""
    folders = _folders(files)
    frozen_folders = [p for p in frozen if p in folders]
    territory = _test_folders(frozen, files)
    homes = _kernel_homes(kernel_source)
    found: list[str] = []
    wave = sorted(f for f in files if f.endswith(".py") and _covered(f, frozen, frozen_folders))
    seen = set(wave)
    while wave:
        texts = read_many(wave)
        following: list[str] = []
        for path in wave:
            for target in _local_imports(path, texts.get(path), files, folders):
                if target in seen or _covered(target, frozen, frozen_folders):
                    continue
                seen.add(target)
                if _kernel_side(target, kernel_source, homes, territory):
                    continue
                found.append(target)
                following.append(target)
        wave = following
    return found


def _folders(files: Collection[str]) -> set[str]:
    return {str(p) for f in files for p in PurePosixPath(f).parents if str(p) != "."}


def _covered(path: str, frozen: Sequence[str], frozen_folders: Sequence[str]) -> bool:
    return path in frozen or any(path.startswith(folder + "/") for folder in frozen_folders)


def _test_folders(frozen: Sequence[str], files: Collection[str]) -> list[str]:
    """The folders (never the root) that hold a frozen test file or conftest, or are frozen
    whole: with no kernel_source declared, imports are followed only into these."""
    folders = [p for p in frozen if p not in files]
    for path in frozen:
        parent = str(PurePosixPath(path).parent)
        if path in files and _TEST_NAME.fullmatch(PurePosixPath(path).name) and parent != ".":
            folders.append(parent)
    return folders


def _kernel_homes(kernel_source: Sequence[str]) -> set[str]:
    """The top-level folders that hold the kernel (`src` for `src/pkg/ops/ln.py`), and "." for
    a kernel source at the root: a package that holds the kernel is the kernel's."""
    homes = set()
    for source in kernel_source:
        parts = PurePosixPath(source.rstrip("/")).parts
        homes.add(parts[0] if len(parts) > 1 or not re.search(r"\.\w+$", source) else ".")
    return homes


def _kernel_side(
    target: str, kernel_source: Sequence[str], homes: set[str], territory: Sequence[str]
) -> bool:
    """TARGET is the kernel's, or may be: left unfrozen (see the module's docstring)."""
    if in_kernel_source(target, kernel_source):
        return True
    if any(target.startswith(folder + "/") for folder in territory):
        return False  # beside a test of the gate: its helper, even inside the kernel's package
    parts = PurePosixPath(target).parts
    return not kernel_source or (parts[0] if len(parts) > 1 else ".") in homes


def _local_imports(
    path: str, text: str | None, files: Collection[str], folders: Collection[str]
) -> list[str]:
    """The repository's files that PATH's imports load (their packages' `__init__.py` too)."""
    if text is None:
        return []
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError):
        return []
    roots = _search_roots(path, files)
    found: list[str] = []
    for node in ast.walk(tree):
        for module, names, level in _imports(node):
            if level:
                base = _relative_base(path, level)
                if base is None:
                    continue
                found += _resolve(base, module, names, files, folders)
                continue
            for root in roots:
                hit = _resolve(root, module, names, files, folders)
                if hit:
                    found += hit
                    break
    return list(dict.fromkeys(found))


def _imports(node: ast.AST) -> list[tuple[list[str], list[str], int]]:
    """(module's parts, names imported from it, relative level) of an import statement."""
    if isinstance(node, ast.Import):
        return [(alias.name.split("."), [], 0) for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        module = node.module.split(".") if node.module else []
        return [(module, [alias.name for alias in node.names], node.level)]
    return []


def _search_roots(path: str, files: Collection[str]) -> list[str]:
    """Where an absolute import from PATH is looked for, in order (see the module's docstring)."""
    own = PurePosixPath(path).parent
    basedir = own
    while str(basedir) != "." and f"{basedir}/__init__.py" in files:
        basedir = basedir.parent
    return list(dict.fromkeys([str(own), str(basedir), "."]))


def _relative_base(path: str, level: int) -> str | None:
    base = PurePosixPath(path).parent
    for _ in range(level - 1):
        if str(base) == ".":
            return None
        base = base.parent
    return str(base)


def _resolve(
    root: str, module: list[str], names: list[str], files: Collection[str], folders: Collection[str]
) -> list[str]:
    """The files of MODULE (and of NAMES, where they are submodules) under ROOT, with the
    `__init__.py` of each package on the way; [] when MODULE is not there."""
    hits: list[str] = []
    for depth in range(1, len(module) + 1):
        stem = _join(root, *module[:depth])
        if f"{stem}.py" in files:
            hits.append(f"{stem}.py")
            return hits  # a module, not a package: nothing below it is a file
        if f"{stem}/__init__.py" in files:
            hits.append(f"{stem}/__init__.py")
        elif stem not in folders:  # neither module nor package (nor namespace package) here
            return []
    for name in names:
        submodule = _join(root, *module, f"{name}.py")
        if submodule in files:
            hits.append(submodule)
    return hits


def _join(root: str, *parts: str) -> str:
    return str(PurePosixPath(root, *parts))
