"""The resident harness's protocol: how kgit talks to a harness process that stays up between
measurements. Its wire names (`KGIT_WORKER*`, `kgit-worker-*`) are protocol 1's and stay, for the
harnesses written against it; kgit's code calls such a process a resident harness and keeps
"worker" for the `kgit worker` loop.

kgit starts the harness as for a plain pass (`--summary-csv PATH --shapes PATH`) with
`KGIT_WORKER=1` in its environment. A harness that does not know the protocol runs its pass and
exits, and kgit goes on pass by pass. A harness that knows it runs the same first pass (every
shape checked and timed, the CSV written), then prints one line

    kgit-worker-ready: {"protocol": 1, "exit": 0}

(`exit`: the code the plain pass would have returned) and answers requests, one JSON object per
line on its standard input:

    {"id": 3, "cmd": "block", "summary_csv": PATH, "shapes": PATH, "block_ms": 25.0,
     "relocate": true, "columns": ["Forward GB/s"]}
    {"id": 4, "cmd": "exit"}

A resident harness started with `KGIT_WORKER_HOLD=1` as well first prints

    kgit-worker-held: {"protocol": 1}

and waits for `{"cmd": "start"}` before its first pass (any other line, or the end of its input:
it exits 0 without measuring). kgit starts the reference side so, beside the candidate's first
pass, when it knows the harness to be resident: process start and imports overlap the other
side's work, and the two never time at once.

A `block` request measures the shapes again, each timed over about `block_ms` of device time
(kernels already compiled, tuned and checked), and writes the same frozen CSV to PATH; the answer
is one line `kgit-worker-reply: {"id": 3, "exit": 0, "sha256": HEX}` (`sha256`, optional: the
CSV's digest as written). With `relocate` (optional, false by
default), each shape's measuring units (input pool and graph) are first built again at a new,
random place in device memory: where a memory-bound kernel's buffers sit moves its time by up to
~1% on an H200, and a unit placed anew at each quad makes that a noise both sides share instead
of a steady difference between two processes. `columns` (optional) names the CSV columns the
verdict reads (the primary metric's inputs): a resident harness may leave the others NaN in a block, and
skip the timing behind them (kgit.measure times no backward for a forward metric). A shape that ran out of device memory is a FAIL
row, and the harness says so on a line of its own,

    kgit-out-of-memory: {"shape": "x_32768x8192", "asked_bytes": 536870912, "limit_bytes": ...,
     "allocated_bytes": ..., "free_bytes": ..., "total_bytes": ..., "share": 0.25}

(`asked_bytes`: the refused allocation, null when unknown; `limit_bytes`: what this process
planned to hold, its `share` of the card's `total_bytes`): kgit reports that as an error of the
machine's memory, never as the kernel's FAIL. Anything else the harness prints is its log. Each marker line starts a line of its own (the harness prints a newline before it).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

PROTOCOL = 1
WORKER_ENV = "KGIT_WORKER"
# Set whenever kgit runs the harness: the CSV path it passes is kgit's own temporary file, so a
# harness built on kgit.measure does not print it (a path deleted a moment later).
RUN_ENV = "KGIT_RUN"
# Set for the reference side: its first pass may be timed in blocks of this many ms (its plain
# figures are not used; the kernels still get checked, compiled and tuned).
FIRST_BLOCK_ENV = "KGIT_WORKER_FIRST_BLOCK_MS"
HOLD_ENV = "KGIT_WORKER_HOLD"
# The share of the card's memory each measuring process plans for (kgit/measure/budget.py).
MEMORY_SHARE_ENV = "KGIT_MEMORY_SHARE"
OUT_OF_MEMORY = "kgit-out-of-memory: "
HELD = "kgit-worker-held: "
READY = "kgit-worker-ready: "
REPLY = "kgit-worker-reply: "
# A harness built on kgit.measure names the CSV it wrote by its SHA-256, in a plain pass on a
# line of its own and in a resident harness's reply ("sha256"): kgit refuses a CSV that changed after it
# was written (a kernel's exit handler that rewrites the figures).
DIGEST = "summary_sha256: "


def held_line() -> str:
    return HELD + json.dumps({"protocol": PROTOCOL})


def ready_line(exit_code: int, phases: dict[str, float] | None = None) -> str:
    """PHASES: where the harness's time went before it was ready (`entered_at`: the wall clock
    when its code started, imports done; `first_shape_s`, `other_shapes_s`): kgit adds them to
    the command's phases. A kgit that does not read them ignores them."""
    payload: dict[str, Any] = {"protocol": PROTOCOL, "exit": exit_code}
    if phases:
        payload["phases"] = phases
    return READY + json.dumps(payload)


def reply_line(request_id: int, exit_code: int, csv: bytes | None = None) -> str:
    reply: dict[str, Any] = {"id": request_id, "exit": exit_code}
    if csv is not None:
        reply["sha256"] = hashlib.sha256(csv).hexdigest()
    return REPLY + json.dumps(reply)


def digest_line(csv: bytes) -> str:
    """What a harness built on kgit.measure prints right after writing its CSV (a plain pass)."""
    return DIGEST + hashlib.sha256(csv).hexdigest()


def written_digest(output: str) -> str | None:
    """The first digest a pass printed (a later line is not the harness's own)."""
    for line in output.splitlines():
        if line.startswith(DIGEST):
            return line[len(DIGEST) :].strip()
    return None


class DigestLines:
    """Every digest line of a pass's whole output, fed chunk by chunk as it is read: the
    output's kept tail is not enough, since a pass that floods its output after the harness
    printed its own line pushes that line out, and then prints one of its own."""

    MAX_LINE = 4096  # a digest line is short: a longer line is not one

    def __init__(self) -> None:
        self.digests: list[str] = []
        self._partial = b""

    def feed(self, chunk: bytes) -> None:
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        if len(self._partial) > self.MAX_LINE:
            self._partial = self._partial[: len(DIGEST)]  # enough to tell a digest line's start
        for line in lines:
            self._line(line)

    def close(self) -> list[str]:
        self._line(self._partial)
        self._partial = b""
        return self.digests

    def _line(self, line: bytes) -> None:
        text = line.decode(errors="replace").rstrip("\r")
        if text.startswith(DIGEST) and len(self.digests) < 16:
            self.digests.append(text[len(DIGEST) :].strip())


def changed_since_written(csv: bytes, digest: str | None) -> bool:
    """Whether CSV differs from what the harness said it wrote (no digest: a harness of its own,
    nothing to compare)."""
    return digest is not None and hashlib.sha256(csv).hexdigest() != digest


def out_of_memory_line(report: dict[str, Any]) -> str:
    return OUT_OF_MEMORY + json.dumps(report, sort_keys=True)


def out_of_memory_reports(output: str) -> dict[str, dict[str, Any]]:
    """The out-of-memory reports in a harness's OUTPUT, by shape label (the last of each)."""
    reports: dict[str, dict[str, Any]] = {}
    for line in output.splitlines():
        if not line.startswith(OUT_OF_MEMORY):
            continue
        try:
            report = json.loads(line[len(OUT_OF_MEMORY) :])
        except ValueError:
            continue
        if isinstance(report, dict) and isinstance(report.get("shape"), str):
            reports[report["shape"]] = report
    return reports


def parse_marker(line: str) -> tuple[str, dict[str, Any]] | None:
    """("held" | "ready" | "reply", payload) for a marker line, None for any other output."""
    for kind, prefix in (("held", HELD), ("ready", READY), ("reply", REPLY)):
        if line.startswith(prefix):
            try:
                payload = json.loads(line[len(prefix) :])
            except ValueError:
                return None
            return (kind, payload) if isinstance(payload, dict) else None
    return None


def block_request(
    request_id: int,
    summary_csv: str,
    shapes: str,
    block_ms: float,
    *,
    relocate: bool = False,
    columns: tuple[str, ...] = (),
) -> dict[str, Any]:
    request: dict[str, Any] = {
        "id": request_id,
        "cmd": "block",
        "summary_csv": summary_csv,
        "shapes": shapes,
        "block_ms": block_ms,
        "relocate": relocate,
    }
    if columns:
        request["columns"] = list(columns)
    return request
