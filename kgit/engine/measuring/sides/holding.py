"""A measuring side held still while the other side measures.

Under interleaved measuring both sides' processes are up at once. A candidate whose harness ran
a thread that burned CPU only while its kernel sat idle, that is during the reference's blocks,
slowed the reference and was accepted at +9% and +67% with no real gain. So the idle side's
processes are stopped (SIGSTOP, which no process can catch or ignore) for the other side's
blocks, and the CPU time they used while stopped is read from /proc when they are let go: any
beyond a scheduler tick means something of theirs ran, and the pair is refused.

The processes held are the side's process group and every descendant of its first process (a
child that left the group with setsid is still a descendant). A process that left both, by a
double fork, would be reparented to init and out of reach: so while sides are up kgit is a child
subreaper (prctl PR_SET_CHILD_SUBREAPER, Linux), such an orphan comes back to kgit as its child,
and the side's mark in its environment (`KGIT_SIDE`, inherited through every fork) says whose it
is. It is held with its side and killed when the side closes; an adopted orphan with no mark kgit
can read (its environment cleared, or unreadable) is held with either side and killed at the
first close. A process that forks anew while the hold lands is caught by scanning again until
none is new. What stays out of reach: a process started outside kgit's process tree (a service
manager's, say); a freezer cgroup per side would reach that too.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import signal
import time
from dataclasses import dataclass, field

from kgit.engine.orphans import environ_value

SIDE_ENV = "KGIT_SIDE"  # a side's mark, in the environment of every process it starts
_PR_SET_CHILD_SUBREAPER = 36
_SCANS = 20  # rescans of a hold before a side that keeps forking is taken as running
_sides: set[int] = set()  # the sides' own processes up now (Popens'): while any, a subreaper

_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01
# CPU a held side may show: the accounting of the tick in which the stop landed.
HELD_CPU_ALLOWANCE_S = 2 * _TICK_S
_STOP_WAIT_S = 0.5


@dataclass(frozen=True)
class _Stat:
    ppid: int
    pgrp: int
    state: str
    cpu_ticks: int  # user + system


def _stat(pid: int) -> _Stat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split()
    return _Stat(
        int(fields[1]), int(fields[2]), fields[0].decode(), int(fields[11]) + int(fields[12])
    )


def _table() -> dict[int, _Stat]:
    table: dict[int, _Stat] = {}
    try:
        names = os.listdir("/proc")
    except OSError:  # no /proc (not Linux): the group is still stopped, its CPU is not read
        return table
    for name in names:
        if name.isdigit() and (found := _stat(int(name))) is not None:
            table[int(name)] = found
    return table


def subreaper(on: bool) -> bool:
    """Make this process a child subreaper (ON) or not; False where the kernel has no such
    thing. An orphan of a descendant then becomes this process's child instead of init's."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def side_started(pid: int) -> None:
    """PID, a side's process, is up (the caller made this process a subreaper before it)."""
    _sides.add(pid)


def side_ended(pid: int) -> None:
    """PID is down; the last one down ends the subreaper."""
    _sides.discard(pid)
    if not _sides:
        subreaper(False)


def _mark_of(pid: int) -> str | None:
    """PID's KGIT_SIDE; None where it has none or it cannot be read."""
    return environ_value(pid, SIDE_ENV)


def reap_adopted(root: int) -> set[int]:
    """Reap the orphans this process adopted that have exited, and say which: no Popen waits
    for them, and a side that forks without end would fill the process table. A side's own
    process (ROOT, any of _sides) is its Popen's to wait for."""
    me, reaped = os.getpid(), set()
    for pid, st in _table().items():
        if st.ppid == me and st.state in "ZX" and pid != root and pid not in _sides:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
                reaped.add(pid)
    return reaped


def family(root: int, mark: str | None = None) -> list[int]:
    """ROOT's process group and every descendant of ROOT, alive now; with MARK, also the orphans
    this process adopted that carry MARK or no mark it can read, and their descendants."""
    return sorted(_family_in(_table(), root, mark))


def stopped_in_family(root: int) -> list[int]:
    """The processes of ROOT's group and descendants that are stopped now (T, or t: traced),
    read from one listing of /proc."""
    table = _table()
    return sorted(pid for pid in _family_in(table, root, None) if table[pid].state in "Tt")


def _family_in(table: dict[int, _Stat], root: int, mark: str | None) -> set[int]:
    members = {pid for pid, st in table.items() if st.pgrp == root}
    members.add(root)
    if mark is not None:
        me = os.getpid()
        members |= {
            p
            for p, st in table.items()
            if st.ppid == me and p != root and p not in _sides and _mark_of(p) in (mark, None)
        }
    grew = True
    while grew:
        more = {pid for pid, st in table.items() if st.ppid in members} - members
        members |= more
        grew = bool(more)
    return {pid for pid in members if pid in table}


@dataclass
class Hold:
    """A side's processes, stopped; `release` lets them go and says the CPU they used."""

    root: int
    mark: str | None = None  # the side's KGIT_SIDE
    pids: list[int] = field(default_factory=list)
    ticks: int = 0
    unsettled: bool = False

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.root, signal.SIGSTOP)
        self.pids = []
        for _ in range(_SCANS):  # a process may fork between a scan and its stop: scan again
            # An adopted orphan that exited since the last scan says something still forks:
            # a chain of processes each living less than a scan is seen only by its exits.
            exited = reap_adopted(self.root) if self.mark is not None else set()
            new = [pid for pid in family(self.root, self.mark) if pid not in self.pids]
            if not new and not exited:
                break
            self.pids += new
            for pid in new:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
            # The signal lands asynchronously: count from the moment every process is stopped.
            deadline = time.monotonic() + _STOP_WAIT_S
            while time.monotonic() < deadline and not self._all_stopped():
                time.sleep(0.001)
        else:
            self.unsettled = True  # it forked as fast as it was stopped: taken as running
        self.ticks = self._ticks()

    def release(self) -> float:
        """Continue the processes; the CPU seconds they used while stopped (infinite for a
        side whose processes kept forking through the hold)."""
        used = math.inf if self.unsettled else (self._ticks() - self.ticks) * _TICK_S
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.root, signal.SIGCONT)
        for pid in self.pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        return used

    def _ticks(self) -> int:
        return sum(st.cpu_ticks for pid in self.pids if (st := _stat(pid)) is not None)

    def _all_stopped(self) -> bool:
        # T: stopped; t: traced; Z/X: gone, nothing left to run.
        return all((st := _stat(pid)) is None or st.state in "TtZX" for pid in self.pids)


def kill_adopted(root: int, mark: str) -> None:
    """Kill what side MARK left besides ROOT (its group, its descendants, the orphans this
    process adopted) and reap the ones that come back to this process: they are no child of a
    Popen, so nothing else would. ROOT, a Popen's, is left to its Popen."""
    killed = [pid for pid in family(root, mark) if pid != root]
    for pid in killed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + _STOP_WAIT_S
    while killed and time.monotonic() < deadline:
        for pid in list(killed):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not (or not yet) this process's child
                done = pid if _stat(pid) is None else 0
            if done:
                killed.remove(pid)
        if killed:
            time.sleep(0.005)
