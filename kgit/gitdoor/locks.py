"""File locks that say who holds them: the repository's write and work-tree locks
(kgit/gitdoor/runner.py) and each device's measuring lock (kgit/engine/measuring/device/devicelock.py). The holder
writes a JSON record into the lock file; a waiter polls, says once whom it waits for, and gives up
after a time limit with the caller's error. The kernel frees an flock when its holder dies: no lock
outlives a kill."""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from kgit.errors import KgitError

POLL_S = 0.05


def seconds_from_env(name: str, default: float) -> float:
    raw = os.environ.get(name, "")
    try:
        return float(raw) if raw else default
    except ValueError:
        raise KgitError(
            f"{name}={raw!r} is not a number of seconds", hint=f"e.g. {name}=600"
        ) from None


def holder(path: Path) -> dict[str, Any] | None:
    """The record the lock's holder wrote, None when there is none to read."""
    try:
        found = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and "pid" in found else None


def held(path: Path) -> bool:
    """Whether some live process holds a lock on PATH (a file nobody locks: no)."""
    try:
        with path.open() as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False  # closing the handle dropped the lock taken to test it


def take(
    handle: IO[str],
    limit_s: float,
    *,
    waiting: Callable[[], None],
    give_up: Callable[[float], KgitError],
    say_after_s: float = 0.0,
) -> None:
    """Lock HANDLE exclusively: WAITING is called once when it has waited SAY_AFTER_S, and
    GIVE_UP(seconds waited) is raised after LIMIT_S."""
    start, told = time.monotonic(), False
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            waited = time.monotonic() - start
            if waited >= limit_s:
                raise give_up(waited) from None
            if not told and waited >= say_after_s:
                waiting()
                told = True
            time.sleep(POLL_S)


def write_holder(handle: IO[str], record: dict[str, Any]) -> None:
    handle.truncate(0)
    handle.write(json.dumps({"pid": os.getpid(), **record}))
    handle.flush()
