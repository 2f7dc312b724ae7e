"""What the commands print for their results (the command line's own texts, beside the views of
campaigns and rounds)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Types only: every command's module imports this one, and a module of frozen result classes
# costs 3-10 ms to create (`kgit status` would build the classes of `gc` and `worker`).
if TYPE_CHECKING:
    from kgit.records.round_results import RoundAccepted, RoundRolledBack, RoundVerdict
    from kgit.records.upkeep_results import Collected, ManifestRevised, TemplateWritten
    from kgit.records.worker_results import WorkerRound, WorkerSummary


def render_template(name: str, r: TemplateWritten) -> str:
    left = f" (still to fill in: {', '.join(r.missing)})" if r.missing else ""
    return (
        f"wrote {r.harness} (the {r.template} harness template) and {r.manifest} "
        f"(a draft{left})\n"
        + (f"note: {r.cpu_shapes_note}\n" if r.cpu_shapes_note else "")
        + f"next: plug your kernel into {r.harness}, commit it (git add {r.harness} && "
        "git commit: the harness is frozen at baseline and must be committed first), then "
        f"kgit init {name} --manifest {r.manifest}"
    )


def audit_line(audit: dict[str, Any] | None) -> str:
    if audit is None:
        return ""
    survived = f", {audit['survived']} SURVIVED (kgit gate audit)" if audit["survived"] else ""
    never = "".join(f"; the gate never loads {path}" for path in audit["unexercised"])
    aside = "".join(
        f", {audit[key]} {words}"
        for key, words in (("equivalent", "equivalent on the shapes"), ("unreached", "unreached"))
        if audit.get(key)
    )
    # Here, not at the top: the audit's machinery (mutants, reach) would load on every
    # command's start, `kgit status` and `kgit log` included (~30 ms).
    from kgit.judge.audit_coverage import covered_words

    covered = covered_words(audit.get("coverage") or {})
    covered = f"; covered {covered}" if covered else ""
    unrun = audit.get("not_run") or 0
    unrun_words = f", {unrun} of {audit.get('drawn') or unrun} drawn not run" if unrun else ""
    return (
        f"gate audit: {audit['caught']} of {audit['tried']} mutants caught{survived}{aside}"
        f"{unrun_words}{covered}{never}\n"
    )


def background_line(state: dict[str, Any] | None) -> str:
    """The baseline's audit started in the background (kgit/engine/guards/audit_background.py)."""
    if state is None:
        return ""
    return (
        f"gate audit: running in the background (pid {state['pid']}); kgit status says when it "
        "is recorded, and kgit round validate waits for it before measuring\n"
    )


def render_verdict(r: RoundVerdict) -> str:
    from kgit.views.summary import not_passing

    lines = [f"round-{r.round}: {r.decision or r.status}"]
    lines += [f"  - {reason}" for reason in r.reasons]
    failing = not_passing([(s.label, s.check) for s in r.shapes])
    if failing:
        lines.append(f"no aggregate: {failing}")
    elif r.delta_vs_best_pct is not None and r.aggregate is not None and r.pairs:
        # Interleaved: the change is the pairs' estimate, not this figure against the best's
        # (on a loaded CPU the candidate's first pass read 18% under the best while the pairs,
        # timed in turns, read it 24% faster).
        runs = r.runs or 1
        passes = "first pass" if runs == 1 else f"first passes (mean of {runs})"
        lines.append(
            f"{r.delta_vs_best_pct:+.3f}% vs best over {r.pairs} pairs; aggregate "
            f"{r.aggregate:.4g} in the candidate's {passes}"
        )
    elif r.delta_vs_best_pct is not None and r.aggregate is not None:
        lines.append(f"aggregate {r.aggregate:.4g} ({r.delta_vs_best_pct:+.3f}% vs best)")
    from kgit.records.notes import ACCEPTING

    accepts = r.decision in ACCEPTING
    lines.append(
        "next: kgit round accept" if accepts else 'next: kgit round rollback --reason "..."'
    )
    return "\n".join(lines)


def render_worker_round(r: WorkerRound) -> str:
    rebased = f" (rebased {r.rebases}x)" if r.rebases else ""
    why = f": {r.reason}" if r.reason else ""
    return f"round-{r.round} [{r.worker}] {r.status}{rebased}: {r.hypothesis}{why}"


def render_worker_summary(r: WorkerSummary) -> str:
    rate = f", {r.rounds_per_hour:.1f} rounds/hour" if r.rounds_per_hour else ""
    text = (
        f"worker {r.worker} (device {r.device}): {r.rounds} round(s), "
        f"{r.accepted} accepted, {r.rolled_back} rolled back in {r.seconds:.1f} s{rate}"
    )
    claims = r.claims
    if claims:
        back = ", ".join(f"round-{n}" for n in claims.taken_back)
        text += f"\nclone {claims.clone}: {claims.lost} line(s) claimed first by another worker"
        text += f"; rolled back as their workers ended: {back}" if back else ""
    return text


def render_revision(r: ManifestRevised) -> str:
    if not r.recorded:
        return f"campaign {r.campaign}: the manifest is unchanged (revision {r.revision})"
    lines = [f"campaign {r.campaign}: manifest revision {r.revision} recorded"]
    lines += [f"  {k}: {v['from']!r} -> {v['to']!r}" for k, v in r.changed.items()]
    if r.needs_trust:
        lines.append(
            f"a command changed: kgit trust --campaign {r.campaign} approves it "
            "(kgit runs none of its commands until then)"
        )
    return "\n".join(lines)


def render_accepted(r: RoundAccepted) -> str:
    return f"round-{r.round} {r.status}: kgit/{r.campaign}/best -> {r.best[:10]}"


def render_rolled_back(r: RoundRolledBack) -> str:
    kept = (
        f"; its commit {r.commit[:10]} stays at {r.kept_at}" if r.commit else " (it had no commit)"
    )
    return f"round-{r.round} {r.status}: back on kgit/{r.campaign}/best{kept}"


def render_gc(r: Collected) -> str:
    """`kgit gc`: each folder of measuring trees that goes, why, and what it frees."""
    verb = "would remove" if r.dry_run else "removed"
    lines = []
    for row in r.leftovers:
        lines.append(
            f"{verb} {row.path} ({', '.join(row.trees) or 'no trees'}; {row.mb:.1f} MB): {row.reason}"
        )
        lines += [
            f"  kept {held.tree}: kgit pid {held.pid} measures in it (kgit gc once it ended)"
            for held in row.in_use
        ]
    if not lines:
        lines.append("nothing to remove: every measuring tree belongs to a running campaign")
    lines.append(
        f"freed: {r.freed_mb:.1f} MB{' (dry run: nothing removed)' if r.dry_run else ''}; "
        f"kept: {r.kept_mb:.1f} MB under .git/kgit/worktrees; git worktree list: "
        f"{r.git_worktrees_before} -> {r.git_worktrees_after} entries"
    )
    if r.dry_run and r.leftovers:
        lines.append("next: kgit gc (without --dry-run)")
    return "\n".join(lines)
