"""What a dead kgit left running: its harness, its tests, its rebuild, found and killed before the
device is timed again.

kgit runs those commands in process groups of their own and kills them whole on every way out it
sees (an error, a timeout, Ctrl-C). A SIGKILL (an agent's timeout, the OOM killer) gives it none:
the group runs on, for minutes on a big campaign, while the kernel frees the device's measuring
lock, and the next kgit would time its kernels beside it and record the figures as clean.

So each such command carries a tether in its environment, `KGIT_OWNER=<pid>:<start>:<repository>`
(the kgit process that started it, and the repository's common git folder), which every process
it starts inherits. Whoever takes a measuring lock of that repository (kgit/engine/measuring/device/devicelock.py)
looks through /proc for tethered processes whose kgit has ended, kills their process groups
(SIGKILL), waits until they are gone and says so in one line. A process is known by its pid *and*
its start time, so a recycled pid is never taken for a live kgit, nor a live kgit for a dead one.
The sweep keeps to its repository, as the lock does: a kgit never kills another project's
processes (nor one test's kgit another test's).

Why a mark in the environment rather than a record of the groups written by the lock's holder:
the mark is in place from the command's first instruction (a record is written after the fork,
and a kill in between loses it), it reaches a grandchild that left its group, and it covers what
runs outside the lock (the gate in kgit's clean checkout, a rebuild, the pre-commit hook's tests),
whose processes use the device as much as a harness does. PR_SET_PDEATHSIG was weighed and left:
it reaches only the direct child (here the shell), fires when the *thread* that forked ends, and
needs a preexec_fn, which Python calls unsafe in a process with threads (kgit pumps output in
threads).

What it does not reach: a process that drops KGIT_OWNER from its environment *and* leaves its
process group (a service a test means to outlive kgit can do so); a process in another PID
namespace or on another host; systems without /proc, where nothing is killed. Anything a tethered
command leaves behind once its kgit has ended, killed or not, is killed by the next measurement:
on a measuring machine nothing of kgit's should outlive it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kgit.errors import KgitError
from kgit.progress import Say

OWNER_ENV = "KGIT_OWNER"
PROC = Path("/proc")
GONE_WAIT_S = 30.0
# A dead kgit's tethered process may itself be a kgit whose own commands show once it is killed.
SWEEPS = 5
ENDED = ("Z", "X")  # a zombie has ended: only its parent's wait is missing


@dataclass(frozen=True)
class Left:
    """A process a dead kgit left running."""

    pid: int
    group: int
    start: str
    owner: int
    command: str


def tether(env: dict[str, str], repo: Path | None) -> dict[str, str]:
    """ENV for a command that must not outlive this kgit in REPO (its common git folder); REPO
    None: the command may (it writes the repository: a commit, a patch), and carries no tether,
    not even one this process inherited."""
    env = {k: v for k, v in env.items() if k != OWNER_ENV}
    me = _stat(os.getpid())
    if repo is not None and me is not None:
        env[OWNER_ENV] = f"{os.getpid()}:{me[3]}:{repo.resolve()}"
    return env


def kill_left_behind(repo: Path, say: Say) -> None:
    """Kill what a dead kgit of REPO left running (see the module's docstring), saying so."""
    if not PROC.is_dir():
        return
    for _ in range(SWEEPS):
        found = left_behind(repo)
        if not found:
            return
        for group in sorted({p.group for p in found}):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        for process in found:  # one that left its group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(process.pid, signal.SIGKILL)
        _wait_gone(found)
        say(describe(found))


def left_behind(repo: Path) -> list[Left]:
    """The running processes tethered to REPO whose kgit has ended, this process's own ancestry
    and process group spared (a kgit run by a dead kgit's test carries that kgit's tether)."""
    wanted = str(repo.resolve())
    spared, groups = _ancestry()
    groups |= {0, 1}  # never the groups of the kernel and of init
    owners: dict[str, bool] = {}
    found = []
    for pid in _pids():
        owner = _owner_of(pid)
        stat = None if owner is None or pid in spared else _stat(pid)
        if owner is None or stat is None or stat[0] in ENDED or stat[2] in groups:
            continue
        owner_pid, owner_start, owner_repo = owner
        if owner_repo != wanted:
            continue
        key = f"{owner_pid}:{owner_start}"
        if key not in owners:
            owners[key] = _running(int(owner_pid), owner_start)
        if not owners[key]:
            found.append(Left(pid, stat[2], stat[3], int(owner_pid), _command(pid)))
    return found


def describe(found: list[Left]) -> str:
    pids = sorted(p.pid for p in found)
    owners = ", ".join(str(o) for o in sorted({p.owner for p in found}))
    leader = next((p for p in found if p.pid == p.group), found[0])
    shown = ", ".join(map(str, pids[:8])) + (", ..." if len(pids) > 8 else "")
    return (
        f"killed {len(pids)} process(es) left running by kgit pid {owners}, which ended without "
        f"stopping them (pid {shown}): `{leader.command}`"
    )


def _wait_gone(found: list[Left]) -> None:
    deadline = time.monotonic() + GONE_WAIT_S
    while True:
        left = [p for p in found if _running(p.pid, p.start)]
        if not left:
            return
        if time.monotonic() >= deadline:
            shown = ", ".join(str(p.pid) for p in left)
            raise KgitError(
                f"process(es) {shown}, left running by a kgit that ended, did not end within "
                f"{GONE_WAIT_S:g} s of SIGKILL: the device is not free to measure on",
                hint=f"a process stuck in the device's driver ends when the driver lets it go; "
                f"see `ps -o pid,stat,cmd -p {shown.replace(' ', '')}`, and measure again once "
                "it is gone (nothing was measured)",
            )
        time.sleep(0.05)


def _pids() -> Iterator[int]:
    with contextlib.suppress(OSError):
        for entry in PROC.iterdir():
            if entry.name.isdigit():
                yield int(entry.name)


def _stat(pid: int) -> tuple[str, int, int, str] | None:
    """PID's (state, parent, process group, start time); None when it is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name, in parentheses, may hold spaces and parentheses: fields follow the last.
    fields = text.rpartition(")")[2].split()
    return fields[0], int(fields[1]), int(fields[2]), fields[19]


def _running(pid: int, start: str) -> bool:
    """PID is the process that started at START and has not ended (a zombie has ended)."""
    stat = _stat(pid)
    return stat is not None and stat[0] not in ENDED and stat[3] == start


def process_start(pid: int) -> str | None:
    """PID's start time as /proc gives it (with the pid, it names one process); None if gone."""
    stat = _stat(pid)
    return None if stat is None else stat[3]


def running(pid: int, start: str) -> bool:
    """Whether PID is still the process that started at START (kgit/engine/guards/audit_background.py)."""
    return pid > 0 and _running(pid, start)


def environ_value(pid: int, name: str) -> str | None:
    """NAME's value in PID's environment as it started; None when absent or unreadable
    (another user's process, an undumpable one, a zombie)."""
    try:
        environ = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    prefix = name.encode() + b"="
    for entry in environ.split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix) :].decode(errors="replace")
    return None


def _owner_of(pid: int) -> tuple[str, str, str] | None:
    """PID's tether: (kgit's pid, its start time, the repository); None when untethered or
    unreadable (another user's process)."""
    parts = (environ_value(pid, OWNER_ENV) or "").split(":", 2)
    if len(parts) == 3 and parts[0].isdigit():
        return parts[0], parts[1], parts[2]
    return None


def _ancestry() -> tuple[set[int], set[int]]:
    """This process and its ancestors, and their process groups."""
    pids, groups = set(), {os.getpgrp()}
    pid = os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        stat = _stat(pid)
        if stat is None:
            break
        groups.add(stat[2])
        pid = stat[1]
    return pids, groups


def _command(pid: int) -> str:
    try:
        words = (PROC / str(pid) / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    except OSError:
        return "?"
    text = " ".join(w.decode(errors="replace") for w in words)
    return text if len(text) <= 100 else text[:99] + "…"
