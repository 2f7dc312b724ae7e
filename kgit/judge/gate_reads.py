"""What a gate's command reads from the repository, so that the baseline can freeze it.

A gate is written the way its project runs tests: a file, a folder (`pytest -q tests`), a bare
`pytest` that takes `testpaths` from its configuration, `python -m unittest discover -s tests`,
or a wrapper (`make test`, `tox -e py`, `nox -s tests`, `bash scripts/test.sh`, `ctest`) whose
recipe kgit cannot see into. Each form freezes what it is known to read: the files and folders
it names, pytest's configuration file and the `conftest.py` files above what it collects, the
repository's modules those files import (kgit/judge/gate_imports.py), the wrapper's own file; a
wrapper is named in `unseen` so the baseline can say what stays unfrozen.
Pure functions over the command, the commit's file list and a reader of small config files.
"""

from __future__ import annotations

import configparser
import re
import shlex
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from kgit.judge.gate_imports import ReadMany, imported_support
from kgit.judge.scope import command_paths, in_kernel_source

Read = Callable[[str], str | None]  # a file's text at the commit, None when absent

# pytest's configuration files, in the order it looks for them at the rootdir.
_PYTEST_CONFIGS = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
_PYTEST_SECTIONS = {
    "pytest.ini": "pytest",
    ".pytest.ini": "pytest",
    "tox.ini": "pytest",
    "setup.cfg": "tool:pytest",
}
_WRAPPERS = {
    "make": (("Makefile", "makefile", "GNUmakefile"), "make runs a recipe"),
    "tox": (("tox.ini",), "tox runs the commands of tox.ini in an environment it builds"),
    "nox": (("noxfile.py",), "nox runs the sessions of noxfile.py"),
    "ctest": (("CMakeLists.txt",), "ctest runs the tests CMake registered in the build folder"),
}
_SHELLS = ("sh", "bash", "zsh", "dash")


@dataclass
class GateReads:
    """FROZEN: the paths (files, or folders frozen whole) the gate reads; UNSEEN: what the gate
    runs that kgit cannot see into, as sentences for the baseline's output."""

    frozen: list[str] = field(default_factory=list)
    unseen: list[str] = field(default_factory=list)

    def add(self, path: str) -> None:
        if path not in self.frozen:
            self.frozen.append(path)


def gate_reads(
    command: str,
    files: Collection[str],
    read: Read,
    kernel_source: Sequence[str] = (),
    read_many: ReadMany | None = None,
) -> GateReads:
    """The paths of FILES (the commit's files) that COMMAND reads, and what it hides.

    A folder that holds kernel sources (the repository's root, say) is not frozen whole: its
    test files are, one by one, so a round can still change the kernel. READ_MANY reads the
    Python files whose imports are followed, many at once (default: READ, one by one)."""
    folders = _folders(files)
    words = _words(command)
    reads = GateReads()
    named = [p for p in command_paths(command) if p in files or p in folders or p == "."]
    runner = _runner(words)
    if runner == "pytest":
        named = named or _pytest_testpaths(files, read) or ["."]
    elif runner == "unittest":
        named = named or _unittest_modules(words, files) or ["."]
    for path in named:
        _freeze(reads, path, files, folders, kernel_source, _test_file_pattern(runner))
    if runner == "pytest":
        _pytest_support(reads, named, files, read)
    _wrappers(reads, words, files)
    many = read_many or (lambda paths: {p: t for p in paths if (t := read(p)) is not None})
    for path in imported_support(reads.frozen, files, many, kernel_source):
        reads.add(path)
    return reads


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _folders(files: Collection[str]) -> set[str]:
    return {str(parent) for f in files for parent in PurePosixPath(f).parents if str(parent) != "."}


def program_words(command: str) -> list[str]:
    """COMMAND's shell words from its program on: leading `NAME=value` assignments dropped."""
    return _program(_words(command))


def _program(words: Sequence[str]) -> list[str]:
    """The command's words from its program on (leading `NAME=value` assignments dropped)."""
    i = 0
    while i < len(words) and re.fullmatch(r"[A-Za-z_]\w*=.*", words[i]):
        i += 1
    return list(words[i:])


def _runner(words: Sequence[str]) -> str | None:
    """The test runner a command starts: pytest, unittest, or None (a wrapper or a script)."""
    program = _program(words)
    if not program:
        return None
    head = PurePosixPath(program[0]).name
    if head in ("pytest", "py.test"):
        return "pytest"
    if head.startswith("python") and "-m" in program[:-1]:
        module = program[program.index("-m") + 1]
        return module if module in ("pytest", "unittest") else None
    return None


def _test_file_pattern(runner: str | None) -> re.Pattern[str]:
    if runner == "unittest":
        return re.compile(r"test.*\.py")
    return re.compile(r"(test_.*|.*_test|conftest)\.py")


def _freeze(
    reads: GateReads,
    path: str,
    files: Collection[str],
    folders: Collection[str],
    kernel_source: Sequence[str],
    tests: re.Pattern[str],
) -> None:
    """A file is frozen as it is; a folder whole, unless kernel sources lie inside it: then
    only its test files, so the round keeps the kernel to change."""
    if path in files:
        if not in_kernel_source(path, kernel_source):
            reads.add(path)
        return
    inside = [f for f in files if path == "." or f.startswith(path.rstrip("/") + "/")]
    if path in folders and not any(in_kernel_source(f, kernel_source) for f in inside):
        reads.add(path)
        return
    for f in sorted(inside):
        if tests.fullmatch(PurePosixPath(f).name) and not in_kernel_source(f, kernel_source):
            reads.add(f)


def _pytest_config(files: Collection[str], read: Read) -> tuple[str, str] | None:
    """(path, text) of the file pytest takes its settings from at the root, if any."""
    for name in _PYTEST_CONFIGS:
        if name not in files:
            continue
        text = read(name) or ""
        if name == "pyproject.toml":
            if "[tool.pytest.ini_options]" in text:
                return name, text
        elif name.endswith("pytest.ini") or f"[{_PYTEST_SECTIONS[name]}]" in text:
            return name, text
    return None


def _pytest_testpaths(files: Collection[str], read: Read) -> list[str]:
    """The configuration's `testpaths` that exist at the commit (a bare `pytest` runs them)."""
    found = _pytest_config(files, read)
    if found is None:
        return []
    name, text = found
    paths = _toml_testpaths(text) if name == "pyproject.toml" else _ini_testpaths(name, text)
    folders = _folders(files)
    return [p.rstrip("/") for p in paths if p.rstrip("/") in files or p.rstrip("/") in folders]


def _ini_testpaths(name: str, text: str) -> list[str]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    value = parser.get(_PYTEST_SECTIONS[name], "testpaths", fallback="")
    return value.split()


def _toml_testpaths(text: str) -> list[str]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the one key is read by hand
        match = re.search(r"^testpaths\s*=\s*\[([^\]]*)\]", text, re.M)
        return re.findall(r"[\"']([^\"']+)[\"']", match.group(1)) if match else []
    try:
        options = tomllib.loads(text).get("tool", {}).get("pytest", {}).get("ini_options", {})
    except tomllib.TOMLDecodeError:
        return []
    value = options.get("testpaths", [])
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _pytest_support(
    reads: GateReads, named: Sequence[str], files: Collection[str], read: Read
) -> None:
    """pytest also reads its configuration file and every `conftest.py` from the root down to
    what it collects: a round could otherwise skip the tests from there."""
    found = _pytest_config(files, read)
    if found is not None:
        reads.add(found[0])
    for path in named:
        parents = [] if path == "." else [str(p) for p in PurePosixPath(path).parents]
        for folder in parents:
            conftest = "conftest.py" if folder == "." else f"{folder}/conftest.py"
            if conftest in files:
                reads.add(conftest)


def _unittest_modules(words: Sequence[str], files: Collection[str]) -> list[str]:
    """`python -m unittest tests.test_x` names modules: their files, where they exist."""
    paths = []
    for word in words:
        if re.fullmatch(r"[A-Za-z_][\w.]*", word) and "." in word:
            path = word.replace(".", "/") + ".py"
            if path in files:
                paths.append(path)
    return paths


def _wrappers(reads: GateReads, words: Sequence[str], files: Collection[str]) -> None:
    """A wrapper's own file is frozen; what its recipe runs is named as unseen."""
    words = _program(words)
    if not words:
        return
    head = PurePosixPath(words[0]).name
    if head in _WRAPPERS:
        names, what = _WRAPPERS[head]
        present = [n for n in names if n in files]
        for name in present:
            reads.add(name)
        kept = f" ({', '.join(present)} is frozen)" if present else ""
        reads.unseen.append(f"{what}{kept}: the files it runs are not frozen")
        return
    script = words[1] if head in _SHELLS and len(words) > 1 else words[0]
    if script.endswith(".sh") or head in _SHELLS:
        state = "frozen" if script.removeprefix("./") in reads.frozen else "not in the repository"
        reads.unseen.append(
            f"{script} ({state}) is run as a script: the files it runs are not frozen"
        )
