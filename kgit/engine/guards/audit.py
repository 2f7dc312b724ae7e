"""The gate audit: does the correctness gate catch small bugs planted in the kernel?

`kgit gate audit` (and `kgit baseline`, sized by the manifest's `gate_audit_mutants`) checks the
best line's commit out in a work tree of kgit's own, `.git/kgit/worktrees/<campaign>/audit`, and
runs the gate (the manifest's test_command, as the commit hook runs it) there:

1. on the unmutated kernel (the control: it must pass, or no mutant can be judged; its time sizes
   the per-mutant timeout), recording which Triton kernels it launches, as the target shapes'
   harness pass is recorded too (kgit/engine/measuring/harness/launches.py, kgit/judge/reach.py);
2. on each kernel_source file replaced by one that cannot load or build (the canary: a gate that
   still passes never loads that file from the tree, e.g. it imports an installed copy), unless
   the gate launched a kernel of that file;
3. on mutants (kgit/judge/mutants.py), code the target shapes run first, in `audit-N` trees side
   by side where the gate is CPU-bound; a mutant in a kernel nobody launches is not run.

How the runs are ordered and timed, in full (`kgit gate audit`) and quick (the baseline's, at
most two gate runs of wall time): kgit/engine/guards/audit_modes.py; each run: kgit/engine/guards/audit_run.py.
The user's work tree is never touched; a kill leaves at most a mutated file in kgit's own trees,
which the next audit's checkout resets.
"""

from __future__ import annotations

import time
from pathlib import Path, PurePosixPath
from typing import Any

from kgit.engine.bestline import best_line, require_best_where_recorded
from kgit.engine.campaign import Campaign, now
from kgit.engine.guards.audit_background import await_mark, drop_interrupted, finished
from kgit.engine.guards.audit_modes import AuditRun, Plan
from kgit.engine.guards.audit_tree import exclusive, reset, scratch_tree, tree_path
from kgit.engine.guards.gate import gate_files
from kgit.engine.guards.trust import require_trusted
from kgit.errors import KgitError
from kgit.judge.mutants import PYTHON_SUFFIXES, NotMutable, mutants_of
from kgit.judge.mutants_python import kernel_functions
from kgit.judge.scope import in_kernel_source
from kgit.judge.tails import block_sizes, power_of_two_padding, tail_warning
from kgit.progress import Voice, warn
from kgit.records.gate_audit import GateAudit

MAX_SOURCE_BYTES = 1_000_000
_REGULAR = ("100644", "100755")


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


def audit_at_baseline(campaign: Campaign, voice: Voice) -> dict[str, Any] | None:
    """The baseline's audit, sized by `gate_audit_mutants` and quick (at most two gate runs
    of wall time: kgit/engine/guards/audit_modes.py, the first survivor of each kernel ends its mutants); never fails
    the baseline (which is already recorded): what stops the audit is a warning. Returns the
    audit's summary."""
    count = campaign.manifest.gate_audit_mutants
    # The commit the record puts the best line at, whatever its ref says now: in the background
    # the audit starts after the baseline returned, and a best line moved by hand meanwhile
    # (onto a commit whose gate is strong, put back once the audit has run) had the audit of
    # that tree recorded as the campaign's.
    commit = best_line(campaign, campaign.best_tip()).recorded
    if count == 0:
        plan = plan_audit(campaign, commit)
        if plan.tail_warning:
            warn(plan.tail_warning)
        voice.say("gate audit: off (gate_audit_mutants: 0); kgit gate audit runs one")
        return None
    try:
        audit = run_audit(
            campaign, voice, count=count, trigger="baseline", quick=True, commit=commit
        )
    except UnjudgeableGate as error:
        warn(f"{error.message}\nhint: {error.hint}")
        return None
    except KgitError as error:
        voice.say(f"warning: {error.message}" + (f"\nhint: {error.hint}" if error.hint else ""))
        return None
    return audit.summary()


def background_audit(campaign: Campaign, voice: Voice) -> None:
    """`kgit _baseline-audit`, started by the baseline (kgit/engine/guards/audit_background.py):
    the quick audit under the device's measuring lock, since its gate runs use the device as a
    harness does. Its mark goes only once the audit has ended as the inline one does (recorded,
    or stopped with a warning); a kill or a crash leaves it, read as an interrupted audit."""
    from kgit.engine.measuring.device.devicelock import measuring

    await_mark(campaign)
    with measuring(
        campaign.repo, f"campaign {campaign.name}: the baseline's gate audit", voice.say
    ):
        audit_at_baseline(campaign, voice)
        ended_unrecorded(campaign)
    finished(campaign)


def ended_unrecorded(campaign: Campaign) -> None:
    """An audit ended without recording (nothing to mutate, a warning), as an inline one may:
    the record no longer says that the baseline's was started and is owed."""
    if campaign.state.gate_audit_started is None:
        return
    with campaign.repo.write_lock():
        current = campaign.reload()
        if current.state.gate_audit_started is not None:
            current.state.gate_audit_started = None
            current.save("gate audit: ended without a record (its log says why)")


def run_audit(
    campaign: Campaign,
    voice: Voice,
    *,
    count: int,
    trigger: str,
    timeout_s: float | None = None,
    quick: bool = False,
    commit: str | None = None,
) -> GateAudit:
    """Plan, warn about tails, audit, warn about survivors: `kgit gate audit` (full) and the
    baseline (QUICK). COMMIT: the one to audit; by default the best line's tip, refused when it
    is not where the record puts it (the audit of a tree moved there by hand would be recorded
    as the campaign's)."""
    started = time.monotonic()
    require_trusted(campaign, "audit the gate (it runs test_command)")
    plan = plan_audit(campaign, commit or require_best_where_recorded(campaign))
    if plan.tail_warning:
        warn(plan.tail_warning)
    audit = audit_gate(campaign, plan, voice, count=count, trigger=trigger, timeout_s=timeout_s,
                       quick=quick, started=started)  # fmt: skip
    weak = weak_gate_warning(audit)
    if weak:
        warn(weak)
    return audit


def audit_gate(
    campaign: Campaign,
    plan: Plan,
    voice: Voice,
    *,
    count: int,
    trigger: str,
    timeout_s: float | None = None,
    quick: bool = False,
    started: float | None = None,
) -> GateAudit:
    """Run the gate on COUNT mutants of PLAN's kernel_source files; record the audit.

    Raises KgitError when there is nothing to mutate (nothing recorded) or when the gate fails
    on the unmutated kernel (recorded: no mutant can be judged)."""
    if not plan.mutants:
        ended_unrecorded(campaign)
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
    voice.say(f"gate audit of {plan.commit[:10]}: mutation sites in {shown}")
    scratch = scratch_tree(campaign, plan.commit, plan.sources, voice)
    trees: list[Path] = []
    try:
        with exclusive(campaign), scratch as tree:
            trees.append(tree)
            run = AuditRun(campaign, plan, trees, audit, voice, count, timeout_s, started)
            control = run.quick() if quick else run.full()
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


def record_audit(campaign: Campaign, audit: GateAudit) -> None:
    """The audit into the campaign state (the record ref's history keeps earlier ones)."""
    with campaign.repo.write_lock():
        current = campaign.reload()
        current.state.gate_audit = audit.to_dict()
        current.state.gate_audit_started = None
        caught = f"{audit.caught} of {audit.tried} mutants caught"
        current.save(f"gate audit of {audit.commit[:10]}: {audit.error or caught}")
    drop_interrupted(campaign)
