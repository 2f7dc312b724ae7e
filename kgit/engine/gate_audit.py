"""The gate audit: does the correctness gate catch small bugs planted in the kernel?

`kgit gate audit` (and `kgit baseline`, sized by the manifest's `gate_audit_mutants`) checks the
best line's commit out in a work tree of kgit's own, `.git/kgit/worktrees/<campaign>/audit`, and
runs the gate (the manifest's test_command, as the commit hook runs it) there:

1. on the unmutated kernel (the control: it must pass, or no mutant can be judged; its time sizes
   the per-mutant timeout);
2. on each kernel_source file replaced by one that cannot load or build (the canary: a gate that
   still passes never loads that file from the tree, e.g. it imports an installed copy);
3. on each mutant (kgit/judge/mutants.py), one at a time, the file restored after each.

The user's work tree is never touched; a kill leaves at most a mutated file in kgit's own tree,
which the next audit's checkout resets.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from kgit.engine.audit_run import (
    Budget,
    Observed,
    Pool,
    check_below_tolerance,
    observe,
    tier_of,
)
from kgit.engine.audit_tree import (
    exclusive,
    extra_tree,
    gate_with,
    parallel_trees,
    reset,
    scratch_tree,
    tree_path,
)
from kgit.engine.campaign import Campaign, now
from kgit.engine.gate import Say, gate_files
from kgit.engine.runner import CommandResult
from kgit.engine.trust import require_trusted
from kgit.errors import KgitError
from kgit.judge.mutants import (
    CPP_SUFFIXES,
    PYTHON_SUFFIXES,
    Mutant,
    NotMutable,
    draw,
    mutants_of,
)
from kgit.judge.mutants_python import KernelFunction, kernel_functions
from kgit.judge.reach import Reach, describe, reach_of
from kgit.judge.scope import in_kernel_source
from kgit.judge.tails import block_sizes, power_of_two_padding, tail_warning
from kgit.progress import warn
from kgit.records.gate_audit import (
    BELOW_TOLERANCE,
    CAUGHT,
    SURVIVED,
    TIMED_OUT,
    UNREACHED,
    GateAudit,
    KernelFigures,
    MutantResult,
)

MAX_SOURCE_BYTES = 1_000_000
# A mutant may take this many times the unmutated gate's time, plus a margin, before it counts
# as a hang (caught): a mutant that loops forever must not stall the audit for timeout_s.
TIMEOUT_FACTOR, TIMEOUT_MARGIN_S, TIMEOUT_FLOOR_S = 3.0, 10.0, 30.0
# The baseline's (quick) audit may take this many gate runs of wall time in all, and at least
# QUICK_FLOOR_S: a gate of a fraction of a second would leave no time for git's checkout of
# kgit's audit trees, which costs the same whatever the gate.
QUICK_GATE_RUNS, QUICK_FLOOR_S = 2.0, 3.0
_REGULAR = ("100644", "100755")


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


def plan_audit(campaign: Campaign, commit: str) -> Plan:
    """The kernel_source files of COMMIT, their mutation sites, and the tail heuristic."""
    manifest, repo = campaign.manifest, campaign.repo
    plan = Plan(commit)
    # The gate's own files and the harness are never mutated, even inside a kernel_source folder.
    fixed = [*gate_files(repo, commit, manifest).frozen, *manifest.protected_paths]
    listed = repo.ls_tree(commit)
    paths = [p for p in listed if in_kernel_source(p, manifest.kernel_source)]
    for source in manifest.kernel_source:
        if not any(in_kernel_source(path, [source]) for path in paths):
            plan.skipped.append(f"{source}: matches no file at {commit[:10]}")
    # Only regular files: writing a mutant through a symbolic link would change the file it
    # points to, which may be outside kgit's work tree (the user's own copy).
    for path in [p for p in paths if listed[p][0] not in _REGULAR]:
        plan.skipped.append(f"{path}: not a regular file (a symbolic link or a submodule)")
    paths = [p for p in paths if listed[p][0] in _REGULAR]
    blobs = repo.read_blobs([listed[p][1] for p in paths])
    blocks, padding = [], []
    for path in paths:
        data = blobs[listed[path][1]]
        # in_kernel_source(path, fixed): the path is one of them or lies in one (a folder).
        if in_kernel_source(path, fixed) or PurePosixPath(path).name.startswith(
            ("test_", "conftest")
        ):
            plan.skipped.append(f"{path}: part of the gate or the harness, not of the kernel")
            continue
        if len(data) > MAX_SOURCE_BYTES:
            plan.skipped.append(f"{path}: larger than {MAX_SOURCE_BYTES // 1000} kB")
            continue
        text = data.decode(errors="replace")
        blocks += block_sizes(path, text)
        padding += [where] if (where := power_of_two_padding(path, text)) else []
        try:
            found = mutants_of(path, data)
        except NotMutable as why:
            plan.skipped.append(f"{path}: {why}")
            continue
        if not found:
            plan.skipped.append(f"{path}: no mutation site in its kernel code")
            continue
        plan.sources[path], plan.mutants[path] = data, found
        if PurePosixPath(path).suffix.lower() in PYTHON_SUFFIXES:
            plan.functions[path] = kernel_functions(data)
    plan.tail_warning = tail_warning(manifest.target_shapes, blocks, padding)
    return plan


class UnjudgeableGate(KgitError):
    """The gate fails on the unmutated kernel in kgit's clean checkout: no mutant can be judged
    (the gate needs a file that is not committed, or it is broken)."""


def audit_at_baseline(campaign: Campaign, say: Say, *, echo: bool) -> dict[str, Any] | None:
    """The baseline's audit, sized by `gate_audit_mutants` and quick (at most QUICK_GATE_RUNS
    gate runs of wall time, the first survivor of each kernel ends its mutants); never fails
    the baseline (which is already recorded): what stops the audit is a warning. Returns the
    audit's summary."""
    count = campaign.manifest.gate_audit_mutants
    if count == 0:
        plan = plan_audit(campaign, campaign.best_tip())
        if plan.tail_warning:
            warn(plan.tail_warning)
        say("gate audit: off (gate_audit_mutants: 0); kgit gate audit runs one")
        return None
    try:
        audit = run_audit(campaign, say, count=count, trigger="baseline", echo=echo, quick=True)
    except UnjudgeableGate as error:
        warn(f"{error.message}\nhint: {error.hint}")
        return None
    except KgitError as error:
        say(f"warning: {error.message}" + (f"\nhint: {error.hint}" if error.hint else ""))
        return None
    return audit.summary()


def run_audit(
    campaign: Campaign,
    say: Say,
    *,
    count: int,
    trigger: str,
    timeout_s: float | None = None,
    echo: bool = False,
    quick: bool = False,
) -> GateAudit:
    """Plan, warn about tails, audit, warn about survivors: `kgit gate audit` (full) and the
    baseline (QUICK)."""
    started = time.monotonic()
    require_trusted(campaign, "audit the gate (it runs test_command)")
    plan = plan_audit(campaign, campaign.best_tip())
    if plan.tail_warning:
        warn(plan.tail_warning)
    audit = audit_gate(campaign, plan, say, count=count, trigger=trigger, timeout_s=timeout_s,
                       echo=echo, quick=quick, started=started)  # fmt: skip
    weak = weak_gate_warning(audit)
    if weak:
        warn(weak)
    return audit


def audit_gate(
    campaign: Campaign,
    plan: Plan,
    say: Say,
    *,
    count: int,
    trigger: str,
    timeout_s: float | None = None,
    echo: bool = False,
    quick: bool = False,
    started: float | None = None,
) -> GateAudit:
    """Run the gate on COUNT mutants of PLAN's kernel_source files; record the audit.

    Raises KgitError when there is nothing to mutate (nothing recorded) or when the gate fails
    on the unmutated kernel (recorded: no mutant can be judged)."""
    if not plan.mutants:
        raise nothing_to_mutate(campaign, plan)
    started = started or time.monotonic()
    audit = GateAudit(
        campaign=campaign.name,
        commit=plan.commit,
        at=now(),
        trigger=trigger,
        command=campaign.manifest.test_command,
        sites=plan.sites,
        skipped=plan.skipped,
        tail_warning=plan.tail_warning,
        mode="quick" if quick else "full",
    )
    shown = ", ".join(f"{p} ({len(m)})" for p, m in plan.mutants.items())
    say(f"gate audit of {plan.commit[:10]}: mutation sites in {shown}")
    scratch = scratch_tree(campaign, plan.commit, plan.sources, say, echo=echo)
    trees: list[Path] = []
    try:
        with exclusive(campaign), scratch as tree:
            trees.append(tree)
            run = _Run(campaign, plan, trees, audit, say, count, timeout_s, quick, started, echo)
            control = run.execute()
    finally:
        for extra in trees[1:]:
            reset(extra)
    audit.seconds = round(time.monotonic() - started, 3)
    record_audit(campaign, audit)
    if audit.error:
        raise UnjudgeableGate(
            audit.error,
            hint="the gate must pass on a clean checkout of the best line: commit what it "
            f"needs, then try it there: cd {tree_path(campaign)} && {audit.command}",
            details=control.tail[-4000:],
        )
    return audit


def weak_gate_warning(audit: GateAudit) -> str | None:
    """What the gate let through, in words, or None when it caught every mutant."""
    parts = []
    if audit.unexercised:
        parts.append(
            f"the gate passes with {', '.join(audit.unexercised)} replaced by a file that cannot "
            "load or build: it never tests that code (does it import an installed copy rather "
            "than the repository's file?)"
        )
    if audit.survivors:
        width = max(len(m.where) for m in audit.survivors)
        listed = "".join(
            f"\n  {m.where:<{width}}  {m.kind:<11}  {m.mutation}"
            + (f"  ({m.note})" if m.note else "")
            for m in audit.survivors
        )
        parts.append(
            f"{len(audit.survivors)} of {audit.tried} mutants of the kernel SURVIVED the gate "
            f"(`{audit.command}` passed on each of these wrong kernels):{listed}"
        )
    if not parts:
        return None
    return (
        "; and ".join(parts)
        + "\nhint: the gate should compare the kernel's outputs and gradients with a reference "
        "(not only shapes or dtypes, not the kernel with itself) on shapes with ragged edges; "
        "kgit gate audit --json lists every mutant"
    )


def nothing_to_mutate(campaign: Campaign, plan: Plan) -> KgitError:
    sources = campaign.manifest.kernel_source
    why = "; ".join(plan.skipped) or "kernel_source is empty"
    return KgitError(
        f"gate audit: nothing to mutate in kernel_source ({why})",
        hint="the audit mutates the Python/Triton (.py) and C/C++/CUDA/HIP files that "
        "kernel_source names"
        + ("" if sources else "; this campaign declares none (kgit init --kernel-source PATH)"),
    )


@dataclass
class _Run:
    """One audit's runs, in kgit's trees (TREES[0] checked out; more added side by side)."""

    campaign: Campaign
    plan: Plan
    trees: list[Path]
    audit: GateAudit
    say: Say
    count: int
    timeout_s: float | None
    quick: bool
    started: float
    echo: bool

    def execute(self) -> CommandResult:
        """Control and launches, canaries, mutants, survivors against the harness; returns
        the control's result."""
        campaign, plan, audit, say = self.campaign, self.plan, self.audit, self.say
        kernels = any(f.jit for listed in plan.functions.values() for f in listed)
        observed = observe(campaign, self.trees[0], record=kernels, meanwhile=self._more_trees)
        control = observed.control
        audit.control_s = round(control.seconds, 3)
        if not control.ok:
            why = "timed out" if control.returncode is None else f"exited {control.returncode}"
            audit.error = (
                f"gate audit: the gate fails on the unmutated kernel in a clean checkout of "
                f"{plan.commit[:10]} (it {why} after {control.seconds:.1f} s), so no mutant can "
                "be judged"
            )
            return control
        reach = reach_of(plan.functions, observed.shapes, observed.gate)
        audit.reach = [*observed.notes, *describe(reach)]
        for line in audit.reach:
            say(f"gate audit: {line}")
        limit = campaign.manifest.timeout_s
        allowed = self.timeout_s or min(limit, max(TIMEOUT_FLOOR_S, TIMEOUT_FACTOR *
                                                   control.seconds + TIMEOUT_MARGIN_S))  # fmt: skip
        audit.timeout_s = round(allowed, 1)
        budget = self._budget(control)
        say(f"gate audit: the unmutated kernel passes in {control.seconds:.1f} s; "
            f"{allowed:.0f} s allowed per mutant (a hang counts as caught)"
            + (f"; {audit.budget_s:.0f} s for the whole audit" if audit.budget_s else ""))  # fmt: skip
        self._canaries(observed, allowed, budget)
        where = {(r.path, r.function): r for r in reach}
        every = [m for sites in plan.mutants.values() for m in sites]
        chosen = draw(every, self.count, lambda m: tier_of(where.get((m.path, m.function or ""))))
        pool = Pool(campaign, self.trees, plan.sources, allowed, budget, self.quick, say)
        pool.run([(m, where.get((m.path, m.function or ""))) for m in chosen])
        audit.mutants = [pool.results[i] for i in sorted(pool.results)]
        for result in audit.mutants:
            result.reach = result.reach or _tier(where, result)
        audit.not_run = pool.not_run
        if pool.not_run:
            say(f"gate audit: {pool.not_run} drawn mutant(s) not run ("
                + ("a survivor came first in their kernel, or " if self.quick else "")
                + "the audit's time ran out); kgit gate audit --max N runs them all")  # fmt: skip
        keyed = {f"{m.where} {m.description}": m for m in chosen}
        check_below_tolerance(campaign, self.trees[0], keyed, audit.mutants, budget, say)
        audit.functions = figures(reach, plan, audit.mutants)
        return control

    def _more_trees(self) -> None:
        """The other trees mutants run in, checked out while the control runs."""
        wanted = min(parallel_trees(self.campaign), self.plan.sites)
        for index in range(2, wanted + 1):
            tree = extra_tree(self.campaign, self.plan.commit, index, self.say, echo=self.echo)
            self.trees.append(tree)

    def _budget(self, control: CommandResult) -> Budget:
        """The quick audit's deadline: QUICK_GATE_RUNS times the gate's time, that of the
        baseline's own run of it when recorded (the control runs beside the harness's pass,
        which slows it where cores are few)."""
        if not self.quick:
            return Budget()
        note = self.campaign.read_gate(self.campaign.repo.tree_of(self.plan.commit))
        gate_s = min(control.seconds, note.seconds) if note and note.passed else control.seconds
        self.audit.budget_s = round(max(QUICK_FLOOR_S, QUICK_GATE_RUNS * gate_s), 3)
        return Budget(self.started + self.audit.budget_s)

    def _canaries(self, observed: Observed, allowed: float, budget: Budget) -> None:
        """A file the gate launched a kernel of is loaded from the tree: its canary would only
        confirm it. The others get one (a plain Python kernel, a C++ source)."""
        launched = {path for path, _ in observed.gate.kernels} if observed.gate else set()
        for path in list(self.plan.mutants):
            if path in launched or budget.spent:
                continue
            source = self.plan.sources[path]
            if _canary_passes(self.campaign, self.trees[0], path, source, allowed, self.say):
                self.audit.unexercised.append(path)
                del self.plan.mutants[path]


def _tier(where: dict[tuple[str, str], Reach], result: MutantResult) -> str | None:
    found = where.get((result.where.rsplit(":", 1)[0], result.function or ""))
    return found.tier if found else None


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
                tried=sum(o in (CAUGHT, TIMED_OUT, SURVIVED, BELOW_TOLERANCE) for o in outcomes),
                caught=sum(o in (CAUGHT, TIMED_OUT) for o in outcomes),
                survived=outcomes.count(SURVIVED),
                unreached=outcomes.count(UNREACHED),
                below_tolerance=outcomes.count(BELOW_TOLERANCE),
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


def record_audit(campaign: Campaign, audit: GateAudit) -> None:
    """The audit into the campaign state (the record ref's history keeps earlier ones)."""
    with campaign.repo.write_lock():
        current = campaign.reload()
        current.state.gate_audit = audit.to_dict()
        caught = f"{audit.caught} of {audit.tried} mutants caught"
        current.save(f"gate audit of {audit.commit[:10]}: {audit.error or caught}")
