"""The two sides of an A/B comparison, each a harness process that stays up (a resident harness,
kgit/records/protocol.py) or, for a harness that does not speak the protocol, one pass a turn.

Every side starts the same way: the harness's plain first pass on every shape, with
`KGIT_WORKER=1` in its environment. A resident harness then says it is ready and answers block requests;
a plain harness exits, and its pass is kept as the side's first measurement. A side's process
group is killed on every way out (close, error, Ctrl-C): a harness left behind keeps the GPU.
A SIGKILL of kgit is no way out it sees: the next measurement kills the side (kgit/engine/orphans.py).
"""

from __future__ import annotations

import json
import math
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from kgit.engine.campaign import Campaign
from kgit.engine.measuring.harness.passes import HarnessError, Measurement, measure, read_run
from kgit.engine.measuring.isolation.sealed import harness_world, world_facts
from kgit.engine.measuring.isolation.world import World
from kgit.engine.measuring.sides.holding import HELD_CPU_ALLOWANCE_S
from kgit.engine.measuring.sides.side_process import SideProcess
from kgit.engine.orphans import tether
from kgit.engine.user_commands import CommandResult, classify_harness, harness_command
from kgit.progress import Say, Voice, add_phase
from kgit.records.evidence import RESIDENT_MODE
from kgit.records.protocol import (
    FIRST_BLOCK_ENV,
    HOLD_ENV,
    WORKER_ENV,
    block_request,
    changed_since_written,
)
from kgit.records.schema import metric_inputs

# How long a block request may take before a resident harness is taken for hung: a block times tens of
# milliseconds; the first block of a shape also prepares its inputs and graph.
BLOCK_TIMEOUT_S = 300.0


@dataclass
class Side:
    """One side of the comparison: its first pass, then one measurement per `block` call."""

    mode: ClassVar[str] = "pass"
    campaign: Campaign
    name: str
    tree: Path
    first: Measurement
    frozen: tuple[str, ...] | None

    def block(
        self, shapes: list[dict[str, Any]], block_ms: float, say: Say, *, relocate: bool = False
    ) -> Measurement:
        """A plain harness: a whole pass on SHAPES (block_ms and relocate do not apply)."""
        return measure(
            self.campaign,
            shapes,
            self.frozen,
            Voice(say, echo=False),
            tree=self.tree,
            role=f" {self.name}",
        )

    def hold(self) -> None:
        """Keep still while the other side measures: a plain harness has no process between
        its passes."""

    def release(self) -> None:
        """Go on after being held."""

    def ask_exit(self) -> None:
        pass

    def close(self) -> None:
        pass


def close_sides(sides: list[Side]) -> None:
    """Close every side, all asked to exit first: their processes tear down (a CUDA context
    each) side by side, not one after the other."""
    for side in sides:
        side.ask_exit()
    for side in sides:
        side.close()


@dataclass
class ResidentSide(Side):
    mode: ClassVar[str] = RESIDENT_MODE
    process: SideProcess
    scratch: Path
    world: World
    requests: int = 0

    def block(
        self, shapes: list[dict[str, Any]], block_ms: float, say: Say, *, relocate: bool = False
    ) -> Measurement:
        self.requests += 1
        csv_path = self.scratch / f"block-{self.requests}.csv"
        shapes_path = self.scratch / f"shapes-{self.requests}.json"
        shapes_path.write_text(json.dumps(shapes))
        request = block_request(
            self.requests,
            str(csv_path),
            str(shapes_path),
            block_ms,
            relocate=relocate,
            columns=metric_inputs(self.campaign.manifest.primary_metric),
        )
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
                f"validation ERROR: harness {self.name} did not answer a block request within "
                f"{min(BLOCK_TIMEOUT_S, self.campaign.manifest.timeout_s):g} s",
                hint="its output is below; a harness that hangs as a resident harness can be run pass "
                "by pass by ignoring KGIT_WORKER",
                details=self.process.text()[-4000:],
            ) from None
        if reply is None:
            raise self._died("in the middle of a block request")
        if reply.get("id") != self.requests or _exit_code(reply) is None:
            self.process.kill()
            raise HarnessError(
                f"validation ERROR: harness {self.name} answered block request "
                f"{self.requests} with {reply!r}",
                hint='a reply is {"id": <the request\'s id>, "exit": 0 or 1} '
                "(kgit/records/protocol.py)",
                details=self.process.text()[-4000:],
            )
        csv = csv_path.read_bytes() if csv_path.is_file() else None
        if csv is not None and changed_since_written(csv, reply.get("sha256")):
            self.process.kill()
            raise HarnessError(
                f"validation ERROR: harness {self.name}'s CSV changed after it was written "
                "(its digest in the reply no longer matches)",
                hint="something in the harness's process rewrites its figures",
                details=self.process.text()[-4000:],
            )
        result = CommandResult(_exit_code(reply), time.monotonic() - start, self.process.text())
        run = classify_harness(result, csv, BLOCK_TIMEOUT_S)
        labels = [s["label"] for s in shapes]
        return read_run(self.campaign, run, labels, self.frozen, digest=False, side=self.name)

    def _died(self, when: str) -> HarnessError:
        self.process.kill()
        return HarnessError(
            f"validation ERROR: harness {self.name} exited {when} "
            f"(exit {self.process.proc.returncode})",
            hint="see its output; nothing of this validation was recorded as a verdict",
            details=self.process.text()[-4000:],
        )

    def hold(self) -> None:
        self.process.hold()

    def release(self) -> None:
        used = self.process.release()
        if used > HELD_CPU_ALLOWANCE_S:
            self.process.kill()
            ran = "kept forking" if math.isinf(used) else f"used {used * 1000:.0f} ms of CPU"
            raise HarnessError(
                f"validation ERROR: the {self.name} side's processes {ran} while they were "
                "stopped for the other side's block",
                hint="a process of its harness ran while the side was held (one stop covers "
                "the side's process group, its descendants and the orphans kgit adopted): "
                "nothing was judged",
                details=self.process.text()[-4000:],
            )

    def ask_exit(self) -> None:
        self.process.ask_exit()

    def close(self) -> None:
        self.process.close()
        shutil.rmtree(self.scratch, ignore_errors=True)
        self.world.close()


def start_side(
    campaign: Campaign,
    name: str,
    tree: Path,
    shapes: list[dict[str, Any]],
    frozen: tuple[str, ...] | None,
    voice: Voice,
    *,
    first_block_ms: float | None = None,
) -> Side:
    """Start the harness in TREE on SHAPES: its first pass, and a resident harness when it speaks the
    protocol. The caller closes the side (`try/finally`). FIRST_BLOCK_MS asks a resident harness for a
    first pass of blocks (the reference side: its plain timings would not be used)."""
    return launch_side(
        campaign, name, tree, shapes, frozen, echo=voice.echo, first_block_ms=first_block_ms
    ).start(voice.say)


@dataclass
class Launch:
    """A harness process started and, when HELD, waiting for `start` before its first pass
    (kgit/records/protocol.py): its process start and imports overlap the other side's work.
    `start` runs the first pass and returns the side; `kill` gives it up."""

    campaign: Campaign
    name: str
    tree: Path
    shapes: list[dict[str, Any]]
    frozen: tuple[str, ...] | None
    process: SideProcess
    scratch: Path
    held: bool
    world: World

    def start(self, say: Say) -> Side:
        campaign, name, process = self.campaign, self.name, self.process
        timeout_s = campaign.manifest.timeout_s
        say(f"harness {name}: first pass on {len(self.shapes)} shape(s), as a resident harness")
        # A held process's time so far was its start-up, beside the other side's first pass.
        started = time.monotonic() if self.held else process.started
        try:
            ready: dict[str, Any] | None = None
            try:
                ready = self._ready(timeout_s)
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
                            f"validation ERROR: the {name} harness said it was ready with "
                            f"{ready!r}",
                            hint='a ready line carries {"protocol": 1, "exit": 0 or 1} '
                            "(kgit/records/protocol.py)",
                            details=process.text()[-4000:],
                        )
            seconds = time.monotonic() - started
            _count_phases(process, ready, seconds, held=self.held)
            csv_path = self.scratch / "first.csv"
            csv = csv_path.read_bytes() if csv_path.is_file() else None
            digests = tuple(process.digests.digests)  # of the first pass, up to now
            run = classify_harness(
                CommandResult(returncode, seconds, process.text(), digests), csv, timeout_s
            )
            labels = [s["label"] for s in self.shapes]
            facts = world_facts(self.world)
            first = read_run(campaign, run, labels, self.frozen, side=name, world=facts)
        except BaseException:
            self.kill()
            raise
        if returncode is not None and ready is not None:
            say(f"harness {name}: resident, ready after {seconds:.1f} s")
            return ResidentSide(
                campaign, name, self.tree, first, self.frozen, process, self.scratch, self.world
            )
        say(f"harness {name}: not resident: pass by pass ({seconds:.1f} s a pass)")
        self.kill()
        return Side(campaign, name, self.tree, first, self.frozen)

    def _ready(self, timeout_s: float) -> dict[str, Any] | None:
        # A held harness says so first and waits for `start`. One that does not know the hold
        # has run its pass already (beside the other side's) and says it is ready: no `start`
        # then, which it would take for an unknown request and exit.
        kinds = ("held", "ready") if self.held else ("ready",)
        got = self.process.wait_any(kinds, timeout_s)
        if got is not None and got[0] == "held":
            self.process.send({"cmd": "start"})  # an exit right after is read below
            got = self.process.wait_any(("ready",), timeout_s)
        return None if got is None else got[1]

    def kill(self) -> None:
        self.process.kill()
        shutil.rmtree(self.scratch, ignore_errors=True)
        self.world.close()


def launch_side(
    campaign: Campaign,
    name: str,
    tree: Path,
    shapes: list[dict[str, Any]],
    frozen: tuple[str, ...] | None,
    *,
    echo: bool,
    first_block_ms: float | None = None,
    hold: bool = False,
) -> Launch:
    """Start the harness process of side NAME; with HOLD it imports and waits (a resident harness) until
    `Launch.start`. A harness that does not know the hold runs its pass at once: hold only a
    harness known to be resident."""
    extra = {WORKER_ENV: "1"}
    if first_block_ms is not None:
        extra[FIRST_BLOCK_ENV] = f"{first_block_ms:g}"
    if hold:
        extra[HOLD_ENV] = "1"
    world = harness_world(campaign, tree, extra)  # its own: nothing of the other side's
    scratch = world.root / "tmp"
    csv_path, shapes_path = scratch / "first.csv", scratch / "shapes.json"
    shapes_path.write_text(json.dumps(shapes, indent=1))
    command = harness_command(campaign.manifest.quick_command, csv_path, shapes_path)
    # Tethered: a resident harness exits when kgit's end closes its stdin, but only after its pass or block.
    env = tether(world.env, campaign.repo.common_dir)
    try:
        process = SideProcess(command, tree, env, echo)
    except BaseException:
        world.close()
        raise
    return Launch(campaign, name, tree, shapes, frozen, process, scratch, hold, world)


def _count_phases(
    process: SideProcess, ready: dict[str, Any] | None, seconds: float, *, held: bool
) -> None:
    """A side's start, as the command's phases: its process start and imports (beside the
    other side's work when it was held), its first shape (compiling, capturing, checking) and
    the other shapes, as a resident harness on kgit.measure reports them; else its first pass."""
    phases = ready.get("phases") if ready else None
    if not isinstance(phases, dict):
        add_phase("harness start and first pass", seconds)
        return
    try:
        start_up = float(phases["entered_at"]) - process.started_wall
        first, others = float(phases["first_shape_s"]), float(phases["other_shapes_s"])
    except (KeyError, TypeError, ValueError):
        add_phase("harness start and first pass", seconds)
        return
    add_phase("harness start-up" + (", beside the other side" if held else ""), start_up)
    add_phase("first shape (compile, capture, checks)", first)
    add_phase("other shapes", others)


def _exit_code(payload: dict[str, Any]) -> int | None:
    """The `exit` of a ready or reply line: 0 or 1 (the contract's), else None."""
    value = payload.get("exit")
    return value if type(value) is int and value in (0, 1) else None
