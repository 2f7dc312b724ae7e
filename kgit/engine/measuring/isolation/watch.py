"""What no measuring process may write, checked after it ran: kgit's installed code, the
interpreter's import path (its standard library and site-packages), and both sides' trees.

A process runs as the user who runs kgit, so it *can* write anywhere that user can: a candidate
kernel wrote forged bytecode for the reference's `kernel.py` (the reference then ran three times
slower, and the best line's own kernel was later accepted at +167%), another rewrote the cached
bytecode of kgit's installed measuring module. Rather than list the files such a kernel might
touch, kgit notes the time before the processes start and, once they are gone, walks the watched
folders for anything whose *change time* is later: the kernel sets a file's change time on
every write, rename or `utime`, and no process but one with the system clock can set it back. A
write found fails the measurement (nothing is judged); bytecode it left is removed at once (Python
compiles it again from source), and any other file is remembered under `.git/kgit/tainted.json`
and refused at every measurement until it is reinstalled (changed again) or removed.

The walk costs about 0.14 s for the 43,000 entries of kgit, a CPU torch's site-packages and the
standard library (0.32 s before it left out a site-packages that nothing imports, `unimported`);
it runs once per validation, baseline or gate, after its processes ended.
"""

from __future__ import annotations

import importlib.util
import json
import marshal
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from kgit.errors import KgitError
from kgit.resources import package_home

# The kernel's change times come from a coarse clock (a tick of 1-10 ms): processes start at
# least this long after the mark, so that whatever they write lands on a later tick.
_SETTLE_S = 0.02
_SHOWN = 6
_SYSTEM_PATH = "/usr/bin:/bin"


class WroteOutside(KgitError):
    """A measuring process wrote where no measuring process may (a refused measurement)."""


@dataclass
class Watch:
    """Folders no measuring process may write, and the change time before processes started."""

    folders: list[Path]
    marker: Path  # a file in a folder of kgit's own, read once, at `start`; its folder holds
    # the canary until `written`, then goes
    files: list[Path] = field(default_factory=list)  # watched one by one (a repository's config)
    # Folders inside FOLDERS that no measuring process imports from (`unimported`): not walked.
    skipped: list[Path] = field(default_factory=list)
    since_ns: int = 0

    def start(self) -> None:
        """Mark now on the file system's own clock, then let that clock move on; then write the
        canary a walk must find (a `find` that answers without it is not trusted)."""
        self.marker.write_bytes(b"")
        self.since_ns = self.marker.stat().st_ctime_ns
        self.marker.unlink()
        time.sleep(_SETTLE_S)
        self._canary.write_bytes(b"")

    @property
    def _canary(self) -> Path:
        return self.marker.with_name(self.marker.name + ".canary")

    def written(self) -> list[Path]:
        """Every file or folder under the watched folders, and every watched file, changed
        since `start` (the time `start` read: the marker itself is never read again)."""
        found = _found_by_find([*self.folders, self._canary], self.since_ns, self.skipped)
        if found is None or self._canary not in found:
            skip = frozenset(self.skipped)
            found = [p for f in self.folders for p in changed_under(f, self.since_ns, skip)]
        found = [p for p in found if p != self._canary]
        self._canary.unlink(missing_ok=True)
        with suppress(OSError):
            self.marker.parent.rmdir()  # the folder of kgit's own, when the watch made it
        return found + [p for p in self.files if _changed(p, self.since_ns)]


def _changed(path: Path, since_ns: int) -> bool:
    try:
        return os.stat(path, follow_symlinks=False).st_ctime_ns > since_ns
    except OSError:
        return False


def _found_by_find(folders: list[Path], since_ns: int, skipped: list[Path]) -> list[Path] | None:
    """GNU `find -newerct @TIME` over FOLDERS: 0.23 s where Python's walk takes 0.55 s for the
    40,000 files of kgit, a CPU torch and the standard library. TIME is the one `start` read,
    never a file's times read again: a measuring process that touched the marker made such a
    walk blind (a kernel's write into kgit's install, then the marker touched, was accepted).
    None where there is no GNU find. The program comes from the system's own folders, never from
    the caller's PATH: a `find` that printed nothing, first on the PATH of a `git commit`, made
    the commit hook's walk blind (a kernel that wrote into site-packages passed the gate).
    SKIPPED folders are not walked."""
    program = shutil.which("find", path=_SYSTEM_PATH)
    if program is None or not folders:
        return None
    stamp = f"@{since_ns // 1_000_000_000}.{since_ns % 1_000_000_000:09d}"
    pruned = ["-name", ".git", *[w for path in skipped for w in ("-o", "-path", str(path))]]
    command = [program, *map(str, folders), "(", *pruned, ")", "-prune", "-o"]
    command += ["-newerct", stamp, "-print0"]
    try:
        done = subprocess.run(command, capture_output=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode and b"newerct" in done.stderr:  # not GNU find
        return None
    return [Path(os.fsdecode(p)) for p in done.stdout.split(b"\0") if p]


def watched_folders(python_path: Iterable[str], trees: Iterable[Path]) -> list[Path]:
    """kgit's package, the folders of PYTHON_PATH (the interpreter's own import path: its
    standard library and site-packages), and TREES; a folder inside another watched one is
    walked once."""
    folders = [package_home() / "kgit", *map(Path, filter(None, python_path)), *trees]
    resolved = sorted({p.resolve() for p in folders if p.is_dir()}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for folder in resolved:
        if not any(folder.is_relative_to(outer) for outer in kept):
            kept.append(folder)
    return kept


def unimported(libraries: Iterable[str], python_path: Iterable[str]) -> list[Path]:
    """Folders inside the LIBRARIES that no process on PYTHON_PATH imports from: a
    `site-packages` (or `dist-packages`) in the standard library's folder that is not itself on
    the import path, the interpreter's own packages under a virtual environment. Here that
    folder held 52,000 of the 94,000 entries each walk visited."""
    on_path = {Path(p).resolve() for p in python_path if p}
    skipped = []
    for library in dict.fromkeys(Path(p).resolve() for p in libraries if p):
        for name in ("site-packages", "dist-packages"):
            inside = library / name
            if inside.is_dir() and not inside.is_symlink() and inside.resolve() not in on_path:
                skipped.append(inside)
    return skipped


def interpreter_configs(executables: Iterable[str]) -> list[Path]:
    """Where each Python of EXECUTABLES reads a `pyvenv.cfg` (the folder of the program as
    started and as resolved, and the folder above each), whether one is there or not: one
    written or created there changes that Python's import path (a virtual environment that now
    includes the interpreter's own site-packages, which `unimported` leaves out of the walk)."""
    found: dict[Path, None] = {}
    for executable in filter(None, executables):
        for program in (Path(executable), Path(executable).resolve()):
            for folder in (program.parent, program.parent.parent):
                found[folder / "pyvenv.cfg"] = None
    return list(found)


def changed_under(
    folder: Path, since_ns: int, skipped: frozenset[Path] = frozenset()
) -> Iterator[Path]:
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    # A work tree's link to its repository (git's, not the kernel's), or a
                    # folder no measuring process imports from.
                    if entry.name == ".git" or Path(entry.path) in skipped:
                        continue
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if info.st_ctime_ns > since_ns:
                        yield Path(entry.path)
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
        except OSError:
            continue


@contextmanager
def no_bytecode_here() -> Iterator[None]:
    """kgit's own lazy imports write no bytecode into the watched folders meanwhile."""
    before = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        yield
    finally:
        sys.dont_write_bytecode = before


def refuse_writes(watch: Watch, taint_file: Path, what: str, reset: tuple[Path, ...] = ()) -> None:
    """Raise when a measuring process wrote under WATCH or into a world's copy of kgit's code;
    remove the bytecode it left, remember every other file in TAINT_FILE (refused at every
    measurement until it changes again), but those under RESET (measuring trees, made again
    before every pass)."""
    # Bytecode Python itself wrote for an unchanged source (another kgit process's first import
    # of a module, beside this measurement) is no write of the measured processes'.
    written = _unexplained(watch.written() + drain_world_writes())
    if not written:
        return
    files = [p for p in written if not p.is_dir()]
    shown = [str(p) for p in (files or written)[:_SHOWN]]
    more = len(files or written) - len(shown)
    removed = _remove_bytecode(files)
    kept = [p for p in files if p not in removed and not _under(p, reset)]
    remember_taint(taint_file, kept)
    raise WroteOutside(
        f"validation ERROR: a process of {what} wrote where no measuring process may: "
        + ", ".join(shown)
        + (f" and {more} more" if more > 0 else ""),
        hint=(
            "kgit's installed code, the interpreter's libraries and both sides' trees are "
            "read-only to a measurement; nothing was judged"
            + (f"; removed {len(removed)} bytecode file(s) it wrote" if removed else "")
            + (
                f"; {len(kept)} other file(s) stay refused until reinstalled "
                f"(listed in {taint_file})"
                if kept
                else ""
            )
        ),
    )


def _unexplained(written: list[Path]) -> list[Path]:
    """WRITTEN less faithful bytecode (`faithful_bytecode`) and the folders that only holding it
    changed: a `__pycache__` folder, and the folder a new one was made in."""
    faithful = {p for p in written if faithful_bytecode(p)}
    left = [p for p in written if p not in faithful]
    caches = {p for p in left if p.name == "__pycache__" and p.is_dir()}
    return [p for p in left if p not in caches and p / "__pycache__" not in caches]


def faithful_bytecode(path: Path) -> bool:
    """Whether PATH is a `__pycache__` file that this Python would write for its source as it
    is: a header that matches the source (its mtime and size, or its hash) and the very code
    compiling the source gives. A forged one (a header copied, other code) is not."""
    parts = path.name.split(".")
    if path.parent.name != "__pycache__" or len(parts) not in (3, 4) or parts[-1] != "pyc":
        return False
    if parts[1] != sys.implementation.cache_tag:
        return False
    optimize = int(parts[2].removeprefix("opt-") or 0) if len(parts) == 4 else 0
    source = path.parent.parent / f"{parts[0]}.py"
    try:
        data, text, info = path.read_bytes(), source.read_bytes(), source.stat()
        if data[:4] != importlib.util.MAGIC_NUMBER:
            return False
        if int.from_bytes(data[4:8], "little") == 0:
            stamp = (int(info.st_mtime) & 0xFFFFFFFF, info.st_size & 0xFFFFFFFF)
            if (
                int.from_bytes(data[8:12], "little"),
                int.from_bytes(data[12:16], "little"),
            ) != stamp:
                return False
        elif data[8:16] != importlib.util.source_hash(text):
            return False
        code = marshal.loads(data[16:])
        return bool(
            code == compile(text, str(source), "exec", dont_inherit=True, optimize=optimize)
        )
    except (OSError, ValueError, EOFError, TypeError, SyntaxError):
        return False


def _under(path: Path, folders: tuple[Path, ...]) -> bool:
    return any(path.is_relative_to(folder) for folder in folders)


# Writes found in a measuring process's own copy of kgit's code when its world closed
# (kgit/engine/measuring/isolation/world.py): refused with the watch's findings.
_world_writes: list[Path] = []


def note_world_writes(paths: list[Path]) -> None:
    _world_writes.extend(paths)


def drain_world_writes() -> list[Path]:
    found = list(_world_writes)
    _world_writes.clear()
    return found


def _remove_bytecode(files: list[Path]) -> list[Path]:
    removed = []
    for path in files:
        if path.suffix == ".pyc":
            try:
                path.unlink()
            except OSError:
                continue
            removed.append(path)
    return removed


def remember_taint(taint_file: Path, files: list[Path]) -> None:
    if not files:
        return
    known = _read_taint(taint_file)
    for path in files:
        try:
            known[str(path)] = path.stat().st_ctime_ns
        except OSError:
            continue
    taint_file.parent.mkdir(parents=True, exist_ok=True)
    taint_file.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")


def _read_taint(taint_file: Path) -> dict[str, int]:
    try:
        data = json.loads(taint_file.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): int(v) for k, v in data.items()} if isinstance(data, dict) else {}


def require_untainted(taint_file: Path) -> None:
    """Refuse to measure while a file an earlier measurement wrote outside its tree is still as
    that measurement left it; forget the ones changed since (reinstalled) or gone."""
    known = _read_taint(taint_file)
    if not known:
        return
    still = {}
    for name, ctime in known.items():
        try:
            if os.stat(name, follow_symlinks=False).st_ctime_ns == ctime:
                still[name] = ctime
        except OSError:
            continue
    if still != known:
        if still:
            taint_file.write_text(json.dumps(still, indent=1, sort_keys=True) + "\n")
        else:
            taint_file.unlink(missing_ok=True)
    if still:
        first = next(iter(still))
        raise WroteOutside(
            f"cannot measure: {len(still)} file(s) that an earlier measurement wrote outside "
            f"its work tree are still as it left them: {first}"
            + (" ..." if len(still) > 1 else ""),
            hint="reinstall what they belong to (pip install --force-reinstall PACKAGE, or "
            f"kgit itself), or remove them; the list is {taint_file}",
        )
