"""The baseline's gate audit in a process of its own, so that `kgit baseline` returns once the
baseline is recorded instead of waiting for the audit's gate runs (two gate runs of wall time,
30.7 s of a 131.5 s baseline on an H100, docs/cost.md).

`kgit baseline` starts `kgit _baseline-audit` in a session of its own (a Ctrl-C or the end of
the baseline's terminal does not reach it) and writes a mark, `.git/kgit/audit/<campaign>.json`:
the process (pid and start time, so that a recycled pid is never taken for it), the commit
audited and its log. The process holds the device's measuring lock for its whole run
(kgit/engine/measuring/device/devicelock.py): the audit's gate runs use the device as a harness does,
so a `kgit round validate` waits for it instead of timing beside it. It records its result
where the audit's result is recorded now (the campaign's state, kgit/engine/guards/audit.py),
then removes the mark. A mark whose process is gone is an interrupted audit: nothing it had
found is recorded (an audit is recorded whole or not at all, as an inline one killed mid-way),
and `kgit status`, `kgit doctor` and the report say so, with the command that runs it again.

`kgit baseline --wait-audit` (or KGIT_AUDIT_INLINE=1 in the environment) runs it inline, as
before, for those who need its result when the baseline returns.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kgit.engine.campaign import Campaign
from kgit.engine.orphans import kill_left_behind, process_start, running, tether
from kgit.gitdoor import Repo, clean_env, locks
from kgit.progress import Say

INLINE_ENV = "KGIT_AUDIT_INLINE"
_POLL_S = 0.2


def inline_wanted() -> bool:
    return os.environ.get(INLINE_ENV, "") not in ("", "0")


def mark_path(campaign: Campaign) -> Path:
    return _mark(campaign.repo, campaign.name)


def _mark(repo: Repo, name: str) -> Path:
    return repo.kgit_dir() / "audit" / f"{name}.json"


def forget(repo: Repo, name: str) -> bool:
    """The campaign NAME is deleted: its audit, if one still runs, is stopped (its session, gate
    runs included), and its mark and log go. Whether one was running."""
    mark = _mark(repo, name)
    if not mark.is_file():
        return False
    state = _read(mark)
    pid = int(state.get("pid", 0))
    alive = _alive(mark, state)
    if alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # its own session: the group is the audit's
        deadline = time.monotonic() + 10.0
        while running(pid, str(state.get("start", ""))) and time.monotonic() < deadline:
            time.sleep(_POLL_S)
        # Its gate runs live in groups of their own, tethered to it: now that it is gone, the
        # sweep of what a dead kgit left running takes them.
        kill_left_behind(repo.common_dir, lambda _line: None)
    mark.unlink(missing_ok=True)
    mark.with_suffix(".log").unlink(missing_ok=True)
    _held_path(mark).unlink(missing_ok=True)
    return alive


def start_audit(campaign: Campaign, commit: str, say: Say) -> dict[str, Any]:
    """Start the baseline's audit of COMMIT in the background; returns its mark."""
    mark = mark_path(campaign)
    mark.parent.mkdir(parents=True, exist_ok=True)
    log = mark.with_suffix(".log")
    argv = [sys.executable, "-m", "kgit", "-c", campaign.name, "_baseline-audit"]
    # Locked here and handed to the audit's process, which holds it until it ends: a mark is
    # its audit's only while that lock is held (see `_alive`).
    with open(log, "w") as out, _held_path(mark).open("a") as held:
        fcntl.flock(held, fcntl.LOCK_SH)
        # No tether (kgit/engine/orphans.py): the audit is a kgit of its own, meant to outlive
        # this one; its own commands carry its tether.
        child = subprocess.Popen(argv, cwd=campaign.repo.root, env=clean_env(_untethered()),
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True, pass_fds=(held.fileno(),))  # fmt: skip
    state = {"pid": child.pid, "start": process_start(child.pid) or "", "commit": commit,
             "since": time.time(), "log": str(log)}  # fmt: skip
    written = mark.with_suffix(".tmp")
    written.write_text(json.dumps(state))
    written.replace(mark)  # whole or not at all: a reader never sees half a mark
    say(f"gate audit: running in the background (pid {child.pid}, log {log})")
    return {"running": True, **state}


def _untethered() -> dict[str, str]:
    return tether(dict(os.environ), None)


def await_mark(campaign: Campaign, within_s: float = 30.0) -> None:
    """In the audit's process: wait until the baseline has written the mark naming it, so that
    a quick audit never ends before its mark is written (a mark left then would read as an
    interrupted audit)."""
    deadline = time.monotonic() + within_s
    mark = mark_path(campaign)
    while time.monotonic() < deadline:
        if mark.is_file() and _read(mark).get("pid") == os.getpid():
            return
        time.sleep(0.02)


def finished(campaign: Campaign) -> None:
    """The audit's process is done (recorded, or stopped with a warning): its mark goes."""
    mark = mark_path(campaign)
    if mark.is_file() and _read(mark).get("pid") == os.getpid():
        mark.unlink()


def audit_progress(campaign: Campaign) -> dict[str, Any] | None:
    """The background audit's state: None when none was started or it ended; else its mark with
    `running` (its process is alive) or `interrupted` and the command that runs it again."""
    mark = mark_path(campaign)
    if not mark.is_file():
        return _started_unmarked(campaign)
    state = _read(mark)
    alive = _alive(mark, state)
    state["running"] = alive
    if not alive:
        state["interrupted"] = True
        state["rerun"] = f"kgit -c {campaign.name} gate audit"
    return state


def _started_unmarked(campaign: Campaign) -> dict[str, Any] | None:
    """The record says the baseline started an audit that has not ended, and its mark is
    gone: removed by hand (a kill and an `rm` left no word of the audit), or a baseline killed
    before it started one. Read as interrupted."""
    commit = campaign.state.gate_audit_started
    if commit is None:
        return None
    return {"pid": "unknown", "start": "", "commit": commit,
            "log": str(mark_path(campaign).with_suffix(".log")), "running": False,
            "interrupted": True, "rerun": f"kgit -c {campaign.name} gate audit"}  # fmt: skip


def wait_for_audit(campaign: Campaign, say: Say) -> None:
    """Wait while the background audit runs, saying so once; an interrupted one is reported
    and not waited for."""
    state = audit_progress(campaign)
    if state is None:
        return
    if state["running"]:
        say(f"waiting for the baseline's gate audit (pid {state['pid']}) to finish")
        while state is not None and state["running"]:
            time.sleep(_POLL_S)
            state = audit_progress(campaign)
    if state is not None:
        say(
            f"warning: the baseline's gate audit was interrupted (pid {state['pid']}), nothing "
            f"recorded; run it again: {state['rerun']}"
        )


def drop_interrupted(campaign: Campaign) -> None:
    """A new audit is recorded: the mark of an interrupted one says nothing more."""
    state = audit_progress(campaign)
    if state is not None and not state["running"]:
        mark_path(campaign).unlink(missing_ok=True)


def _alive(mark: Path, state: dict[str, Any]) -> bool:
    """Whether the audit MARK names runs: its process, known by its start time, and the lock
    handed to it at its start still held. A mark written by hand naming a live process (pid 1
    never ends) made accept and finish wait for it forever, and a campaign's delete kill its
    process group."""
    return running(state["pid"], state["start"]) and locks.held(_held_path(mark))


def _held_path(mark: Path) -> Path:
    return mark.with_suffix(".held")


def _read(mark: Path) -> dict[str, Any]:
    """The mark as its audit wrote it; a mark unreadable, or rewritten with values of other
    types (a pid as text), reads as the mark of an audit that ended: trusted as it was, it
    crashed status, report and doctor."""
    try:
        data = json.loads(mark.read_text())
    except (OSError, ValueError):
        data = None
    found = data if isinstance(data, dict) else {}
    pid = found.get("pid")
    return {
        **{key: value for key, value in found.items() if isinstance(value, str | int | float)},
        "pid": pid if isinstance(pid, int) and not isinstance(pid, bool) else 0,
        "start": found["start"] if isinstance(found.get("start"), str) else "",
        "log": found["log"] if isinstance(found.get("log"), str) else str(mark.with_suffix(".log")),
    }
