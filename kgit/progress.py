"""Progress on standard error: plain `kgit: ...` lines, and on a terminal one live line under them
that names the step in progress and how long it has run, redrawn twice a second.

A harness shape can take tens of seconds and an A/B validation minutes; without the live line a
terminal shows nothing move in between. Every writer to standard error goes through here (kgit's
messages and the harness and test output it echoes), so the live line is cleared before other
text lands and redrawn after it. Not a terminal (CI, agents, a pipe): plain lines only.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import IO

# What a step is handed to report its progress: `say` below, a quiet stand-in or a test's list.
Say = Callable[[str], None]


@dataclass(frozen=True)
class Voice:
    """How a command speaks to its user: `say` prints kgit's own lines, and `echo` says whether
    the output of the commands it runs for the user (harnesses, tests, builds) is shown too.

    Made once per CLI command (`-q` silences both) and handed down whole, so that a step that
    runs a harness and reports on it takes one argument, not a pair threaded side by side."""

    say: Say
    echo: bool = True

    def unechoed(self) -> Voice:
        """The same voice, with the commands' own output not shown."""
        return replace(self, echo=False)


CLEAR = "\r\033[K"
REDRAW_S = 0.5


class Live:
    """The live line. `say` prints a message and makes it the step shown; `write` passes other
    output through; `close` clears the line for good."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.lock = threading.Lock()
        self.step = ""
        self.since = time.monotonic()
        self.shown = False
        self.closed = threading.Event()
        self.thread = threading.Thread(target=self._tick, daemon=True)
        self.thread.start()

    def say(self, message: str) -> None:
        with self.lock:
            self._clear()
            self.stream.write(f"kgit: {message}\n")
            self.step, self.since = message.splitlines()[0] if message else "", time.monotonic()
            self._draw()

    def write(self, data: bytes) -> None:
        with self.lock:
            self._clear()
            self.stream.flush()
            buffer = getattr(self.stream, "buffer", None)
            if buffer is not None:
                buffer.write(data)
                buffer.flush()
            else:
                self.stream.write(data.decode(errors="replace"))
            if data.endswith(b"\n"):  # a partial line stays as it is until its end comes
                self._draw()

    def close(self) -> None:
        self.closed.set()
        with self.lock:
            self._clear()
            self.stream.flush()

    def _tick(self) -> None:
        while not self.closed.wait(REDRAW_S):
            with self.lock:
                self._draw()

    def _draw(self) -> None:
        if not self.step or self.closed.is_set():
            return
        import shutil  # only a terminal draws the live line: not loaded by a command's start

        width = shutil.get_terminal_size((100, 24)).columns
        elapsed = f" ({time.monotonic() - self.since:.0f} s)"
        text = "… " + self.step
        room = max(10, width - len(elapsed) - 1)
        if len(text) > room:
            text = text[: room - 1] + "…"
        self.stream.write(CLEAR + text + elapsed)
        self.stream.flush()
        self.shown = True

    def _clear(self) -> None:
        if self.shown:
            self.stream.write(CLEAR)
            self.shown = False


_live: Live | None = None


def start(quiet: bool) -> None:
    """Show the live line when standard error is a terminal (not under --quiet, not TERM=dumb)."""
    global _live
    if quiet or _live is not None or os.environ.get("TERM") == "dumb":
        return
    if sys.stderr.isatty():
        _live = Live(sys.stderr)


def stop() -> None:
    global _live
    if _live is not None:
        _live.close()
        _live = None


def say(message: str) -> None:
    """A kgit message on standard error, as `kgit: MESSAGE`."""
    if _live is not None:
        _live.say(message)
    else:
        print(f"kgit: {message}", file=sys.stderr, flush=True)


def warn(message: str) -> None:
    """A warning that -q does not silence: a result the user must see, not progress."""
    print(f"kgit: WARNING: {message}", file=sys.stderr, flush=True)


def echo(data: bytes) -> None:
    """Output kgit passes through (a harness's, a test command's)."""
    if _live is not None:
        _live.write(data)
    else:
        sys.stderr.buffer.write(data)
        sys.stderr.flush()


# -- where a command's time went ------------------------------------------------------------------
# A baseline on an H100 took 219 s for about 2 s of timed quads per pair of processes: the
# phases say where the rest goes (`kgit baseline` and `kgit round validate` print them and give
# them in --json), so that what is cut next is measured, not guessed.


class Phases:
    """Seconds per phase of one command, summed over every time the phase ran."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.started = time.monotonic()

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + max(seconds, 0.0)

    def to_dict(self) -> dict[str, float]:
        total = time.monotonic() - self.started
        listed = {name: round(s, 3) for name, s in self.seconds.items()}
        return {**listed, "total": round(total, 3)}

    def line(self) -> str:
        data = self.to_dict()
        total = data.pop("total")
        parts = [f"{name} {seconds:.1f} s" for name, seconds in data.items()]
        return (
            f"time: {total:.1f} s in all: " + ", ".join(parts) if parts else f"time: {total:.1f} s"
        )


_phases: list[Phases] = []


def add_phase(name: str, seconds: float) -> None:
    """Count SECONDS to phase NAME of the command collecting (none: nothing)."""
    if _phases:
        _phases[-1].add(name, seconds)


class phase:
    """The block's wall time, counted to phase NAME."""

    def __init__(self, name: str) -> None:
        self.name, self.began = name, 0.0

    def __enter__(self) -> None:
        self.began = time.monotonic()

    def __exit__(self, *_: object) -> None:
        add_phase(self.name, time.monotonic() - self.began)


class collecting:
    """Collect the phases of what runs inside."""

    def __init__(self) -> None:
        self.phases = Phases()

    def __enter__(self) -> Phases:
        _phases.append(self.phases)
        return self.phases

    def __exit__(self, *_: object) -> None:
        _phases.remove(self.phases)
