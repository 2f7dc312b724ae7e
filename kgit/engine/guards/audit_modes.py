"""The gate audit's two ways through its runs (kgit/engine/guards/audit_run.py does each run).

- full (`kgit gate audit`): the control beside a harness pass over the target shapes, both
  recorded; then canaries, then every drawn mutant; no time limit but each mutant's.
- quick (the baseline's): at most QUICK_GATE_RUNS gate runs of wall time. What the target
  shapes launch comes from the baseline's own harness pass (recorded there, no extra run);
  the control runs beside the first mutants (a failed control voids them); the first survivor
  of a kernel ends that kernel's mutants; whatever the deadline stops is not judged.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from kgit.engine.campaign import Campaign
from kgit.engine.guards.audit_run import (
    Budget,
    Control,
    Observed,
    Pool,
    Queue,
    check_below_tolerance,
    observe,
    rejudged,
    tier_of,
)
from kgit.engine.guards.audit_tree import extra_tree, gate_env, gate_with, parallel_trees
from kgit.engine.measuring.harness.launches import baseline_log, read_launches, recording
from kgit.engine.user_commands import CommandResult, start_command
from kgit.judge.audit_coverage import coverage, covered_words
from kgit.judge.mutants import CPP_SUFFIXES, PYTHON_SUFFIXES, Mutant, draw
from kgit.judge.mutants_python import KernelFunction
from kgit.judge.reach import Launches, Reach, ReachMap, describe, describe_lines, unrelated_tests
from kgit.progress import Say, Voice
from kgit.records.gate_audit import (
    CAUGHT,
    EQUIVALENT,
    SURVIVED,
    TIMED_OUT,
    UNREACHED,
    GateAudit,
    KernelFigures,
    MutantResult,
)

# A mutant may take this many times the unmutated gate's time, plus a margin, before it counts
# as a hang (caught): a mutant that loops forever must not stall the audit for timeout_s.
TIMEOUT_FACTOR, TIMEOUT_MARGIN_S, TIMEOUT_FLOOR_S = 3.0, 10.0, 30.0
# The baseline's (quick) audit may take this many gate runs of wall time in all, and at least
# QUICK_FLOOR_S: a gate of a fraction of a second would leave no time for git's checkout of
# kgit's audit trees, which costs the same whatever the gate. RESERVE: what the audit keeps back
# from its deadline for putting its trees back and recording (git commands, a fraction of a s).
QUICK_GATE_RUNS, QUICK_FLOOR_S, RESERVE_S = 2.0, 3.0, 0.5


@dataclass
class Plan:
    """What an audit will mutate, decided from the commit's files alone (no process run)."""

    commit: str
    sources: dict[str, bytes] = field(default_factory=dict)  # path -> bytes at the commit
    mutants: dict[str, list[Mutant]] = field(default_factory=dict)  # every site, per path
    functions: dict[str, list[KernelFunction]] = field(default_factory=dict)  # per path
    skipped: list[str] = field(default_factory=list)
    tail_warning: str | None = None

    @property
    def sites(self) -> int:
        return sum(map(len, self.mutants.values()))


@dataclass
class AuditRun:
    """One audit's runs, in kgit's trees (TREES[0] checked out; more added side by side)."""

    campaign: Campaign
    plan: Plan
    trees: list[Path]
    audit: GateAudit
    voice: Voice
    count: int
    timeout_s: float | None
    started: float

    @property
    def say(self) -> Say:
        return self.voice.say

    @property
    def kernels(self) -> bool:
        """Whether kernel_source has Python code, whose Triton kernels' launches and lines
        run are recorded (C++ sources are not)."""
        return bool(self.plan.functions)

    def traced(self, tree: Path) -> list[Path]:
        """The Python kernel files of TREE, whose lines the recorder traces."""
        return [tree / path for path in self.plan.functions]

    def _map(self, shapes: Launches | None, gate: Launches | None) -> ReachMap:
        return ReachMap(self.plan.functions, self.plan.sources, shapes, gate)

    def full(self) -> CommandResult:
        """Control and launches, canaries, every drawn mutant, survivors against the harness;
        returns the control's result."""
        observed = observe(self.campaign, self.trees[0], record=self.kernels,
                           trace=self.traced(self.trees[0]), meanwhile=self._more_trees)  # fmt: skip
        if not self._control_passed(observed.control):
            return observed.control
        reach = self._reach(observed)
        allowed = self._allowed(observed.control)
        self._canaries(observed, allowed, Budget())
        queue = self._queue(reach, [m for sites in self.plan.mutants.values() for m in sites])
        pool = Pool(self.campaign, self.trees, self.plan.sources, allowed, Budget(), False,
                    self.say)  # fmt: skip
        pool.leave_out = self._leave_out(observed)
        pool.run(queue[: self.count])
        self._finish(pool, reach, Budget())
        return observed.control

    def quick(self) -> CommandResult:
        """The baseline's audit, within QUICK_GATE_RUNS gate runs of wall time."""
        campaign, tree = self.campaign, self.trees[0]
        budget = self._quick_budget()
        shapes = read_launches(baseline_log(campaign), tree) if self.kernels else None
        notes = []
        if self.kernels and (shapes is None or not (shapes.recorded or shapes.traced)):
            notes.append("what the target shapes run was not recorded by the baseline's "
                         "harness pass (a harness not built on kgit.measure?); kgit gate audit "
                         "records it")  # fmt: skip
            shapes = None
        with tempfile.TemporaryDirectory(prefix="kgit-audit-") as scratch:
            log = Path(scratch) / "gate.jsonl"
            env = (
                # The control runs beside the first mutants within two gate runs of time: its
                # lines are traced only where that is cheap (sys.monitoring, Python 3.12+).
                recording(gate_env(campaign, tree), log, self.traced(tree), cheap=True)
                if self.kernels
                else gate_env(campaign, tree)
            )
            started = start_command(campaign.manifest.test_command, tree,
                                    tether=campaign.repo.common_dir, env=env)  # fmt: skip
            try:
                self._more_trees()
            except BaseException:  # a failed checkout (or an interrupt) leaves no gate running
                started.kill()
                raise
            first = self._queue(self._map(shapes, None), self._every())
            settled: dict[str, Observed] = {}

            def settle(result: CommandResult, queue: Queue) -> Queue | None:
                """The gate's launches known: the mutants not yet taken, drawn again."""
                gate = read_launches(log, tree) if self.kernels else None
                settled["observed"] = Observed(result, gate, shapes, notes)
                if not self._control_passed(result):
                    return None
                pool.allowed, pool.least_s = self._allowed(result), result.seconds / 2
                pool.leave_out = self._leave_out(settled["observed"])
                # The whole draw again, less what was taken: the kinds go on in turn.
                again = self._queue(self._reach(settled["observed"]), self._every())
                left = [(m, r) for m, r in again if m not in pool.taken]
                return left[: max(0, self.count - len(pool.taken))]

            allowed = self.timeout_s or campaign.manifest.timeout_s
            pool = Pool(campaign, self.trees, self.plan.sources, allowed, budget, True, self.say)
            ends = time.monotonic() + campaign.manifest.timeout_s
            pool.run(first[: self.count], Control(started, ends, settle))
        observed = settled["observed"]
        if pool.void:
            return observed.control
        self._canaries(observed, self._allowed(observed.control), budget)
        self._finish(pool, self._map(observed.shapes, observed.gate), budget)
        return observed.control

    def _leave_out(self, observed: Observed) -> Callable[[Mutant], list[str]]:
        def leave_out(mutant: Mutant) -> list[str]:
            if not mutant.function:
                return []
            return unrelated_tests(self.plan.functions, observed.gate, mutant.path,
                                   mutant.function)  # fmt: skip

        return leave_out

    def _every(self) -> list[Mutant]:
        return [m for sites in self.plan.mutants.values() for m in sites]

    def _queue(self, reach: ReachMap, mutants: list[Mutant]) -> Queue:
        """MUTANTS in the draw's order for REACH (all of them: the count is cut by the caller)."""
        chosen = draw(mutants, len(mutants), lambda m: tier_of(reach.of(m)))
        return [(m, reach.of(m)) for m in chosen]

    def _control_passed(self, control: CommandResult) -> bool:
        self.audit.control_s = round(control.seconds, 3)
        if control.ok:
            return True
        why = "timed out" if control.returncode is None else f"exited {control.returncode}"
        self.audit.error = (
            f"gate audit: the gate fails on the unmutated kernel in a clean checkout of "
            f"{self.plan.commit[:10]} (it {why} after {control.seconds:.1f} s), so no mutant can "
            "be judged"
        )
        return False

    def _reach(self, observed: Observed) -> ReachMap:
        reach = self._map(observed.shapes, observed.gate)
        lines = describe_lines(self._every(), reach)
        self.audit.reach = [*observed.notes, *describe(reach.kernels), *lines]
        for line in self.audit.reach:
            self.say(f"gate audit: {line}")
        return reach

    def _allowed(self, control: CommandResult) -> float:
        limit = self.campaign.manifest.timeout_s
        allowed = self.timeout_s or min(limit, max(TIMEOUT_FLOOR_S, TIMEOUT_FACTOR *
                                                   control.seconds + TIMEOUT_MARGIN_S))  # fmt: skip
        self.audit.timeout_s = round(allowed, 1)
        return allowed

    def _quick_budget(self) -> Budget:
        """QUICK_GATE_RUNS times the gate's time in the baseline's own run of it (recorded just
        before), less RESERVE_S for the audit's own ending."""
        note = self.campaign.read_gate(self.campaign.repo.tree_of(self.plan.commit))
        gate_s = note.seconds if note and note.passed else self.campaign.manifest.timeout_s / 2
        self.audit.budget_s = round(max(QUICK_FLOOR_S, QUICK_GATE_RUNS * gate_s), 3)
        self.say(f"gate audit: quick, {self.audit.budget_s:.1f} s in all (two runs of the gate, "
                 f"which took {gate_s:.1f} s at baseline)")  # fmt: skip
        return Budget(self.started + self.audit.budget_s - RESERVE_S)

    def _more_trees(self) -> None:
        """The other trees mutants run in, checked out while the control runs."""
        wanted = min(parallel_trees(self.campaign), self.plan.sites)
        for index in range(2, wanted + 1):
            tree = extra_tree(self.campaign, self.plan.commit, index, self.voice)
            self.trees.append(tree)

    def _canaries(self, observed: Observed, allowed: float, budget: Budget) -> None:
        """A file the gate launched a kernel of, or ran a traced line of, is loaded from the
        tree: its canary would only confirm it. The others get one (a C++ source, a Python
        file whose lines were not traced)."""
        gate = observed.gate
        launched = {path for path, _ in gate.kernels} if gate else set()
        launched |= {path for path in gate.traced if gate.lines.get(path)} if gate else set()
        for path in list(self.plan.mutants):
            if path in launched or budget.spent:
                continue
            source = self.plan.sources[path]
            if _canary_passes(self.campaign, self.trees[0], path, source, allowed, self.say):
                self.audit.unexercised.append(path)
                del self.plan.mutants[path]

    def _finish(self, pool: Pool, reach: ReachMap, budget: Budget) -> None:
        """Results (less those of files the gate never loads), survivors against the
        harness, the per-kernel figures, what the judged mutants covered."""
        drawn = {f"{m.where} {m.description}": m for m in self._every()}
        never = set(self.audit.unexercised)
        self.audit.mutants = []
        for result in pool.results:
            path = result.where.rsplit(":", 1)[0]
            mutant = drawn.get(f"{result.where} {result.mutation}")
            found = reach.of(mutant) if mutant is not None else None
            if path in never:
                continue
            if mutant is not None:
                result = rejudged(result, mutant, found)
            result.reach = result.reach or (found.tier if found else None)
            self.audit.mutants.append(result)
        self.audit.not_run = pool.not_run
        self.audit.drawn = len(self.audit.mutants) + pool.not_run
        if pool.not_run:
            self.say(f"gate audit: {pool.not_run} drawn mutant(s) not run (a survivor came first "
                     "in their kernel, or the audit's time ran out); kgit gate audit --max N "
                     "runs them all")  # fmt: skip
        check_below_tolerance(self.campaign, self.trees[0], self.plan.commit, drawn,
                              self.audit.mutants, budget, self.say,
                              tails=self.plan.tail_warning is None,
                              least_s=(self.audit.control_s or 0.0) if budget.deadline else 0.0)  # fmt: skip
        self.audit.functions = figures(reach.kernels, self.plan, self.audit.mutants)
        self.audit.coverage = coverage(self._every(), reach, self.audit.mutants)
        if self.audit.coverage.get("lines_of"):
            self.say(f"gate audit: covered {covered_words(self.audit.coverage)}")


def figures(reach: list[Reach], plan: Plan, results: list[MutantResult]) -> list[KernelFigures]:
    """Per kernel function: its reach, mutation sites, and what its mutants came to."""
    rows = []
    for r in reach:
        mine = [m for m in results if m.function == r.function and m.where.startswith(f"{r.path}:")]
        outcomes = [m.outcome for m in mine]
        rows.append(
            KernelFigures(
                r.path,
                r.function,
                r.line,
                r.shapes,
                r.gate,
                sites=sum(m.function == r.function for m in plan.mutants.get(r.path, [])),
                tried=sum(o in (CAUGHT, TIMED_OUT, SURVIVED, EQUIVALENT) for o in outcomes),
                caught=sum(o in (CAUGHT, TIMED_OUT) for o in outcomes),
                survived=outcomes.count(SURVIVED),
                unreached=outcomes.count(UNREACHED),
                equivalent=outcomes.count(EQUIVALENT),
            )
        )
    return rows


def _canary_passes(
    campaign: Campaign, tree: Path, path: str, source: bytes, allowed: float, say: Say
) -> bool:
    """Whether the gate passes with PATH replaced by a file that cannot load or build."""
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in PYTHON_SUFFIXES:
        broken = b'raise ImportError("kgit gate audit: a canary that must not load")\n' + source
    else:
        assert suffix in CPP_SUFFIXES
        broken = b'#error "kgit gate audit: a canary that must not build"\n' + source
    result, built = gate_with(campaign, tree, path, broken, source, allowed)
    passes = built and result is not None and result.ok
    if passes:
        say(f"gate audit: the gate PASSES with {path} unable to load: it never loads that file")
    else:
        say(f"gate audit: the gate fails with {path} unable to load, as it should")
    return passes
