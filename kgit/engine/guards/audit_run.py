"""The gate audit's runs: what the gate and the target shapes launch, then the mutants, side by
side in kgit's audit trees, then the survivors checked against the harness's own reference.

1. The control (the gate on the unmutated kernel) and one harness pass over the target shapes
   run at once, each with kgit's launch recorder (kgit/engine/measuring/harness/launches.py): which kernels each
   launches (kgit/judge/reach.py).
2. Mutants in order of reach (kgit/judge/mutants.py `draw`): a mutant of a kernel that neither
   launches is not run (UNREACHED); one of a kernel the target shapes launch and the gate never
   does survives without a run (no test can see it). The rest run the gate, several trees at
   once where the gate is CPU-bound (`parallel_trees`).
3. A survivor in code the target shapes run is run through the harness: when the harness's own
   reference check passes it on every target shape, it is below the gate's tolerance.

The quick audit (at baseline) stops at the first survivor of each kernel and within its budget
(two gate runs of wall time); the full one (`kgit gate audit`) judges every drawn mutant.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kgit.engine.campaign import Campaign
from kgit.engine.guards.audit_tree import gate_env, mutant_env, reset, write_file
from kgit.engine.measuring.harness.launches import read_launches, recording
from kgit.engine.user_commands import CommandResult, Started, harness_command, start_command
from kgit.judge.mutants import TAIL_KINDS, Mutant
from kgit.judge.reach import GATE, SHAPES, UNREACHED, Launches, Reach
from kgit.judge.tolerance import FACTOR, FLOOR, below_tolerance
from kgit.progress import Say
from kgit.records.gate_audit import (
    CAUGHT,
    EQUIVALENT,
    SURVIVED,
    TIMED_OUT,
    UNREACHED_WORDS,
    MutantResult,
)

POLL_S = 0.05
NOT_CHECKED = "not checked by the gate"  # a survivor without a run: no test can see it
PYTEST_NO_TESTS = 5  # pytest's exit status when no test was collected or all were deselected
_PYTEST_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.M)


@dataclass
class Budget:
    """The audit's deadline (time.monotonic()); None: no limit (a full audit)."""

    deadline: float | None = None

    def left(self, wanted: float) -> float:
        """WANTED seconds, or what is left before the deadline when that is less."""
        return wanted if self.deadline is None else min(wanted, self.deadline - time.monotonic())

    @property
    def spent(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline


@dataclass
class Observed:
    """The control's result and what the gate and the target shapes launched (None: not
    recorded, e.g. a harness that could not run or a kernel with no Triton function)."""

    control: CommandResult
    gate: Launches | None
    shapes: Launches | None
    notes: list[str] = field(default_factory=list)


def observe(
    campaign: Campaign,
    tree: Path,
    *,
    record: bool,
    trace: list[Path],
    meanwhile: Callable[[], None],
) -> Observed:
    """The control gate and, when RECORD, a harness pass over the target shapes, at once, both
    recorded (the lines of TRACE too); MEANWHILE runs while they do (the other audit trees are
    checked out then)."""
    limit, tether = campaign.manifest.timeout_s, campaign.repo.common_dir
    with tempfile.TemporaryDirectory(prefix="kgit-audit-") as scratch:
        folder = Path(scratch)
        gate_log, shapes_log = folder / "gate.jsonl", folder / "shapes.jsonl"
        env = gate_env(campaign, tree)
        env = recording(env, gate_log, trace) if record else env
        gate = start_command(campaign.manifest.test_command, tree, tether=tether, env=env)
        harness: Started | None = None
        try:
            if record:
                harness = _start_harness(campaign, tree, folder, shapes_log, trace)
            meanwhile()
            control = gate.wait(limit)
            ran = harness.wait(limit) if harness else None
        finally:
            for started in (gate, harness):
                if started is not None and started.proc.poll() is None:
                    started.kill()
        if not record:
            return Observed(control, None, None)
        notes = []
        shapes = read_launches(shapes_log, tree)
        if ran is None or ran.returncode not in (0, 1):
            why = (
                "timed out" if ran is None or ran.returncode is None else f"exited {ran.returncode}"
            )
            notes.append(f"the harness's pass over the target shapes {why}: what they launch is "
                         "not known")  # fmt: skip
            shapes = Launches()
        return Observed(control, read_launches(gate_log, tree), shapes, notes)


def _start_harness(
    campaign: Campaign, tree: Path, folder: Path, log: Path, trace: list[Path]
) -> Started:
    """One harness pass over the target shapes, its figures thrown away. It takes no device
    lock: like the gate's own tests, it measures nothing that is kept."""
    shapes = folder / "shapes.json"
    shapes.write_text(json.dumps(campaign.manifest.target_shapes))
    command = harness_command(campaign.manifest.quick_command, folder / "summary.csv", shapes)
    env = recording(gate_env(campaign, tree), log, trace)
    return start_command(command, tree, tether=campaign.repo.common_dir, env=env)


@dataclass
class _Running:
    order: int  # its place in the draw (as taken from the queue)
    mutant: Mutant
    tree: Path
    started: Started
    ends: float  # when it is killed: its hang allowance, or the budget's deadline
    hangs: bool  # whether ENDS is the hang allowance (a kill then catches the mutant)


Queue = list[tuple[Mutant, Reach | None]]


@dataclass
class Control:
    """The control gate, run beside the first mutants (the quick audit): its tree is the
    first, taken by no mutant until it ends. SETTLE(result) gives the queue again in the
    order the gate's launches make (None: the control failed, the mutants are void)."""

    started: Started
    ends: float
    settle: Callable[[CommandResult, Queue], Queue | None]
    result: CommandResult | None = None


@dataclass
class Pool:
    """Mutants run side by side, one per tree; `results` in the draw's order (as taken)."""

    campaign: Campaign
    trees: list[Path]
    sources: dict[str, bytes]
    allowed: float  # seconds before a gate run counts as a hang
    budget: Budget
    quick: bool
    say: Say
    judged: list[tuple[int, MutantResult]] = field(default_factory=list)
    # Drawn and left unjudged: after a survivor in their kernel, stopped by the deadline, no
    # test ran, or never started. A set: the quick audit's queue is drawn again once the
    # control's record is read, and a mutant counts once however often it was queued.
    unrun: set[Mutant] = field(default_factory=set)
    survived_in: set[str] = field(default_factory=set)  # kernels with a survivor (quick)
    void: bool = False  # the control failed: no result stands
    taken: set[Mutant] = field(default_factory=set)  # drawn from the queue: run, judged, skipped
    # No mutant starts with less time left than this (the quick audit: half the control's
    # time): one the deadline would stop only slows those running beside it.
    least_s: float = 0.0
    # The tests a mutant's gate run leaves out (kgit/judge/reach.py unrelated_tests): the
    # control's record, once known, is the one collection every mutant's run reuses.
    leave_out: Callable[[Mutant], list[str]] = lambda mutant: []
    total: int = 0
    live: list[Started] = field(default_factory=list)  # every gate run this pool started

    def run(self, queue: Queue, control: Control | None = None) -> None:
        queue = list(queue)
        self.total = len(queue)
        running: list[_Running] = []
        free = list(self.trees[1:] if control else self.trees)
        try:
            while (queue or running or control) and not self.void:
                if control and self._control_ended(control, queue):
                    free.insert(0, self.trees[0])
                    control = None
                    continue
                self._start_some(queue, free, running)
                for job in list(running):
                    result = job.started.poll()
                    if result is None and time.monotonic() < job.ends:
                        continue
                    running.remove(job)
                    self._finish(job, result or job.started.kill())
                    free.append(job.tree)
                time.sleep(POLL_S if running or control else 0)
        finally:  # an interrupt (or a void control) leaves no gate running, no mutant in place
            if control is not None and control.result is None:
                control.started.kill()
            for job in running:
                job.started.kill()
                self._restore(job)
            # One interrupted between its start and its place in RUNNING is killed here too.
            for started in self.live:
                if started.proc.poll() is None:
                    started.kill()

    @property
    def not_run(self) -> int:
        return len(self.unrun)

    def _control_ended(self, control: Control, queue: Queue) -> bool:
        result = control.started.poll()
        if result is None and time.monotonic() < control.ends:
            return False
        control.result = result or control.started.kill()
        settled = control.settle(control.result, queue)
        if settled is None:
            self.void = True
            return True
        queue[:] = settled
        # What the first draw left unstarted is drawn again (SETTLED) or no longer drawn.
        self.unrun &= self.taken
        self.total = len(self.taken) + len(queue)
        return True

    def _start_some(self, queue: Queue, free: list[Path], running: list[_Running]) -> None:
        while queue and free and self.budget.left(math.inf) > self.least_s:
            mutant, reach = queue.pop(0)
            self.taken.add(mutant)
            order = len(self.taken)
            if self.quick and _kernel(mutant) in self.survived_in:
                self.unrun.add(mutant)
                continue
            judged = _judged_unrun(mutant, reach)
            if judged is not None:
                self._keep(order, judged)
                continue
            running.append(self._start(order, mutant, free.pop(0)))
        if queue and self.budget.left(math.inf) <= self.least_s:
            self.unrun.update(mutant for mutant, _ in queue)
            queue.clear()

    @property
    def results(self) -> list[MutantResult]:
        return [result for _, result in sorted(self.judged, key=lambda pair: pair[0])]

    def _start(self, order: int, mutant: Mutant, tree: Path) -> _Running:
        write_file(tree, mutant.path, mutant.apply(self.sources[mutant.path]))
        env = mutant_env(self.campaign, tree, self.leave_out(mutant))
        try:
            started = start_command(self.campaign.manifest.test_command, tree,
                                    tether=self.campaign.repo.common_dir, env=env)  # fmt: skip
            self.live.append(started)
        except BaseException:
            write_file(tree, mutant.path, self.sources[mutant.path])
            raise
        ends = self.budget.left(self.allowed)
        return _Running(order, mutant, tree, started, time.monotonic() + ends,
                        ends >= self.allowed)  # fmt: skip

    def _restore(self, job: _Running) -> None:
        write_file(job.tree, job.mutant.path, self.sources[job.mutant.path])
        reset(job.tree)

    def _finish(self, job: _Running, result: CommandResult) -> None:
        self._restore(job)
        if result.returncode is None and not job.hangs:
            self.unrun.add(job.mutant)  # stopped by the budget's deadline, not judged
            self.say(f"gate audit: {job.mutant.where} {job.mutant.description}: stopped, out "
                     "of the audit's time")  # fmt: skip
            return
        if result.returncode == PYTEST_NO_TESTS:
            self.unrun.add(job.mutant)  # every test left out or deselected: judged nothing
            self.say(f"gate audit: {job.mutant.where} {job.mutant.description}: no test ran")
            return
        outcome = SURVIVED if result.ok else TIMED_OUT if result.returncode is None else CAUGHT
        self._keep(job.order, _result(job.mutant, outcome, result))

    def _keep(self, order: int, result: MutantResult) -> None:
        self.judged.append((order, result))
        if result.outcome == SURVIVED and result.function:
            self.survived_in.add(f"{result.where.rsplit(':', 1)[0]}:{result.function}")
        shown = result.outcome.upper() if result.outcome == SURVIVED else result.outcome
        by = f" by {result.caught_by}" if result.outcome == CAUGHT and result.caught_by else ""
        note = f" ({result.note})" if result.note else f" ({result.seconds:.1f} s)"
        self.say(f"gate audit: [{len(self.judged)}/{self.total}] {result.where} {result.kind} "
                 f"{result.mutation}: {shown}{by}{note}")  # fmt: skip


def _kernel(mutant: Mutant) -> str:
    return f"{mutant.path}:{mutant.function}"


def rejudged(result: MutantResult, mutant: Mutant, reach: Reach | None) -> MutantResult:
    """RESULT again once the gate's launches are known: a survivor of a gate run that never
    launched its kernel (the quick audit's first mutants run before the control's record is
    read) is judged as if it had not run."""
    if result.outcome != SURVIVED or result.note:
        return result
    return _judged_unrun(mutant, reach) or result


def _judged_unrun(mutant: Mutant, reach: Reach | None) -> MutantResult | None:
    """The mutants whose gate run would tell nothing: in a kernel nobody launches (any gate
    passes it), or in one the target shapes launch and the gate never does (no test sees it)."""
    if reach is None:
        return None
    if reach.tier == UNREACHED:
        note = f"{UNREACHED_WORDS}: {reach.unrun}"
        return _result(mutant, UNREACHED, None, note=note, reach=reach.tier)
    if reach.tier == SHAPES and reach.gate is False:
        note = (
            f"{NOT_CHECKED}: the target shapes run line {reach.where}, the gate never does"
            if reach.by_line
            else f"{NOT_CHECKED}: the gate never launches {reach.function}, which the target "
            "shapes do"
        )
        return _result(mutant, SURVIVED, None, note=note, reach=reach.tier)
    if reach.gate is False and reach.shapes is None:
        # Any gate run passes it, so it says nothing of the gate: not a survivor. Whether it is
        # a hole hangs on the target shapes, which this audit could not record.
        what = f"line {reach.where}" if reach.by_line else f"{reach.function} ({reach.where})"
        note = (f"not run: the gate never runs {what}; whether the target shapes do was not "
                "recorded (kgit gate audit records it)")  # fmt: skip
        return _result(mutant, UNREACHED, None, note=note, reach=reach.tier)
    return None


def _result(
    mutant: Mutant,
    outcome: str,
    ran: CommandResult | None,
    *,
    note: str | None = None,
    reach: str | None = None,
) -> MutantResult:
    return MutantResult(
        where=mutant.where,
        kind=mutant.kind,
        mutation=mutant.description,
        outcome=outcome,
        seconds=round(ran.seconds, 3) if ran else 0.0,
        caught_by=caught_by(ran) if ran is not None and outcome == CAUGHT else None,
        function=mutant.function,
        reach=reach,
        note=note,
    )


def check_below_tolerance(
    campaign: Campaign,
    tree: Path,
    commit: str,
    chosen: dict[str, Mutant],
    results: list[MutantResult],
    budget: Budget,
    say: Say,
    *,
    tails: bool,
    least_s: float = 1.0,
) -> None:
    """Each survivor the gate ran, in code the target shapes run, through the harness on the
    target shapes, against the unmutated kernel's CSV (kgit/judge/tolerance.py): within its
    tolerance, it is EQUIVALENT on these shapes. Without TAILS (no target shape has one: kgit/judge/tails.py)
    a mask, bound, denominator or `other=` mutant is left a survivor: the harness would see
    nothing of it (`/ N` -> `/ BLOCK_N` is exact where N is a power of two). The unmutated
    kernel's CSV is the one recorded at COMMIT (the baseline's), else a harness pass of the
    unmutated tree, run when first needed. No pass starts with LEAST_S seconds or less left
    before the budget's deadline (the quick audit: a gate run's time): one the deadline kills
    judges nothing and only overruns the audit."""
    reference = campaign.read_bench(commit)
    for result in results:
        mutant = chosen.get(f"{result.where} {result.mutation}")
        if result.outcome != SURVIVED or result.note or result.reach != SHAPES or not mutant:
            continue
        if not tails and mutant.kind in TAIL_KINDS:
            result.note = "not checked against the harness: no target shape has a tail to show it"
            continue
        left = budget.left(campaign.manifest.timeout_s)
        if left <= max(1.0, least_s):
            result.note = "not checked against the harness: out of the audit's time"
            continue
        if reference is None:
            reference = _harness_csv(campaign, tree, left)
            left = budget.left(campaign.manifest.timeout_s)
        source = (tree / mutant.path).read_bytes()
        write_file(tree, mutant.path, mutant.apply(source))
        try:
            table = _harness_csv(campaign, tree, left)
        finally:
            write_file(tree, mutant.path, source)
            reset(tree)
        below = below_tolerance(table, reference) if table is not None else None
        if below:
            result.outcome = EQUIVALENT
            result.note = ("the harness's reference check passes it on every target shape, "
                           f"changed by at most {FLOOR:g} or {FACTOR:g}x the kernel's own error")  # fmt: skip
        elif below is False:
            result.note = "the harness's reference check sees it: a hole in the gate"
        else:
            result.note = "not told from a hole: the harness gave no SNR to compare"
        said = f"{EQUIVALENT}: {result.note}" if result.outcome == EQUIVALENT else result.note
        say(f"gate audit: {result.where} {result.mutation}: {said}")


def _harness_csv(campaign: Campaign, tree: Path, timeout_s: float) -> bytes | None:
    """The harness's CSV over the target shapes (exit 0 or 1), None when it did not finish."""
    with tempfile.TemporaryDirectory(prefix="kgit-audit-") as scratch:
        folder = Path(scratch)
        shapes, table = folder / "shapes.json", folder / "summary.csv"
        shapes.write_text(json.dumps(campaign.manifest.target_shapes))
        command = harness_command(campaign.manifest.quick_command, table, shapes)
        started = start_command(
            command, tree, tether=campaign.repo.common_dir, env=gate_env(campaign, tree)
        )
        ran = started.wait(timeout_s)
        done = ran.returncode in (0, 1) and table.is_file()
        return table.read_bytes() if done else None


def caught_by(result: CommandResult) -> str:
    """The first test pytest names as failed, else how the gate ended (a crash of the kernel,
    an out-of-bounds access that killed the process, shows as its exit status)."""
    failed = _PYTEST_FAILED.search(result.tail)
    if failed:
        return failed.group(1)
    code = result.returncode or 0
    signals = {128 + 6: "SIGABRT", 128 + 11: "SIGSEGV", 128 + 7: "SIGBUS", -6: "SIGABRT",
               -11: "SIGSEGV", -7: "SIGBUS"}  # fmt: skip
    return f"exit {code}" + (f" ({signals[code]})" if code in signals else "")


def tier_of(reach: Reach | None) -> int:
    """The draw's order (kgit/judge/mutants.py draw): shapes, gate, not known, unreached."""
    if reach is None:
        return 2
    if reach.gate is False and reach.shapes is None:
        return 3  # judged without a run (`_judged_unrun`): after every mutant a run can judge
    return {SHAPES: 0, GATE: 1, UNREACHED: 3}.get(reach.tier, 2)
