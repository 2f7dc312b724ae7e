"""Running the user's commands: tests, rebuild, and the quick harness under its contract.

Commands run through the shell from the round's work tree, in a clean git environment, in their
own process group (a timeout kills the whole tree), with only the output's tail kept in memory so a
harness that floods its output cannot exhaust it. A command tethered to its repository is killed
by the next measurement there when kgit dies before it (kgit/engine/orphans.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kgit import progress
from kgit.engine.orphans import tether as tethered
from kgit.gitdoor import clean_env
from kgit.records.protocol import DigestLines

TAIL_BYTES = 16_384

# The harness contract's exit codes.
HARNESS_ALL_PASS, HARNESS_SOME_FAIL, HARNESS_UNAVAILABLE = 0, 1, 2


@dataclass(frozen=True)
class CommandResult:
    returncode: int | None  # None when killed on timeout
    seconds: float
    tail: str
    digests: tuple[str, ...] | None = None  # every digest line of the whole output, if read

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def _pump(stream: IO[bytes], tail: deque[bytes], echo: bool, digests: DigestLines) -> None:
    for chunk in iter(lambda: stream.read1(4096), b""):  # type: ignore[attr-defined]
        digests.feed(chunk)
        tail.append(chunk)
        while sum(map(len, tail)) > TAIL_BYTES and len(tail) > 1:
            tail.popleft()
        if echo:
            progress.echo(chunk)


def run_command(
    command: str,
    cwd: Path,
    timeout_s: float,
    *,
    tether: Path | None,
    echo: bool = False,
    env: dict[str, str] | None = None,
) -> CommandResult:
    """Run COMMAND through the shell; keep the last TAIL_BYTES of stdout+stderr. TETHER: the
    repository (its common git folder) whose next measurement kills the command if kgit dies
    before it; None for a command that writes the repository and may finish alone."""
    return start_command(command, cwd, tether=tether, echo=echo, env=env).wait(timeout_s)


class Started:
    """A command `start_command` started: poll it, wait for it, or kill it (its whole process
    group: it runs in its own session, so no signal of the terminal reaches it)."""

    def __init__(self, proc: subprocess.Popen[bytes], echo: bool) -> None:
        self.proc, self.began = proc, time.monotonic()
        self.tail: deque[bytes] = deque()
        self.digests = DigestLines()  # of the whole output, not only the kept tail
        assert proc.stdout is not None
        self.reader = threading.Thread(
            target=_pump, args=(proc.stdout, self.tail, echo, self.digests), daemon=True
        )
        self.reader.start()

    def wait(self, timeout_s: float) -> CommandResult:
        """The result, killing the command past TIMEOUT_S (returncode None) or when this wait
        is interrupted (Ctrl-C, SIGTERM: left alive, a harness keeps the GPU)."""
        try:
            returncode: int | None = self.proc.wait(timeout=max(timeout_s, 0.001))
        except subprocess.TimeoutExpired:
            self.kill()
            returncode = None
        except BaseException:
            self.kill()
            raise
        return self._result(returncode)

    def poll(self) -> CommandResult | None:
        """The result once the command has ended, else None."""
        code = self.proc.poll()
        return None if code is None else self._result(code)

    def kill(self) -> CommandResult:
        """Kill it now (a timeout: returncode None)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        return self._result(None)

    def _result(self, returncode: int | None) -> CommandResult:
        self.reader.join(timeout=5)
        text = b"".join(self.tail)[-TAIL_BYTES:].decode(errors="replace")
        digests = tuple(self.digests.close())
        return CommandResult(returncode, time.monotonic() - self.began, text, digests)


def start_command(
    command: str,
    cwd: Path,
    *,
    tether: Path | None,
    echo: bool = False,
    env: dict[str, str] | None = None,
) -> Started:
    """COMMAND started through the shell, as `run_command` runs it, without waiting."""
    proc = subprocess.Popen(
        command,
        shell=True,
        cwd=cwd,
        env=tethered(env or clean_env(), tether),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return Started(proc, echo)


@dataclass(frozen=True)
class HarnessRun:
    """One run of the quick harness on a set of shapes."""

    status: str  # "ok", "unavailable" (exit 2: cannot run here) or "error"
    problem: str | None
    csv: bytes | None
    result: CommandResult


def harness_command(quick_command: str, csv_path: Path, shapes_path: Path) -> str:
    return (
        f"{quick_command} --summary-csv {shlex.quote(str(csv_path))} "
        f"--shapes {shlex.quote(str(shapes_path))}"
    )


def run_harness(
    quick_command: str,
    shapes: list[dict[str, Any]],
    cwd: Path,
    timeout_s: float,
    *,
    tether: Path,
    echo: bool,
    env: dict[str, str] | None = None,
) -> HarnessRun:
    """Run the harness on SHAPES under the contract: --summary-csv, --shapes, exit 0/1/2."""
    with tempfile.TemporaryDirectory(prefix="kgit-harness-") as scratch:
        csv_path, shapes_path = Path(scratch) / "summary.csv", Path(scratch) / "shapes.json"
        shapes_path.write_text(json.dumps(shapes, indent=1))
        command = harness_command(quick_command, csv_path, shapes_path)
        result = run_command(command, cwd, timeout_s, tether=tether, echo=echo, env=env)
        csv = csv_path.read_bytes() if csv_path.is_file() else None
    return classify_harness(result, csv, timeout_s)


def classify_harness(result: CommandResult, csv: bytes | None, timeout_s: float) -> HarnessRun:
    """What a harness's exit says under the contract (the CSV is checked by its reader)."""
    if result.returncode is None:
        return HarnessRun("error", f"harness timed out after {timeout_s:g} s", csv, result)
    if result.returncode == HARNESS_UNAVAILABLE:
        return HarnessRun("unavailable", "harness says it cannot run here (exit 2)", csv, result)
    if result.returncode not in (HARNESS_ALL_PASS, HARNESS_SOME_FAIL):
        return HarnessRun("error", f"harness exited {result.returncode}", csv, result)
    if csv is None:
        return HarnessRun("error", "harness wrote no summary CSV", None, result)
    return HarnessRun("ok", None, csv, result)


FINGERPRINT_PREFIX = "fingerprint: "


def parse_fingerprint(output_tail: str) -> dict[str, str]:
    """The environment a harness reports on a `fingerprint: {json}` line (kgit.measure prints
    one: GPU, driver, CUDA/HIP, torch, triton, clocks); empty when the harness prints none."""
    for line in reversed(output_tail.splitlines()):
        if line.startswith(FINGERPRINT_PREFIX):
            try:
                data = json.loads(line[len(FINGERPRINT_PREFIX) :])
            except ValueError:
                return {}
            return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
    return {}
