"""The two sides of an A/B comparison, each a harness process that stays up (a measuring worker,
kgit/records/protocol.py) or, for a harness that does not speak the protocol, one pass a turn.

Every side starts the same way: the harness's plain first pass on every shape, with
`KGIT_WORKER=1` in its environment. A worker then says it is ready and answers block requests;
a plain harness exits, and its pass is kept as the side's first measurement. A side's process
group is killed on every way out (close, error, Ctrl-C): a harness left behind keeps the GPU.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, ClassVar

from kgit.engine.measure import HarnessError, Measurement, Say, harness_env, measure, read_run
from kgit.engine.runner import TAIL_BYTES, CommandResult, classify_harness, harness_command
from kgit.engine.store import Campaign
from kgit.records.protocol import FIRST_BLOCK_ENV, WORKER_ENV, block_request, parse_marker

# How long a block request may take before the worker is taken for hung: a block times tens of
# milliseconds; the first block of a shape also prepares its inputs and graph.
BLOCK_TIMEOUT_S = 300.0
EXIT_GRACE_S = 5.0


class _Process:
    """A harness process with its output pumped into a bounded tail and marker lines queued."""

    def __init__(self, command: str, cwd: Path, env: dict[str, str], echo: bool) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            command,
            shell=True,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: killed whole
        )
        self.tail: deque[bytes] = deque()
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
        for line in iter(lambda: stream.readline(TAIL_BYTES), b""):
            marker = parse_marker(line.decode(errors="replace").rstrip("\r\n"))
            if marker is not None:
                self.markers.put(marker)
                continue
            self.tail.append(line)
            held += len(line)
            while held > TAIL_BYTES and len(self.tail) > 1:
                held -= len(self.tail.popleft())
            if echo:
                sys.stderr.buffer.write(line)
                sys.stderr.flush()
        self.markers.put(("eof", {}))

    def text(self) -> str:
        return b"".join(self.tail)[-TAIL_BYTES:].decode(errors="replace")

    def wait_marker(self, kind: str, timeout_s: float) -> dict[str, Any] | None:
        """The next KIND marker's payload; None when the process closed its output first.
        Raises TimeoutError when neither comes within TIMEOUT_S."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            try:
                got, payload = self.markers.get(timeout=left)
            except queue.Empty:
                raise TimeoutError from None
            if got == "eof":
                return None
            if got == kind:
                return payload

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
        self.proc.wait()
        self.reader.join(timeout=5)

    def close(self) -> None:
        """Ask the worker to exit; kill its process group if it does not."""
        if self.proc.poll() is None and self.send({"cmd": "exit"}):
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=EXIT_GRACE_S)
        self.kill()


@dataclass
class Side:
    """One side of the comparison: its first pass, then one measurement per `block` call."""

    mode: ClassVar[str] = "pass"
    campaign: Campaign
    name: str
    tree: Path
    first: Measurement
    frozen: tuple[str, ...] | None

    def block(self, shapes: list[dict[str, Any]], block_ms: float, say: Say) -> Measurement:
        """A plain harness: a whole pass on SHAPES (block_ms does not apply)."""
        return measure(
            self.campaign,
            shapes,
            self.frozen,
            say,
            echo=False,
            tree=self.tree,
            role=f" {self.name}",
        )

    def close(self) -> None:
        pass


@dataclass
class WorkerSide(Side):
    mode: ClassVar[str] = "worker"
    process: _Process
    scratch: Path
    requests: int = 0

    def block(self, shapes: list[dict[str, Any]], block_ms: float, say: Say) -> Measurement:
        self.requests += 1
        csv_path = self.scratch / f"block-{self.requests}.csv"
        shapes_path = self.scratch / f"shapes-{self.requests}.json"
        shapes_path.write_text(json.dumps(shapes))
        request = block_request(self.requests, str(csv_path), str(shapes_path), block_ms)
        start = time.monotonic()
        if not self.process.send(request):
            raise self._died("before a block request")
        try:
            reply = self.process.wait_marker(
                "reply", min(BLOCK_TIMEOUT_S, self.campaign.manifest.timeout_s)
            )
        except TimeoutError:
            self.process.kill()
            raise HarnessError(
                f"validation ERROR: the {self.name} worker did not answer a block request within "
                f"{min(BLOCK_TIMEOUT_S, self.campaign.manifest.timeout_s):g} s",
                hint="its output is below; a harness that hangs in worker mode can be run pass "
                "by pass by ignoring KGIT_WORKER",
                details=self.process.text()[-4000:],
            ) from None
        if reply is None:
            raise self._died("in the middle of a block request")
        if reply.get("id") != self.requests or _exit_code(reply) is None:
            self.process.kill()
            raise HarnessError(
                f"validation ERROR: the {self.name} worker answered block request "
                f"{self.requests} with {reply!r}",
                hint='a reply is {"id": <the request\'s id>, "exit": 0 or 1} '
                "(kgit/records/protocol.py)",
                details=self.process.text()[-4000:],
            )
        csv = csv_path.read_bytes() if csv_path.is_file() else None
        result = CommandResult(_exit_code(reply), time.monotonic() - start, self.process.text())
        run = classify_harness(result, csv, BLOCK_TIMEOUT_S)
        return read_run(self.campaign, run, [s["label"] for s in shapes], self.frozen)

    def _died(self, when: str) -> HarnessError:
        self.process.kill()
        return HarnessError(
            f"validation ERROR: the {self.name} worker exited {when} "
            f"(exit {self.process.proc.returncode})",
            hint="see its output; nothing of this validation was recorded as a verdict",
            details=self.process.text()[-4000:],
        )

    def close(self) -> None:
        self.process.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


def start_side(
    campaign: Campaign,
    name: str,
    tree: Path,
    shapes: list[dict[str, Any]],
    frozen: tuple[str, ...] | None,
    say: Say,
    *,
    echo: bool,
    first_block_ms: float | None = None,
) -> Side:
    """Start the harness in TREE on SHAPES: its first pass, and a worker when it speaks the
    protocol. The caller closes the side (`try/finally`). FIRST_BLOCK_MS asks a worker for a
    first pass of blocks (the reference side: its plain timings would not be used)."""
    manifest = campaign.manifest
    scratch = Path(tempfile.mkdtemp(prefix="kgit-worker-"))
    csv_path, shapes_path = scratch / "first.csv", scratch / "shapes.json"
    shapes_path.write_text(json.dumps(shapes, indent=1))
    command = harness_command(manifest.quick_command, csv_path, shapes_path)
    say(f"harness {name}: first pass on {len(shapes)} shape(s), starting a measuring worker")
    env = {**harness_env(tree), WORKER_ENV: "1"}
    if first_block_ms is not None:
        env[FIRST_BLOCK_ENV] = f"{first_block_ms:g}"
    process = _Process(command, tree, env, echo)
    try:
        try:
            ready = process.wait_marker("ready", manifest.timeout_s)
        except TimeoutError:
            process.kill()
            returncode = None
        else:
            if ready is None:
                process.proc.wait()
                returncode = process.proc.returncode
            else:
                returncode = _exit_code(ready)
                if returncode is None:
                    process.kill()
                    raise HarnessError(
                        f"validation ERROR: the {name} harness said it was ready with {ready!r}",
                        hint='a ready line carries {"protocol": 1, "exit": 0 or 1} '
                        "(kgit/records/protocol.py)",
                        details=process.text()[-4000:],
                    )
        seconds = time.monotonic() - process.started
        csv = csv_path.read_bytes() if csv_path.is_file() else None
        run = classify_harness(
            CommandResult(returncode, seconds, process.text()), csv, manifest.timeout_s
        )
        first = read_run(campaign, run, [s["label"] for s in shapes], frozen)
    except BaseException:
        process.kill()
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    if returncode is not None and ready is not None:
        say(f"harness {name}: worker ready after {seconds:.1f} s")
        return WorkerSide(campaign, name, tree, first, frozen, process, scratch)
    say(f"harness {name}: no worker mode: pass by pass ({seconds:.1f} s a pass)")
    process.kill()
    shutil.rmtree(scratch, ignore_errors=True)
    return Side(campaign, name, tree, first, frozen)


def _exit_code(payload: dict[str, Any]) -> int | None:
    """The `exit` of a ready or reply line: 0 or 1 (the contract's), else None."""
    value = payload.get("exit")
    return value if type(value) is int and value in (0, 1) else None
