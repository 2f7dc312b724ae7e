"""The world a measuring process runs in: built by kgit for each process, not inherited.

A harness (and the gate) used to run in the caller's environment less a blocklist, and every
fresh attempt of an agent paid by the number found the next thing the blocklist missed: an
`LD_PRELOAD` shim that slowed the monotonic clock threefold inside the harness (a 2x slower
kernel read +50%), a `PYTHONPYCACHEPREFIX` whose bytecode replaced kgit's own timing code, a
committed kernel that rewrote the cached bytecode of kgit's installed measuring module on import.
So what a measuring process sees is decided here, from an allowlist, by construction:

- **Its environment** is kgit's settings plus the few caller variables a process needs to run at
  all (`PASSED`) plus what the manifest declares under `env:`. The linker's variables, Python's
  start-up and bytecode settings and everything else of the caller's never reach it; a variable
  that is set in the caller's shell and not passed is named when a pass or the gate fails
  (`unpassed_hint`). Both sides get the same environment, and the variables that are not kgit's
  per-process paths are recorded in the fingerprint (`recorded_env`): a round measured in another
  environment than the baseline's is refused like another GPU.
- **kgit's measuring code** runs from a copy kgit makes for that process (`World.lib`, first on
  `PYTHONPATH`), read from the installed sources and digested (the `kgit_measuring` digest, in
  the fingerprint), with bytecode kgit compiled itself from the source it read (hash-checked
  against the copy's source), and the process writes no bytecode anywhere
  (`PYTHONDONTWRITEBYTECODE`). Bytecode lying around in kgit's install, forged or not, is never
  read.
- **Its home, temporary folder and compile caches** (Triton's, torch's, CUDA's) are private to
  the process and removed with it: nothing one process compiles or leaves is read by another.
  One exception, `shared_cache`: the processes of a block that all run one commit (the
  baseline's pass and its A/A calibration) share one compile cache, removed with the block.
  Whatever that cache could let one of them do to another, the same code could already do at
  run time (it reads the tree it runs in); a round's two sides never share one.

What a process could still do, write files that another process or a later round reads, is found
by `kgit/engine/measuring/isolation/watch.py`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import marshal
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kgit.engine.measuring.isolation.watch import changed_under, note_world_writes
from kgit.errors import KgitError
from kgit.records.manifest_checks import KGIT_OWN_ENV
from kgit.resources import package_home

# Which GPU the caller (or `kgit worker --gpu`) pinned: passed, never compared.
PINNING = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
# What a process needs of the caller's environment to run at all: where programs are (its
# value recorded, so a folder put first on PATH after the baseline is an environment change),
# the locale, and the pinning.
PASSED = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "USER",
    "LOGNAME",
    *PINNING,
)
# Names kgit sets for each process itself: never passed, never declared
# (kgit/records/manifest_checks.py refuses them in a manifest's env).
OWN = (*KGIT_OWN_ENV, "PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONDONTWRITEBYTECODE")
# Families whose variables change what a kernel does: named when one is set in the caller's
# shell but not declared, and a pass or the gate fails.
KERNEL_FAMILIES = ("TRITON_", "CUDA", "HIP", "ROCM", "ROCR_", "TORCH", "PYTORCH_", "NCCL_",
                   "OMP_", "MKL_", "LD_LIBRARY_PATH", "NVIDIA_")  # fmt: skip
# The parts of kgit a harness imports (and what they import); the digest covers the measuring
# library itself, whose every line decides a figure.
_COPIED = ("__init__.py", "errors.py", "resources.py", "progress.py", "measure", "records",
           "launch_hook", "examples")  # fmt: skip
_DIGESTED = ("measure", "launch_hook")


@dataclass
class World:
    """One measuring process's private folder: `lib` (kgit's code, copied), `home`, `tmp`."""

    root: Path
    digest: str  # sha256 of kgit's measuring sources, as copied
    env: dict[str, str] = field(default_factory=dict)
    copied_ns: int = 0  # the file system's clock once the copy was made

    @property
    def lib(self) -> Path:
        return self.root / "lib"

    def close(self) -> None:
        """Remove the world; a write into its copy of kgit's code (by its process, or by the
        other side's looking for it) is handed to the watch (kgit/engine/measuring/isolation/watch.py)."""
        if self.copied_ns:
            note_world_writes([p for p in changed_under(self.lib, self.copied_ns) if p.is_file()])
        shutil.rmtree(self.root, ignore_errors=True)


def open_world(
    tree: Path,
    declared: Mapping[str, str],
    extra: Mapping[str, str] | None = None,
    shared_cache: Path | None = None,
) -> World:
    """A fresh world for a process that runs in TREE: kgit's measuring code copied, a private
    home, its compile caches (SHARED_CACHE's instead where given: see the module's docstring),
    and its environment (`sealed_env`). The caller closes it."""
    require_no_shadow(tree)
    root = Path(tempfile.mkdtemp(prefix="kgit-world-"))
    try:
        digest = copy_measuring_code(root / "lib")
        for name in ("home", "tmp", "cache"):
            (root / name).mkdir()
        # The process starts tens of milliseconds after this mark: what it writes into the
        # copy lands on a later tick of the file system's clock.
        mark = root / "copied.mark"
        mark.write_bytes(b"")
        world = World(root, digest, copied_ns=mark.stat().st_ctime_ns)
        world.env = sealed_env(world, tree, declared, extra, shared_cache or root / "cache")
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return world


def sealed_env(
    world: World,
    tree: Path,
    declared: Mapping[str, str],
    extra: Mapping[str, str] | None = None,
    cache: Path | None = None,
) -> dict[str, str]:
    """The environment of a process in WORLD: PASSED from the caller, kgit's own, DECLARED (the
    manifest's `env:`), then EXTRA (kgit's protocol variables); its compile caches under CACHE
    (the world's own by default)."""
    env = {name: os.environ[name] for name in PASSED if name in os.environ}
    env.setdefault("PATH", os.defpath)
    cache = cache or world.root / "cache"
    env.update(
        HOME=str(world.root / "home"),
        TMPDIR=str(world.root / "tmp"),
        # kgit's copy first: a `kgit` folder on the tree's path must not replace it.
        PYTHONPATH=os.pathsep.join([str(world.lib), str(tree)]),
        PYTHONNOUSERSITE="1",
        PYTHONDONTWRITEBYTECODE="1",
        TRITON_CACHE_DIR=str(cache / "triton"),
        TORCHINDUCTOR_CACHE_DIR=str(cache / "inductor"),
        CUDA_CACHE_PATH=str(cache / "cuda"),
        XDG_CACHE_HOME=str(cache),
    )
    env.update(declared)
    env.update(extra or {})
    return env


def recorded_env(env: Mapping[str, str]) -> str:
    """What the fingerprint keeps of ENV: every variable but kgit's per-process paths, its
    protocol's and the device pinning (the device is the fingerprint's own: its uuid, and
    `kgit worker --gpu N` pins workers of one campaign to different cards), as sorted JSON
    (compared with the baseline's, name by name)."""
    kept = {
        name: value
        for name, value in env.items()
        if name not in OWN and name not in PINNING and not name.startswith("KGIT_")
    }
    return json.dumps(kept, sort_keys=True, separators=(",", ":"))


def env_changes(before: str, now: str) -> list[str]:
    """The variables that differ between two `recorded_env` values, in words."""
    try:
        old, new = json.loads(before), json.loads(now)
    except ValueError:
        return ["the environment"]
    names = sorted(set(old) | set(new))
    return [
        f"{name} {_shown(old.get(name))} -> {_shown(new.get(name))}"
        for name in names
        if old.get(name) != new.get(name)
    ]


def _shown(value: str | None) -> str:
    if value is None:
        return "(unset)"
    return repr(value if len(value) <= 60 else value[:57] + "...")


def unpassed_hint(declared: Mapping[str, str]) -> str | None:
    """The caller's variables of the kernel families that kgit did not pass (not declared), as
    a hint naming the manifest key; None when there are none."""
    names = sorted(
        name
        for name in os.environ
        if name.startswith(KERNEL_FAMILIES)
        and name not in declared
        and name not in PASSED
        and name not in OWN
    )
    if not names:
        return None
    shown = ", ".join(names[:6]) + (" ..." if len(names) > 6 else "")
    return (
        f"set in your shell but not passed to the harness or the gate: {shown}; kgit passes "
        "only what the manifest declares: add them under `env:` in the manifest (e.g. "
        f'env: {{{names[0]}: "{os.environ[names[0]]}"}}) and start a new campaign'
    )


def copy_measuring_code(lib: Path) -> str:
    """Copy the parts of kgit a harness imports into LIB, each with the bytecode kgit compiled
    itself from the source it read (a hash-checked .pyc: Python checks it against the copy's
    source); return the sha256 of the measuring library's sources among them."""
    digest = hashlib.sha256()
    target = lib / "kgit"
    for relative, data, pyc in _measuring_sources():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        cache = path.parent / "__pycache__"
        cache.mkdir(exist_ok=True)
        (cache / f"{path.stem}.{sys.implementation.cache_tag}.pyc").write_bytes(pyc)
        if relative.split("/", 1)[0] in _DIGESTED:
            digest.update(f"{relative}\0".encode() + data + b"\0")
    return digest.hexdigest()[:16]


# relative path -> (the source's stat, its bytes, the bytecode kgit compiled from them): each
# file is read and compiled once per kgit process (a validation starts several harnesses), and
# again when it changed on disk.
_compiled: dict[str, tuple[tuple[int, int, int], bytes, bytes]] = {}


def _measuring_sources() -> list[tuple[str, bytes, bytes]]:
    home = package_home() / "kgit"
    found = []
    for name in _COPIED:
        source = home / name
        paths = [source] if source.is_file() else sorted(source.rglob("*.py"))
        for path in paths:
            relative = path.relative_to(home).as_posix()
            if "__pycache__" not in relative:
                found.append((relative, *_compiled_file(path, relative)))
    return found


def _compiled_file(path: Path, relative: str) -> tuple[bytes, bytes]:
    info = path.stat()
    stamp = (info.st_mtime_ns, info.st_ctime_ns, info.st_size)
    known = _compiled.get(relative)
    if known is not None and known[0] == stamp:
        return known[1], known[2]
    data = path.read_bytes()
    code = compile(data, str(path), "exec", dont_inherit=True)
    flags = (0b11).to_bytes(4, "little")  # hash-based, checked against the source on import
    pyc = importlib.util.MAGIC_NUMBER + flags + importlib.util.source_hash(data)
    pyc += marshal.dumps(code)
    _compiled[relative] = (stamp, data, pyc)
    return data, pyc


def require_no_shadow(tree: Path) -> None:
    """Refuse a tree whose root holds a `kgit` package or module: the harness's own folder comes
    first on Python's path, ahead of kgit's copy."""
    for name in ("kgit", "kgit.py"):
        if (tree / name).exists():
            raise KgitError(
                f"the measured tree holds {name} at its root: it would replace kgit's measuring "
                "library in the harness",
                hint=f"rename or remove {name} from the repository (git rm -r {name})",
            )
