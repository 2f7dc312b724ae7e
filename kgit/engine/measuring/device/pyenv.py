"""The Python environment the gate and the harness run in: isolated from the caller's, and
fingerprinted where it cannot be isolated.

A caller's `PYTHONPATH` put a `torch.py` shadow ahead of the real torch and let a wrong kernel
through the gate (+135%); a `sitecustomize.py` or a `.pth` file patched kgit's measuring
functions and turned a 46% slower kernel into a +42% "gain", with no committed file at all. So
kgit runs its commands with no `PYTHON*` variable of the caller's and no user site-packages
(`PYTHONNOUSERSITE`), the harness with only its own tree on `PYTHONPATH`. The interpreter's own
site-packages cannot be left out (torch lives there), so the files Python runs at start-up from
there (`*.pth`, `sitecustomize.py`, `usercustomize.py`) are hashed into the environment
fingerprint: one added or changed between the baseline and a round is an environment change,
refused like another GPU. The probe runs outside the harness's process, where a kernel cannot
answer for it.

Beside it, `environment`: the host and interpreter kgit itself runs on, as a round's note records
them.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

from kgit.gitdoor import clean_env
from kgit.judge.gate_reads import program_words

# Kept: they change how Python writes bytecode or buffers output, not what it imports or runs.
_KEPT = {"PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "PYTHONHASHSEED"}
_STARTUP_FILES = re.compile(r".*\.pth|sitecustomize\.py|usercustomize\.py")
_PROBE = (
    "import json, site, sys; "
    "print(json.dumps({'path': sys.path, 'site': site.getsitepackages() + "
    "[site.getusersitepackages()], 'executable': sys.executable, "
    "'prefixes': [sys.prefix, sys.base_prefix]}))"
)


def isolated_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a command kgit runs: the caller's, less git's variables (a hook's),
    every `PYTHON*` variable that changes what Python imports or runs at start-up, and the user
    site-packages; EXTRA on top."""
    env = {k: v for k, v in clean_env().items() if not k.startswith("PYTHON") or k in _KEPT}
    env["PYTHONNOUSERSITE"] = "1"
    env.update(extra or {})
    return env


def interpreter(command: str) -> str | None:
    """The Python a shell command starts (its program when that is a python, else the `python3`
    on PATH), as a path; None when there is none."""
    words = program_words(command)
    program = words[0] if words and Path(words[0]).name.startswith("python") else "python3"
    path = os.environ.get("PATH")
    return shutil.which(program, path=path) if "/" not in program else program


# python -> (the start-up state it was probed in, its facts, the folders probed). A validation
# reads a measurement per block, hundreds of them: the probe (a process, ~30 ms) runs again
# only when a probed folder or a start-up file in it changed (added, removed, rewritten).
_probed: dict[str, tuple[tuple[object, ...], dict[str, str], list[str]]] = {}


def python_facts(python: str) -> dict[str, str]:
    """What PYTHON imports before any code of the harness's: its import path (recorded, not
    compared: a work tree's path is on it) and a digest of its start-up files (compared)."""
    cached = _probed.get(python)
    if cached is not None and _state(cached[2]) == cached[0]:
        return cached[1]
    try:
        done = subprocess.run(
            [python, "-c", _PROBE], env=isolated_env(), capture_output=True, text=True, timeout=60
        )
        probe = json.loads(done.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return {"python_startup": "unknown (the interpreter could not be probed)"}
    # '' (the current folder, for -c) is kgit's, not the harness's: its tree is recorded apart.
    folders = list(dict.fromkeys(f for f in [*probe["site"], *probe["path"]] if f))
    digest = hashlib.sha256()
    files = [path for folder in folders for path in _startup_files(Path(folder))]
    for path in files:
        digest.update(f"{path}\0".encode() + path.read_bytes() + b"\0")
    facts = {
        "python_executable": str(probe["executable"]),
        "python_path": os.pathsep.join(probe["path"]),
        # What a measuring process must not write (kgit/engine/measuring/isolation/watch.py): the
        # interpreter's own folders, not a project an editable install put on the path.
        "python_libraries": os.pathsep.join(_libraries(probe)),
        "python_startup": f"{len(files)} files, sha256 {digest.hexdigest()[:16]}",
    }
    watched = [*folders, *map(str, files)]
    _probed[python] = (_state(watched), facts, watched)
    return facts


def _libraries(probe: dict[str, object]) -> list[str]:
    prefixes = [Path(p) for p in probe.get("prefixes", []) or []]  # type: ignore[attr-defined]
    site = [str(f) for f in probe.get("site", []) or []]  # type: ignore[attr-defined]
    inside = [
        str(f)
        for f in probe.get("path", []) or []  # type: ignore[attr-defined]
        if f and any(Path(f).is_relative_to(prefix) for prefix in prefixes)
    ]
    return list(dict.fromkeys([*inside, *site]))


def _state(paths: list[str]) -> tuple[object, ...]:
    """The modification times of PATHS: the probed folders (a file added or removed changes
    its folder's) and the start-up files found in them (a file rewritten in place)."""
    state: list[object] = []
    for path in paths:
        try:
            info = os.stat(path)
            state.append((path, info.st_mtime_ns, info.st_size))
        except OSError:
            state.append((path, None, None))
    return tuple(state)


def _startup_files(folder: Path) -> list[Path]:
    try:
        entries = sorted(folder.iterdir()) if folder.is_dir() else []
    except OSError:
        return []
    return [p for p in entries if _STARTUP_FILES.fullmatch(p.name) and p.is_file()]


def command_facts(command: str) -> dict[str, str]:
    python = interpreter(command)
    return python_facts(python) if python else {}


def environment() -> dict[str, str]:
    """The host, Python and platform kgit runs on, and its interpreter: a round's note records
    where its verdict was reached."""
    return {
        "host": platform.node(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "kgit_python": sys.executable,
    }
