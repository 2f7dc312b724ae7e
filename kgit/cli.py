"""The command line: thin click commands over the engine and the views.

Errors become exit codes here and nowhere else: 1 refused, 2 usage, 3 crash (with a log).
torch and triton are never imported on this path.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kgit import __version__, progress
from kgit.errors import EXIT_CRASH, EXIT_INTERRUPTED, KgitError, UsageError

if TYPE_CHECKING:
    from kgit.engine.campaign import Campaign
    from kgit.gitdoor import Repo

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class Ctx:
    def __init__(self, campaign: str | None, quiet: bool) -> None:
        self.campaign_name = campaign
        self.quiet = quiet
        self._repo: Repo | None = None

    def repo(self) -> Repo:
        from kgit.gitdoor import open_repo

        if self._repo is None:
            self._repo = open_repo()
        return self._repo

    def campaign(self) -> Campaign:
        from kgit.engine.campaign import Campaign, resolve_campaign

        repo = self.repo()
        return Campaign.load(repo, resolve_campaign(repo, self.campaign_name))

    def say(self, message: str) -> None:
        if not self.quiet:
            progress.say(message)

    def long_step(self) -> None:
        """This command runs harnesses or tests for a while: on a terminal, a live line shows
        the step in progress and its elapsed time (kgit/progress.py)."""
        progress.start(self.quiet)


def emit(data: Any, as_json: bool, render: Callable[[Any], str]) -> None:
    progress.stop()  # the result, not a live line, ends the command's output
    if as_json:
        click.echo(json.dumps(data, indent=2, default=_jsonable))
    else:
        click.echo(render(data))


def _jsonable(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return vars(value)
    return str(value)


json_option = click.option(
    "--json", "as_json", is_flag=True, help="Machine-readable output (for agents)."
)


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, prog_name="kgit")
@click.option(
    "-c",
    "--campaign",
    envvar="KGIT_CAMPAIGN",
    metavar="NAME",
    help="Campaign to act on [default: the checked-out kgit branch's, or the only one].",
)
@click.option(
    "-q", "--quiet", is_flag=True, help="No progress and no harness/test output on stderr."
)
@click.pass_context
def cli(ctx: click.Context, campaign: str | None, quiet: bool) -> None:
    """kgit: GPU kernel optimization campaigns, recorded and enforced by git.

    \b
    A campaign pushes one kernel toward the hardware limit:
      kgit init NAME --manifest manifest.yaml   define the target, install the commit gate
      kgit baseline                             tests + full validation = round-1
      kgit round start "HYPOTHESIS"             one hypothesis, one change, on its own branch
      git commit                                the pre-commit hook runs the correctness gate
      kgit round validate                       quick validation and the mechanical verdict
      kgit round accept | rollback              fast-forward the best line, or go back to it
      kgit status | log | show N                where things stand, the lineage, one round
      kgit doctor [--fix]                       explain (and repair) what a kill left behind
      kgit trust --campaign NAME                approve a fetched campaign's commands
      kgit manifest edit [-m FILE]              revise the manifest (a new revision in the record)
      kgit campaign delete NAME [--yes]         remove a campaign and everything kgit kept for it
      kgit push | pull [REMOTE]                 share campaigns between clones (compare-and-swap)
      kgit worker --device N --hypotheses FILE  rounds from a shared queue, one worker per GPU

    \b
    Everything lives in git: branches kgit/<campaign>/best and kgit/<campaign>/round-<N>,
    refs/kgit/<campaign>/ (campaign record, every round's commit), and notes
    refs/notes/kgit/<campaign>/{rounds,bench,gate,log}.  Try it: kgit demo
    """
    ctx.obj = Ctx(campaign, quiet)


@cli.command()
@click.argument("name")
@click.option(
    "-m",
    "--manifest",
    "manifest_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The campaign's manifest.yaml (templates/manifest.yaml documents it).",
)
@click.option("--target-op", help="Overrides the manifest's target_op.")
@click.option("--target-backend", help="Overrides target_backend (e.g. TRITON, HIP, CK).")
@click.option("--target-gpu", help="Overrides target_gpu (e.g. H200, MI300X).")
@click.option("--primary-metric", help="Overrides primary_metric.")
@click.option("--test-command", help="Overrides test_command (the correctness gate).")
@click.option("--quick-command", help="Overrides quick_command (the quick harness).")
@click.option("--max-iterations", type=int, help="Overrides max_iterations (below 120).")
@click.option(
    "--kernel-source", multiple=True, help="Overrides kernel_source (repeat for several files)."
)
@click.option(
    "--shapes-file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="target_shapes from a YAML/JSON file (a list, or a mapping with target_shapes).",
)
@click.option(
    "--execution-mode",
    type=click.Choice(["repo-mode", "workspace-mode"]),
    help="Overrides execution_mode.",
)
@click.option("--rebuild-command", help="Overrides rebuild_command (run before each validation).")
@click.option(
    "--acceptance-command", help="Overrides acceptance_command (the full suite of kgit finish)."
)
@click.option(
    "--from-template",
    type=click.Choice(["gemm", "memory", "grouped"]),
    help="Write bench/quick_test_bench.py from the harness template and a manifest.yaml "
    "draft, then stop: plug the kernel in, commit the harness, run kgit init NAME -m manifest.yaml.",
)
@click.option(
    "--ask/--no-input",
    "ask",
    default=None,
    help="Ask for missing fields even without a terminal, or never ask "
    "[default: ask on a terminal].",
)
@json_option
@click.pass_obj
def init(
    obj: Ctx,
    name: str,
    manifest_file: Path | None,
    as_json: bool,
    kernel_source: tuple[str, ...],
    shapes_file: Path | None,
    from_template: str | None,
    ask: bool | None,
    **overrides: Any,
) -> None:
    """Define the target and create campaign NAME, starting at HEAD.

    Fields come from the manifest and the flags; on a terminal kgit asks for each
    missing one (with the defaults it can infer), shows the whole target and waits
    for your confirmation. Without a terminal a missing field is an error that lists
    them all. Then: the best line kgit/NAME/best at HEAD, the manifest recorded under
    refs/kgit/NAME/campaign, the commit gate installed (chaining any existing hook),
    and git told to carry kgit's notes through amend and rebase.
    """
    from kgit.engine.define import (
        ask_missing,
        load_shapes_file,
        missing_fields,
        render_target,
        require_complete,
        write_template,
    )
    from kgit.engine.setup import init_campaign
    from kgit.records.manifest import load_manifest_fields, parse_manifest
    from kgit.records.yamltext import read_text_capped

    fields = {k: v for k, v in overrides.items() if v is not None}
    if kernel_source:
        fields["kernel_source"] = list(kernel_source)
    if shapes_file is not None:
        fields["target_shapes"] = load_shapes_file(shapes_file)
    if from_template:
        written = write_template(obj.repo().root, from_template, fields)
        emit(written, as_json, lambda r: _render_template(name, r))
        return
    text, source = "", "command-line fields"
    if manifest_file is not None:
        text = read_text_capped(manifest_file)
        source = str(manifest_file)
    data = {**load_manifest_fields(text, source), **fields}
    asked = bool(missing_fields(data))
    if asked:
        if not (ask if ask is not None else sys.stdin.isatty()):
            require_complete(data, source)
        data = ask_missing(data, obj.repo(), _prompt)
    manifest, warnings = parse_manifest("", source, data)
    for warning in warnings:
        obj.say(f"warning: {warning}")
    if asked:
        click.echo(render_target(name, data), err=True)
        if not click.confirm("create the campaign with this target?", default=True, err=True):
            raise KgitError(
                "the target was not confirmed: nothing written", hint=f"kgit init {name}"
            )
    result = init_campaign(obj.repo(), name, manifest)
    emit(
        result,
        as_json,
        lambda r: (
            f"campaign {r['campaign']} created at {r['base'][:10]}; best line {r['best']}\n"
            f"hooks installed: {', '.join(r['hooks'])}\nnext: kgit baseline"
        ),
    )


def _prompt(question: str, default: str | None) -> str:
    # Prompts go to stderr so that --json output stays one JSON document on stdout.
    answer: str = click.prompt(question, default=default, show_default=bool(default), err=True)
    return answer


def _render_template(name: str, r: dict[str, Any]) -> str:
    left = f" (still to fill in: {', '.join(r['missing'])})" if r["missing"] else ""
    return (
        f"wrote {r['harness']} (the {r['template']} harness template) and {r['manifest']} "
        f"(a draft{left})\n"
        f"next: plug your kernel into {r['harness']}, commit it (git add {r['harness']} && "
        "git commit: the harness is frozen at baseline and must be committed first), then "
        f"kgit init {name} --manifest {r['manifest']}"
    )


@cli.command()
@json_option
@click.pass_obj
def baseline(obj: Ctx, as_json: bool) -> None:
    """Round-1: run the tests, then the harness on every target shape.

    Freezes the CSV header and the protected files (the harness), and picks the 3-5
    representative shapes that quick validation will use.
    """
    from kgit.engine.setup import baseline as run_baseline

    obj.long_step()
    result = run_baseline(obj.campaign(), obj.say, echo=not obj.quiet)
    emit(
        result,
        as_json,
        lambda r: (
            f"baseline recorded on {r['commit'][:10]}: {r['metric']} aggregate {r['aggregate']:.4g}\n"
            f"representative shapes: {', '.join(r['representative_shapes'])}\n"
            f"{_audit_line(r['gate_audit'])}"
            'next: kgit round start "HYPOTHESIS"'
        ),
    )


def _audit_line(audit: dict[str, Any] | None) -> str:
    if audit is None:
        return ""
    survived = f", {audit['survived']} SURVIVED (kgit gate audit)" if audit["survived"] else ""
    never = "".join(f"; the gate never loads {path}" for path in audit["unexercised"])
    return f"gate audit: {audit['caught']} of {audit['tried']} mutants caught{survived}{never}\n"


@cli.group(context_settings=CONTEXT)
def round() -> None:
    """One hypothesis, one change: start, validate, accept or rollback."""


@round.command("start")
@click.argument("hypothesis")
@click.option("--reopen", is_flag=True, help="Go on with a finished campaign (kgit finish again).")
@click.option(
    "--worktree",
    type=click.Path(file_okay=False, path_type=Path),
    help="Open the round in this work tree (added if missing), beside rounds already in flight.",
)
@json_option
@click.pass_obj
def round_start(
    obj: Ctx, hypothesis: str, reopen: bool, worktree: Path | None, as_json: bool
) -> None:
    """Begin the next round with its HYPOTHESIS, on a new branch from the best line."""
    from kgit.engine.rounds import start_round

    where = worktree.resolve() if worktree else None
    result = start_round(obj.campaign(), hypothesis, reopen=reopen, worktree=where)
    emit(
        result,
        as_json,
        lambda r: (
            f"round-{r['round']} started on {r['branch'].removeprefix('refs/heads/')}\n"
            f"next: change the kernel, {r['commit']}, kgit round validate"
        ),
    )


@round.command("validate")
@click.option(
    "--full", is_flag=True, help="Measure every target shape, not only the representative ones."
)
@json_option
@click.pass_obj
def round_validate(obj: Ctx, full: bool, as_json: bool) -> None:
    """Gate, measure and judge the round's last commit; store the verdict in its notes."""
    from kgit.engine.rounds import validate_round

    obj.long_step()
    result = validate_round(obj.campaign(), obj.say, full=full, echo=not obj.quiet)
    emit(result, as_json, _render_verdict)


def _render_verdict(r: dict[str, Any]) -> str:
    from kgit.views.summary import not_passing

    lines = [f"round-{r['round']}: {r['decision'] or r['status']}"]
    lines += [f"  - {reason}" for reason in r["reasons"]]
    failing = not_passing([(s["label"], s["check"]) for s in r["shapes"]])
    if failing:
        lines.append(f"no aggregate: {failing}")
    elif r["delta_vs_best_pct"] is not None:
        lines.append(f"aggregate {r['aggregate']:.4g} ({r['delta_vs_best_pct']:+.3f}% vs best)")
    accepts = r["decision"] in ("ACCEPTED", "ACCEPTED (trade-off)")
    lines.append(
        "next: kgit round accept" if accepts else 'next: kgit round rollback --reason "..."'
    )
    return "\n".join(lines)


@round.command("accept")
@click.option(
    "--attribution", help="What the gain comes from; kept in the round's note, shown in the report."
)
@click.option("--lesson", help="What the round taught; kept in its note, shown in the report.")
@json_option
@click.pass_obj
def round_accept(obj: Ctx, attribution: str | None, lesson: str | None, as_json: bool) -> None:
    """Fast-forward the best line to the round's commit (only on an accepting verdict)."""
    from kgit.engine.rounds import accept_round

    obj.long_step()
    words = {"attribution": attribution or "", "lesson": lesson or ""}
    result = accept_round(obj.campaign(), obj.say, echo=not obj.quiet, words=words)
    emit(
        result,
        as_json,
        lambda r: f"round-{r['round']} {r['status']}; best line at {r['best'][:10]}",
    )


@round.command("rollback")
@click.option(
    "--reason",
    help="Why it failed (the root cause): required, as in the seed; kept in the round's "
    "note and the report. Completing an interrupted rollback keeps the reason it had.",
)
@click.option("--lesson", help="What the round taught; kept in its note, shown in the report.")
@json_option
@click.pass_obj
def round_rollback(obj: Ctx, reason: str | None, lesson: str | None, as_json: bool) -> None:
    """Return to the best line; the round's commit and notes stay reachable."""
    from kgit.engine.rounds import rollback_round

    result = rollback_round(obj.campaign(), reason, obj.say, lesson)
    emit(
        result,
        as_json,
        lambda r: (
            f"round-{r['round']} {r['status']}"
            + (f"; commit {r['commit'][:10]} kept at {r['kept_at']}" if r["commit"] else "")
        ),
    )


@cli.command()
@click.option(
    "--hypotheses",
    "queue",
    required=True,
    metavar="FILE",
    help="The queue: `HYPOTHESIS :: COMMAND` or JSON lines; `-` reads them from stdin as they "
    "come. Workers given one FILE share it, each line tried once.",
)
@click.option(
    "--device",
    metavar="N",
    help="Pin the worker to GPU N (sets CUDA_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES; `cpu` "
    "for none) [default: the devices this shell sees].",
)
@click.option(
    "--name", metavar="NAME", help="The worker's name and work tree [default: device-<N>]."
)
@click.option("--max-rounds", type=click.IntRange(min=1), help="Stop after this many rounds.")
@json_option
@click.pass_obj
def worker(
    obj: Ctx,
    queue: str,
    device: str | None,
    name: str | None,
    max_rounds: int | None,
    as_json: bool,
) -> None:
    """Run rounds from a queue of hypotheses, one at a time, on one device.

    \b
    Each round: take the next hypothesis, open its round in the worker's own work tree
    (.git/kgit/workers/<campaign>/<name>), apply its change, commit through the gate, validate
    (the device's measuring lock is held only while timing), then accept, or roll back with the
    reason. N workers share a campaign: one per GPU, e.g.
      kgit worker --device 0 --hypotheses ideas.txt &
      kgit worker --device 1 --hypotheses ideas.txt &
    With --json, one JSON line per round as it ends, then the summary.
    """
    from kgit.engine.worker import WorkerSetup, run_worker, taker

    campaign = obj.campaign()
    default = f"device-{device}" if device is not None else "worker"
    setup = WorkerSetup(campaign.name, name or default, device, max_rounds, not obj.quiet)
    take = taker(obj.repo(), setup, queue, sys.stdin)
    obj.long_step()

    def report(outcome: dict[str, Any]) -> None:
        progress.stop()
        if as_json:
            click.echo(json.dumps({"event": "round", **outcome}, default=_jsonable))
        else:
            click.echo(_render_worker_round(outcome))

    summary = {"event": "done", **run_worker(obj.repo(), setup, take, obj.say, report)}
    progress.stop()
    click.echo(json.dumps(summary) if as_json else _render_worker_summary(summary))


def _render_worker_round(r: dict[str, Any]) -> str:
    rebased = f" (rebased {r['rebases']}x)" if r.get("rebases") else ""
    why = f": {r['reason']}" if r.get("reason") else ""
    return f"round-{r['round']} [{r['worker']}] {r['status']}{rebased}: {r['hypothesis']}{why}"


def _render_worker_summary(r: dict[str, Any]) -> str:
    rate = f", {r['rounds_per_hour']:.1f} rounds/hour" if r["rounds_per_hour"] else ""
    return (
        f"worker {r['worker']} (device {r['device']}): {r['rounds']} round(s), "
        f"{r['accepted']} accepted, {r['rolled_back']} rolled back in {r['seconds']:.1f} s{rate}"
    )


@cli.command()
@click.option("--all", "all_campaigns", is_flag=True, help="List every campaign of the repository.")
@json_option
@click.pass_obj
def status(obj: Ctx, all_campaigns: bool, as_json: bool) -> None:
    """Where the campaign stands and what to do next."""
    from kgit.engine.campaign import list_campaigns
    from kgit.views.lineage import render_status, status_data

    repo = obj.repo()
    if all_campaigns:
        names = list_campaigns(repo)
        emit(names, as_json, lambda n: "\n".join(n) or "no campaign")
        return
    campaign = obj.campaign()
    data = status_data(campaign, repo.current_branch())
    emit(data, as_json, render_status)


@cli.command()
@click.option(
    "--fix", "apply_fixes", is_flag=True, help="Apply the safe repairs (they lose nothing)."
)
@json_option
@click.pass_obj
def doctor(obj: Ctx, apply_fixes: bool, as_json: bool) -> None:
    """Find and explain what a killed command or a hand-made change left inconsistent.

    \b
    Orphan and stale round branches, HEAD on a closed round's branch, an accept or
    rollback killed half-way, a best line on a commit that was not accepted, keep-refs
    and notes that disagree, edits the commit gate saved under .git/kgit/patches/.
    For each, the one command that repairs it. Exits 1 while problems remain, else 0.
    """
    from kgit.engine.doctor import diagnose, fix
    from kgit.views.doctor import render_doctor

    campaign = obj.campaign()
    found = diagnose(campaign)
    fixed = fix(campaign, found, obj.say) if apply_fixes else []
    left = diagnose(campaign.reload()) if fixed else found
    data = {
        "campaign": campaign.name,
        "clean": not left,
        "problems": [finding.to_dict() for finding in left],
        "fixed": [finding.to_dict() for finding in fixed],
    }
    emit(data, as_json, render_doctor)
    if left:
        sys.exit(1)  # problems remain: a refusal, with the facts already printed


@cli.command()
@json_option
@click.pass_obj
def log(obj: Ctx, as_json: bool) -> None:
    """The whole lineage, rolled-back rounds included."""
    from kgit.views.lineage import lineage, quick_is_subset, render_log

    campaign = obj.campaign()
    subset = quick_is_subset(campaign)
    emit(lineage(campaign), as_json, lambda rows: render_log(rows, quick_is_subset=subset))


@cli.command()
@click.argument("number", metavar="ROUND")
@click.option("--csv", "with_csv", is_flag=True, help="Also print the round's benchmark CSV.")
@json_option
@click.pass_obj
def show(obj: Ctx, number: str, with_csv: bool, as_json: bool) -> None:
    """One round's summary (ROUND: 3 or round-3): hypothesis, change, results, decision."""
    from kgit.views.summary import show_round

    digits = number.removeprefix("round-")
    if not digits.isdigit():
        raise UsageError(f"{number!r} is not a round number", hint="kgit show 3 (or round-3)")
    data, render = show_round(obj.campaign(), int(digits), with_csv)
    emit(data, as_json, render)


@cli.command()
@click.option(
    "--kernel",
    type=click.Choice(["gemm", "rmsnorm"]),
    default="gemm",
    show_default=True,
    help="The bundled example: a Triton GEMM (compute-bound) or RMSNorm (memory-bound).",
)
@click.option(
    "--dir",
    "where",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where to create the demo repository [default: a new temporary folder].",
)
@click.option(
    "--cpu", is_flag=True, help="Use the CPU path (Triton interpreter) even if a GPU is present."
)
def demo(kernel: str, where: Path | None, cpu: bool) -> None:
    """Run a whole campaign on a bundled example kernel, in a throwaway repository.

    \b
    init -> baseline -> a round that is faster and accepted -> a commit the gate
    blocks (a real bug) -> a round that is slower and rolled back -> the lineage.
    On CPU it uses Triton's interpreter and tiny shapes (a few minutes on 2 cores);
    with a GPU, realistic shapes in bf16. Every step is the real command, echoed.
    """
    from kgit.demo import run_demo

    run_demo(kernel, where, gpu=False if cpu else None)


# --- campaign ends (define, finish, tips) ---


@cli.command()
@click.option(
    "--allow-path",
    "allow_paths",
    multiple=True,
    metavar="PATH",
    help="A changed file outside kernel_source that belongs in the final change (repeatable).",
)
@json_option
@click.pass_obj
def finish(obj: Ctx, allow_paths: tuple[str, ...], as_json: bool) -> None:
    """Final acceptance: full suite, full validation, a clean diff, the branch to merge.

    \b
    On the best line: its diff against the campaign base may touch only kernel_source
    (anything else must be allowed: --allow-path PATH, or confirmed on a terminal);
    the project's full test suite (acceptance_command) must pass; the harness runs on
    every target shape and the result is judged against the baseline. Then it writes
    kgit/NAME/final (one commit per accepted round, hypothesis and result in each
    message), records the report in notes refs/notes/kgit/NAME/final and marks the
    campaign finished (round start then needs --reopen).
    """
    from kgit.engine.finish import check_finish, record_finish
    from kgit.views.final import render_final_note, render_finish

    def confirm(paths: list[str]) -> bool:
        if as_json or not sys.stdin.isatty():
            return False
        progress.stop()  # a question, not a live line, holds the terminal's last line now
        listed = "".join(f"\n  {path}" for path in paths)
        question = f"the best line also changes files outside kernel_source:{listed}\nkeep them?"
        return click.confirm(question, default=False, err=True)

    obj.long_step()
    finishing = check_finish(
        obj.campaign(), obj.say, allow_paths=allow_paths, confirm=confirm, echo=not obj.quiet
    )
    result = record_finish(finishing, render_final_note(finishing.finished, finishing.data))
    emit(result, as_json, render_finish)


@cli.group(context_settings=CONTEXT, invoke_without_command=True)
@json_option
@click.pass_context
def tips(ctx: click.Context, as_json: bool) -> None:
    """Lessons from earlier rounds and campaigns on the same GPU, op and backend.

    \b
    Without a subcommand: the tips that apply to the current campaign. They live in
    refs/kgit-tips/<gpu>/<op>/<backend> (share them: git push origin 'refs/kgit-tips/*').
    """
    if ctx.invoked_subcommand is not None:
        return
    from kgit.engine.tips import campaign_tips_ref, render_tip_line, tips_for

    campaign = ctx.obj.campaign()
    found = [tip.to_dict() for tip in tips_for(campaign)]

    def render(rows: list[dict[str, Any]]) -> str:
        from kgit.records.tips import Tip

        if not rows:
            return f"no tips yet for this target ({campaign_tips_ref(campaign)})"
        return "\n".join(f"- {render_tip_line(Tip(**row))}" for row in rows)

    emit(found, as_json, render)


@tips.command("add")
@click.option("--context", "context_", metavar="TEXT", help="What was tried, on what.")
@click.option("--signal", metavar="TEXT", help="What was observed: numbers, counters, a failure.")
@click.option("--takeaway", metavar="TEXT", help="What to do, or not do, next time.")
@click.option("--applicability", metavar="TEXT", help="Where it holds: shapes, dtypes, hardware.")
@click.option("--round", "round_number", type=int, help="The round it comes from (its outcome).")
@json_option
@click.pass_obj
def tips_add(
    obj: Ctx,
    context_: str | None,
    signal: str | None,
    takeaway: str | None,
    applicability: str | None,
    round_number: int | None,
    as_json: bool,
) -> None:
    """Record a lesson for this campaign's GPU, op and backend."""
    from kgit.engine.tips import add_tip, campaign_tips_ref

    campaign = obj.campaign()
    tip = add_tip(campaign, context_, signal, takeaway, applicability, round_number)
    emit(
        tip.to_dict(),
        as_json,
        lambda t: f"tip recorded in {campaign_tips_ref(campaign)}: {t['takeaway']}",
    )


@cli.group(context_settings=CONTEXT)
def hooks() -> None:
    """The commit gate's hooks."""


@hooks.command("install")
@click.pass_obj
def hooks_install(obj: Ctx) -> None:
    """(Re)install kgit's pre-commit and prepare-commit-msg hooks, chaining existing ones.

    Refused while a campaign of the repository is not trusted here (kgit trust)."""
    from kgit.engine.hooks import configure_git, install_hooks
    from kgit.engine.trust import untrusted_campaigns

    untrusted = untrusted_campaigns(obj.repo())
    if untrusted:
        raise KgitError(
            "cannot install the hooks: the commands of campaign(s) "
            f"{', '.join(untrusted)} are not trusted in this repository (the hook would run them)",
            hint=" && ".join(f"kgit trust --campaign {name}" for name in untrusted)
            + " (each shows the commands and asks), then kgit hooks install",
        )
    click.echo("installed: " + ", ".join(install_hooks(obj.repo())))
    # A clone that pulled its campaigns has none of kgit init's git settings either.
    configure_git(obj.repo())
    click.echo("git config: notes follow amend and rebase; git log shows the round notes")


@cli.command()
@click.option(
    "-c", "--campaign", "name", metavar="NAME", help="The campaign to trust [default: as kgit -c]."
)
@click.option("--yes", is_flag=True, help="Approve without asking (for scripts).")
@json_option
@click.pass_obj
def trust(obj: Ctx, name: str | None, yes: bool, as_json: bool) -> None:
    """Approve the commands of a campaign that came from elsewhere (a fetch, another clone).

    \b
    kgit runs a manifest's commands (the gate's test_command, the harness, the rebuild
    and acceptance commands) only when this repository approves that exact manifest:
    its SHA-256 in the repository's own config (kgit.NAME.trust), which git never
    transfers. kgit init and kgit import approve what you define; a campaign fetched
    from another clone, or whose manifest changed there, waits for this command. It
    shows the commands and asks; --yes approves without asking.
    """
    from kgit.engine.trust import record_trust, render_trust, trust_data

    obj.campaign_name = name or obj.campaign_name
    campaign = obj.campaign()
    data = trust_data(campaign)
    if not as_json:
        click.echo(render_trust(data))
    if not data["trusted"]:
        if not yes and not sys.stdin.isatty():
            raise UsageError(
                f"kgit trust asks before it approves campaign {campaign.name}'s commands, and "
                "there is no terminal to ask on",
                hint=f"read the commands above, then kgit trust --campaign {campaign.name} --yes",
            )
        if not yes and not click.confirm("run these commands in this repository?", err=True):
            raise KgitError("not trusted: nothing changed", hint="kgit status")
        record_trust(campaign)  # the manifest shown above, not one fetched meanwhile
    done = {**data, "trusted": True, "was_trusted": data["trusted"]}
    emit(
        done,
        as_json,
        lambda r: (
            f"{'already trusted' if r['was_trusted'] else 'trusted'}: campaign "
            f"{r['campaign']} ({r['config_key']} = {r['manifest_sha256'][:16]}...)"
        ),
    )


@cli.group(context_settings=CONTEXT)
def manifest() -> None:
    """Revise the campaign's manifest (recorded as a new revision in its record)."""


@manifest.command("edit")
@click.option(
    "-m",
    "--manifest",
    "manifest_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="The whole new manifest from FILE, instead of opening $EDITOR.",
)
@json_option
@click.pass_obj
def manifest_edit(obj: Ctx, manifest_file: Path | None, as_json: bool) -> None:
    """Change the manifest: any field before the baseline; after it, only the fields
    that keep rounds comparable (max_iterations, performance_target, thresholds,
    acceptance_command). Shapes, metric, harness or gate are a new campaign.

    \b
    Each change is a new revision in the campaign record (git log
    refs/kgit/NAME/campaign -- manifest.yaml). A revision that changes a command
    needs kgit trust again; one that keeps them keeps the approval.
    """
    from kgit.engine.revise import edit_manifest, editable_text
    from kgit.records.yamltext import read_text_capped

    campaign = obj.campaign()
    if manifest_file is not None:
        text, source = read_text_capped(manifest_file), str(manifest_file)
    else:
        if not sys.stdin.isatty() or not sys.stdout.isatty():
            raise UsageError(
                "kgit manifest edit opens $EDITOR, and there is no terminal",
                hint="write the new manifest to a file, then kgit manifest edit -m FILE",
            )
        shown = editable_text(campaign)
        edited = click.edit(shown, extension=".yaml", require_save=True)
        text, source = (edited if edited is not None else shown), "the edited manifest"
    result = edit_manifest(campaign, text, source)
    for warning in result["warnings"]:
        obj.say(f"warning: {warning}")
    emit(result, as_json, _render_revision)


def _render_revision(r: dict[str, Any]) -> str:
    if not r["recorded"]:
        return f"campaign {r['campaign']}: the manifest is unchanged (revision {r['revision']})"
    lines = [f"campaign {r['campaign']}: manifest revision {r['revision']} recorded"]
    lines += [f"  {k}: {v['from']!r} -> {v['to']!r}" for k, v in r["changed"].items()]
    if r["needs_trust"]:
        lines.append(
            f"a command changed: kgit trust --campaign {r['campaign']} approves it "
            "(kgit runs none of its commands until then)"
        )
    return "\n".join(lines)


@cli.group("campaign", context_settings=CONTEXT)
def campaign_group() -> None:
    """Manage campaigns as a whole."""


@campaign_group.command("delete")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Delete without asking (for scripts and agents).")
@json_option
@click.pass_obj
def campaign_delete(obj: Ctx, name: str, yes: bool, as_json: bool) -> None:
    """Remove campaign NAME from this clone: its record, kept rounds, notes, branches,
    kgit's work trees and caches, and its trust approval. A remote keeps what was
    pushed there; the commits stay in git's object store until git gc."""
    from kgit.engine.delete import campaign_refs, delete_campaign

    repo = obj.repo()
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError(
                f"kgit campaign delete asks before it removes campaign {name}, and there is no "
                "terminal to ask on",
                hint=f"kgit campaign delete {name} --yes",
            )
        count = len(campaign_refs(repo, name))
        question = f"delete campaign {name} ({count} refs: record, rounds, notes, branches)?"
        if not click.confirm(question, default=False, err=True):
            raise KgitError("nothing deleted", hint="kgit status --all")
    result = delete_campaign(repo, name)
    emit(
        result,
        as_json,
        lambda r: (
            f"campaign {r['campaign']} deleted ({len(r['deleted_refs'])} refs"
            + (f", {len(r['work_trees'])} work trees" if r["work_trees"] else "")
            + ")"
            + ("; HEAD detached where its branch was" if r["detached_head"] else "")
        ),
    )


@cli.command()
@click.argument("remote", required=False)
@json_option
@click.pass_obj
def push(obj: Ctx, remote: str | None, as_json: bool) -> None:
    """Publish the campaign(s) to REMOTE, as compare-and-swap on every ref.

    \b
    The campaign's branches (best, round-N, final), its record and kept rounds
    (refs/kgit/NAME/), its notes (refs/notes/kgit/NAME/) and the tips chains, in one
    atomic push where each ref moves only if the remote still holds what kgit just
    fetched. Refused when the remote moved (another clone accepted or pushed): kgit
    pull first. Push right after kgit round start to reserve the round's number.
    REMOTE defaults to the branch's upstream remote, else origin; -c NAME pushes one
    campaign (default: all of this clone's).
    """
    from kgit.engine.push import push as run_push
    from kgit.engine.remote import default_remote
    from kgit.views.sync import render_push

    repo = obj.repo()
    emit(run_push(repo, remote or default_remote(repo), obj.campaign_name), as_json, render_push)


@cli.command()
@click.argument("remote", required=False)
@click.option(
    "--take-remote",
    is_flag=True,
    help="When this clone's record and the remote's diverged (colliding rounds), keep this "
    "clone's refs under refs/kgit-salvage/ and take the remote's.",
)
@json_option
@click.pass_obj
def pull(obj: Ctx, remote: str | None, take_remote: bool, as_json: bool) -> None:
    """Take the campaign(s) of REMOTE into this clone, losing no record.

    \b
    Fetches kgit's refs into refs/kgit-remotes/REMOTE/, then takes a campaign whose
    record is a fast-forward of this clone's (or new here), merges notes and tips,
    and refuses a record that diverged (the rounds that collide are named), was
    rewritten, or whose best line no round accepted. Runs nothing and installs
    nothing: a campaign that arrives is not trusted here until kgit trust, and the
    commit gate waits for kgit hooks install. REMOTE defaults to the branch's
    upstream remote, else origin; -c NAME pulls one campaign (default: all of the
    remote's).
    """
    from kgit.engine.pull import pull as run_pull
    from kgit.engine.remote import default_remote
    from kgit.views.sync import render_pull

    repo = obj.repo()
    name, where = obj.campaign_name, remote or default_remote(repo)
    emit(run_pull(repo, where, name, take_remote), as_json, render_pull)


@cli.command(hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook(name: str, args: tuple[str, ...]) -> None:
    """Entry point of the installed hook shims."""
    from kgit.engine import hookrun

    if name == "pre-commit":
        code = hookrun.pre_commit()
    elif name == "prepare-commit-msg":
        code = hookrun.prepare_commit_msg(*args[:2])
    else:
        raise UsageError(
            f"unknown hook {name!r}",
            hint="kgit hooks install writes the hooks that call this (pre-commit, "
            "prepare-commit-msg)",
        )
    sys.exit(code)


def _crash_log(exc: BaseException) -> str | None:
    import traceback
    from datetime import datetime

    try:
        from kgit.gitdoor import open_repo

        folder = open_repo().kgit_dir() / "crashes"
    except Exception:
        folder = Path(os.environ.get("TMPDIR", "/tmp")) / "kgit-crashes"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"crash-{datetime.now():%Y%m%d-%H%M%S}-{os.getpid()}.log"
        path.write_text(
            f"kgit {__version__}\nargv: {sys.argv}\n\n"
            + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        )
        return str(path)
    except OSError:
        return None


def _report(error: KgitError, as_json: bool) -> int:
    if as_json:
        click.echo(json.dumps(error.to_dict(), indent=2))
    if error.details:
        click.echo(error.details.rstrip(), err=True)
    click.echo(f"error: {error.message}", err=True)
    if error.hint:
        click.echo(f"hint: {error.hint}", err=True)
    return error.exit_code


def _interrupt(signum: int, _frame: object) -> None:
    """SIGTERM and SIGHUP unwind like Ctrl-C: every `finally` runs, so harness process groups
    are killed and set-aside edits restored rather than left behind."""
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _click_error(exc: click.ClickException) -> UsageError:
    """click's own refusals (an unknown option, a missing argument, a bad value) said as kgit
    says every error: the usage line, `error:` and a `hint:`, exit 2, JSON under --json."""
    ctx = getattr(exc, "ctx", None)
    path = ctx.command_path if ctx is not None else "kgit"
    if isinstance(exc, click.UsageError) and ctx is not None and exc.message == ctx.get_help():
        # A group called without its command (click's NoArgsIsHelpError): the help is the answer.
        return UsageError(
            f"{path} needs a command",
            hint=f"{path} COMMAND; {path} COMMAND --help explains one",
            details=exc.message,
        )
    usage = ctx.get_usage() if ctx is not None else None
    return UsageError(exc.format_message(), hint=f"{path} --help shows the usage", details=usage)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    as_json = "--json" in args
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _interrupt)
    try:
        return _run(args, as_json)
    finally:
        progress.stop()


def _run(args: list[str], as_json: bool) -> int:
    try:
        cli.main(args=args, prog_name="kgit", standalone_mode=False)
    except KgitError as error:
        return _report(error, as_json)
    except click.exceptions.Exit as done:
        return done.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt) as stop:
        # click turns Ctrl-C (and our SIGTERM/SIGHUP) into Abort; a declined prompt is one too.
        cause = stop if isinstance(stop, KeyboardInterrupt) else stop.__cause__
        if isinstance(cause, KeyboardInterrupt):
            name = cause.args[0] if cause.args else "SIGINT"
            click.echo(
                f"kgit: interrupted by {name}; kgit status says where things stand", err=True
            )
            return EXIT_INTERRUPTED
        click.echo("aborted", err=True)
        return 1
    except click.ClickException as exc:
        return _report(_click_error(exc), as_json)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    except Exception as exc:  # a bug: keep the traceback for the report, not for the user
        path = _crash_log(exc)
        crash = KgitError(
            f"kgit crashed: {type(exc).__name__}: {exc}",
            hint=f"please report it with the log {path}",
        )
        crash.exit_code = EXIT_CRASH
        return _report(crash, as_json)
    return 0


# --- review commands (report, export, import, csv) ---


@cli.command()
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report to FILE [default: stdout].",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "html"]),
    default="markdown",
    show_default=True,
    help="html: one self-contained page (inline CSS, plots embedded as PNG).",
)
@click.option(
    "--plots",
    "plots_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the PNG plots to DIR and link them (html embeds them; with html and no DIR "
    "they are drawn in a temporary folder).",
)
@json_option
@click.pass_obj
def report(obj: Ctx, output: Path | None, fmt: str, plots_dir: Path | None, as_json: bool) -> None:
    """The campaign's report, from the git record alone.

    \b
    Target, baseline, every round (hypothesis, diffstat, per-shape results with deltas and
    SNR, verdict), the current best, directions that did not work, the trend table (rule 8)
    and its monotonicity check (rule 9), best vs baseline per shape, the termination check
    (rule 10) and a static real-training audit of the best line (rule 11).
    """
    import tempfile

    from kgit.views.document import to_html, to_markdown
    from kgit.views.report import plots_for, public, report_data, report_document

    campaign = obj.campaign()
    data = report_data(campaign)
    with tempfile.TemporaryDirectory(prefix="kgit-plots-") as tmp:
        folder = plots_dir or (Path(tmp) if fmt == "html" and not as_json else None)
        if folder is not None:
            try:
                data["plots"] = [str(p) for p in plots_for(data, campaign, folder)]
            except OSError as exc:
                raise UsageError(
                    f"cannot write the plots into {folder}: {exc.strerror or exc}",
                    hint="--plots DIR: a new or existing folder you can write to",
                ) from None
        if as_json:
            emit(public(data), True, str)
            return
        doc = report_document(data)
        title = f"kgit report: {campaign.name}"
        text = to_html(doc, title) if fmt == "html" else to_markdown(doc, _link_base(output))
    if output is None:
        click.echo(text, nl=False)
    else:
        try:
            output.write_text(text)
        except OSError as exc:
            raise UsageError(
                f"cannot write {output}: {exc.strerror or exc}",
                hint="write the report into an existing folder you can write to",
            ) from None
        obj.say(f"report written to {output}")


def _link_base(output: Path | None) -> Path:
    return (output.parent if output is not None else Path.cwd()).resolve()


@cli.command("export")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@json_option
@click.pass_obj
def export_cmd(obj: Ctx, folder: Path, as_json: bool) -> None:
    """Write the campaign as the seed's campaign folder in FOLDER.

    \b
    manifest.yaml, quick_test_bench.py, logs/optimize.md, logs/performance_trend.md,
    rounds/round-N/{summary.md, artifacts/benchmark.csv, kernel_snapshot/}.
    """
    from kgit.views.seed_export import export_campaign

    result = export_campaign(obj.campaign(), folder)
    emit(result, as_json, lambda r: f"exported {r['rounds']} rounds to {r['folder']}")


@cli.command("import")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--name",
    help="Campaign name [default: the folder's name]. Must not exist in this repository.",
)
@json_option
@click.pass_obj
def import_cmd(obj: Ctx, folder: Path, name: str | None, as_json: bool) -> None:
    """Turn a seed campaign folder into a kgit campaign of this repository.

    Kernel snapshots become commits on a new best line from HEAD (accepted rounds) or
    commits kept under refs/kgit/NAME/rounds/N (rolled-back rounds); summaries and
    benchmark CSVs become the rounds' notes. The work tree is not touched.
    """
    from kgit.engine.seed_import import import_campaign

    result = import_campaign(obj.repo(), folder, name or folder.resolve().name)
    emit(
        result,
        as_json,
        lambda r: (
            f"campaign {r['campaign']} imported: {r['rounds']} rounds, best line {r['best']}\n"
            f"next: git checkout {r['best'].removeprefix('refs/heads/')}; kgit log"
        ),
    )


@cli.group(context_settings=CONTEXT)
def csv() -> None:
    """Benchmark CSVs, for agents."""


@csv.command("parse")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--metric",
    help="Primary metric [default: the campaign's, else Forward TFLOPS].",
)
@json_option
@click.pass_obj
def csv_parse(obj: Ctx, file: Path, metric: str | None, as_json: bool) -> None:
    """Read a harness summary CSV strictly: rows, all_pass and the aggregate (geomean over
    PASS shapes; 0 when any shape failed). Exits 0 whenever the file parses."""
    from kgit.records.yamltext import read_capped
    from kgit.views.bench_csv import MAX_CSV_BYTES, parse_csv_data, render_csv_data

    if metric is None:
        try:
            metric = obj.campaign().manifest.primary_metric
        except KgitError:
            metric = "Forward TFLOPS"
    data = read_capped(file, MAX_CSV_BYTES, "summary CSV")
    emit(parse_csv_data(data, metric, str(file)), as_json, render_csv_data)


# --- the gate audit ---


@cli.group(context_settings=CONTEXT)
def gate() -> None:
    """The correctness gate (the manifest's test_command, run by the commit hook)."""


@gate.command("audit")
@click.option(
    "--max",
    "count",
    type=click.IntRange(1, 50),
    metavar="N",
    help="Mutants to run the gate on [default: the manifest's gate_audit_mutants, or 6 when "
    "that is 0].",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=1),
    metavar="S",
    help="Seconds one mutant's gate may run before it counts as a hang (caught) [default: 3x "
    "the unmutated gate's time + 10 s, at least 30 s, at most timeout_s].",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 1 when a mutant survives or the gate never loads a kernel file (for agents "
    "and CI); without it the audit warns and exits 0.",
)
@json_option
@click.pass_obj
def gate_audit(
    obj: Ctx, count: int | None, timeout_s: float | None, strict: bool, as_json: bool
) -> None:
    """Check that the gate catches small bugs planted in the kernel (a mutation check).

    \b
    A gate that does not exercise the kernel passes anything: tests that check only
    shapes and dtypes, or compare the kernel with itself, or use power-of-two shapes only.
    kgit copies the best line's commit into its own work tree (.git/kgit/worktrees/
    NAME/audit; your work tree is never touched) and runs the gate there:
      1. on the unmutated kernel: it must pass (its time sets each mutant's timeout);
      2. with each kernel_source file made unloadable: a gate that still passes never
         loads that file (it may import an installed copy);
      3. on N mutants, one at a time: a reduction divided by the padded block width
         (N -> BLOCK_N), masked-off lanes reading another value (other=0.0 -> 1.0), a
         load or store without its mask, a bound off by one (< -> <=), an arithmetic
         operator swapped, an integer off by one.
    A mutant the gate fails on is caught (a hang counts as caught); one it passes has
    SURVIVED: a bug the gate cannot see. Python/Triton files are mutated through their
    syntax tree, C/C++/CUDA/HIP files by tokens (with rebuild_command, a mutant that does
    not build is set aside, not counted). The same source always gives the same mutants.
    Also warns when no target shape has a tail (every M, N, K a multiple of the
    BLOCK_*/TILE_* constant that tiles it; sizes chosen at run time are not seen). The audit is stored in the campaign record (kgit status,
    kgit report); kgit baseline runs one with the manifest's gate_audit_mutants (0: off).
    """
    from kgit.engine.gate_audit import run_audit
    from kgit.views.gate_audit import audit_data, render_audit

    campaign = obj.campaign()
    wanted = count or campaign.manifest.gate_audit_mutants or 6
    audit = run_audit(
        campaign, obj.say, count=wanted, trigger="kgit gate audit", timeout_s=timeout_s
    )
    emit(audit_data(audit), as_json, render_audit)
    if strict and audit.weak:
        sys.exit(1)  # the gate let a wrong kernel through: a refusal, facts already printed
