"""The per-device measuring lock: two kgit processes never time on one device at once.

Rounds may run in parallel (kgit/engine/rounds/parallel.py), and gating, compiling and bookkeeping
overlap freely; timing does not, since two harnesses on one GPU slow each other down and each
would read the other's load as its kernel's speed. The lock is a file lock under
`.git/kgit/locks/`, keyed by the device the process measures on: the value of
CUDA_VISIBLE_DEVICES (else HIP_VISIBLE_DEVICES), or `cpu` when neither is set (such a process
sees every device or none, so all of them share one lock: the safe side). It is held around
harness passes and interleaved sessions only; the kernel's JIT compilation inside a harness's
first pass falls inside it, since the harness compiles as it times. The holder is written into
the lock file, so a waiter says who it waits for; the kernel drops the lock when its holder
exits, so a killed holder never leaves it taken. What a dead kgit left running (its harness, its
tests) is killed as the lock is taken, before anything is timed (kgit/engine/orphans.py).
"""

from __future__ import annotations

import fcntl
import os
import re
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from kgit.engine.orphans import kill_left_behind
from kgit.errors import KgitError
from kgit.gitdoor import Repo, locks
from kgit.progress import Say

TIMEOUT_ENV = "KGIT_DEVICE_LOCK_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 3600.0

# Depth of the locks this process holds, by key: a harness pass inside an interleaved session
# takes the lock its session already holds (flock would block on a second open of the file).
_held: dict[str, int] = {}


def device_key(env: dict[str, str] | None = None) -> str:
    """The device this process measures on, as named by its visibility variables."""
    env = dict(os.environ) if env is None else env
    for variable in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
        value = env.get(variable)
        if value is not None and value.strip():
            return value.strip()
    return "cpu"


def lock_path(repo: Repo, key: str) -> Path:
    folder = repo.kgit_dir() / "locks"
    folder.mkdir(exist_ok=True)
    return folder / f"device-{re.sub(r'[^A-Za-z0-9_.,-]', '_', key)}.lock"


def timeout_s() -> float:
    return locks.seconds_from_env(TIMEOUT_ENV, DEFAULT_TIMEOUT_S)


def holder_of(path: Path) -> str:
    """Who holds the lock at PATH, as its holder wrote it."""
    found = locks.holder(path)
    if found is None:
        return "another kgit process"
    return (
        f"pid {found['pid']} on {found.get('host', '?')} ({found.get('what', 'measuring')}, "
        f"since {found.get('since', '?')})"
    )


@contextmanager
def measuring(repo: Repo, what: str, say: Say, *, key: str | None = None) -> Iterator[None]:
    """Hold the measuring lock of this process's device (KEY) while the block runs. WHAT says
    what is measured, for a waiter. Waits at most KGIT_DEVICE_LOCK_TIMEOUT_S, saying once whom
    it waits for, then fails with a hint."""
    key = key or device_key()
    if _held.get(key):
        _held[key] += 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    path = lock_path(repo, key)
    with open(path, "a+") as handle:
        _acquire(handle, path, key, what, say)
        _held[key] = 1
        try:
            kill_left_behind(repo.common_dir, lambda line: say(f"device {key}: {line}"))
            yield
        finally:
            _held[key] = 0
            handle.truncate(0)
            fcntl.flock(handle, fcntl.LOCK_UN)


def _acquire(handle: IO[str], path: Path, key: str, what: str, say: Say) -> None:
    locks.take(
        handle,
        timeout_s(),
        waiting=lambda: say(
            f"device {key}: waiting for its measuring lock, held by {holder_of(path)}"
        ),
        give_up=lambda waited: KgitError(
            f"device {key} stayed busy for {waited:.0f} s: its measuring lock is held by "
            f"{holder_of(path)}",
            hint=f"let that measurement end, pin this worker to another device "
            f"(kgit worker --device N), or wait longer ({TIMEOUT_ENV}=SECONDS); "
            f"the lock is {path}",
        ),
    )
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    locks.write_holder(handle, {"host": socket.gethostname(), "what": what, "since": since})
