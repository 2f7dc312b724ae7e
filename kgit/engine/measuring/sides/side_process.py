"""One measuring side's harness process: its output pumped into a bounded tail, its marker lines
queued, block requests sent, held still and released, and killed whole (its process group).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import secrets
import signal
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import IO, Any

from kgit import progress
from kgit.engine.measuring.sides.holding import (
    SIDE_ENV,
    Hold,
    kill_adopted,
    side_ended,
    side_started,
    stopped_in_family,
    subreaper,
)
from kgit.engine.user_commands import TAIL_BYTES
from kgit.records.protocol import (
    DigestLines,
    parse_marker,
)

EXIT_GRACE_S = 5.0
_STOPPED_POLL_S = 0.5  # how often a wait looks whether the harness it waits on was stopped


class SideProcess:
    """A harness process with its output pumped into a bounded tail and marker lines queued."""

    def __init__(self, command: str, cwd: Path, env: dict[str, str], echo: bool) -> None:
        self.started = time.monotonic()
        self.started_wall = time.time()  # the harness reports when its imports were done
        self.mark = secrets.token_hex(8)  # in the environment of all it starts (holding.py)
        subreaper(True)  # before the start: an orphan of the very first instant comes back too
        try:
            self.proc = subprocess.Popen(
                command,
                shell=True,
                cwd=cwd,
                env={**env, SIDE_ENV: self.mark},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: killed whole
            )
        except BaseException:
            side_ended(-1)  # none started: the subreaper ends if no other side is up
            raise
        side_started(self.proc.pid)
        self.tail: deque[bytes] = deque()
        self.digests = DigestLines()  # of the whole output, not only the kept tail
        self.asked = False  # asked to exit
        self.held: Hold | None = None  # stopped while the other side measures
        self.stops_undone = 0  # stops kgit did not send, found while it waited (_go_on_if_stopped)
        self.markers: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
        assert self.proc.stdout is not None
        self.reader = threading.Thread(
            target=self._pump, args=(self.proc.stdout, echo), daemon=True
        )
        self.reader.start()

    def _pump(self, stream: IO[bytes], echo: bool) -> None:
        held = 0  # bytes in the tail, kept as a count: summing per line is quadratic
        # Lines are read at most TAIL_BYTES at a time: a harness printing one endless line
        # cannot exhaust kgit's memory.
        # A marker comes after a newline of its own (the harness's output may end mid-line):
        # a blank line is echoed only once the next line shows it was not that newline, or a
        # resident harness's every block reply would print an empty line.
        blank: bytes | None = None
        for line in iter(lambda: stream.readline(TAIL_BYTES), b""):
            self.digests.feed(line)
            marker = parse_marker(line.decode(errors="replace").rstrip("\r\n"))
            if marker is not None:
                self.markers.put(marker)
                blank = None
                continue
            self.tail.append(line)
            held += len(line)
            while held > TAIL_BYTES and len(self.tail) > 1:
                held -= len(self.tail.popleft())
            if echo:
                if blank is not None:
                    progress.echo(blank)
                    blank = None
                if line.rstrip(b"\r\n"):
                    progress.echo(line)
                else:
                    blank = line
        if blank is not None:  # the output's last line, no marker after it
            progress.echo(blank)
        self.markers.put(("eof", {}))

    def text(self) -> str:
        return b"".join(self.tail)[-TAIL_BYTES:].decode(errors="replace")

    def wait_marker(self, kind: str, timeout_s: float) -> dict[str, Any] | None:
        """The next KIND marker's payload; None when the process closed its output first.
        Raises TimeoutError when neither comes within TIMEOUT_S."""
        got = self.wait_any((kind,), timeout_s)
        return None if got is None else got[1]

    def wait_any(
        self, kinds: tuple[str, ...], timeout_s: float
    ) -> tuple[str, dict[str, Any]] | None:
        """The next marker of one of KINDS, as (kind, payload); None at the end of the output."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            try:
                got, payload = self.markers.get(timeout=min(left, _STOPPED_POLL_S))
            except queue.Empty:
                self._go_on_if_stopped()
                continue
            if got == "eof":
                self.markers.put((got, payload))  # the end stays the end for a later wait
                return None
            if got in kinds:
                return got, payload

    def send(self, request: dict[str, Any]) -> bool:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return False
        return True

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        try:
            self.proc.wait()
            kill_adopted(self.proc.pid, self.mark)
        finally:
            side_ended(self.proc.pid)
        self.reader.join(timeout=5)

    def hold(self) -> None:
        """Stop the harness's processes while the other side measures (kgit/engine/measuring/sides/holding.py)."""
        if self.held is None and self.proc.poll() is None:
            self.held = Hold(self.proc.pid, self.mark)
            self.held.stop()

    def release(self) -> float:
        """Let the harness go on, held by kgit or stopped by another process (see
        `_go_on_if_stopped`); the CPU seconds its processes used while kgit held them."""
        held, self.held = self.held, None
        if held is not None:
            return held.release()
        Hold(self.proc.pid).release()  # the group, whoever stopped it
        return 0.0

    def _go_on_if_stopped(self) -> None:
        """Continue the harness if something stopped it while kgit waits on it. A process of the
        other side may send SIGSTOP to this side's harness (same user): the stop is harmless
        while this side is idle, since kgit holds the other side while this one measures, but a
        harness still stopped when kgit asks it for a block or its start-up would never answer
        (a stop sent just before the sender was held: the round read ERROR, not its speed)."""
        if self.held is not None:
            return
        stopped = stopped_in_family(self.proc.pid)
        if stopped:
            self.stops_undone += 1
            Hold(self.proc.pid, pids=stopped).release()  # the group, and any that left it

    def ask_exit(self) -> bool:
        """Ask the harness to exit (once); False when it is gone or cannot be asked."""
        self.release()  # a stopped harness reads no request
        if not self.asked:
            self.asked = self.proc.poll() is None and self.send({"cmd": "exit"})
        return self.asked

    def close(self) -> None:
        """Ask the harness to exit; kill its process group if it does not."""
        if self.ask_exit():
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=EXIT_GRACE_S)
        self.kill()
