"""A campaign's life: init, baseline, demo, manifest edit, campaign delete, finish, gc."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kgit import progress
from kgit.cli.app import CONTEXT, Ctx, cli, emit, json_option
from kgit.errors import KgitError, UsageError
from kgit.views.commands import (
    audit_line,
    background_line,
    render_gc,
    render_revision,
    render_template,
)

if TYPE_CHECKING:
    from kgit.records.manifest import Manifest


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
    "--shapes-for",
    type=click.Choice(["gpu", "cpu"]),
    help="With --from-template: draft GPU-sized target shapes, or CPU-sized ones in fp32 "
    "(Triton's interpreter) [default: gpu when this machine has one].",
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
    shapes_for: str | None,
    ask: bool | None,
    **overrides: Any,
) -> None:
    """Define the target and create campaign NAME, starting at HEAD.

    Fields come from the manifest and the flags; on a terminal kgit asks for each
    missing one (with the defaults it can infer), shows the whole target and waits
    for your confirmation. Without a terminal a missing field is an error that lists
    them all. Then: the best line kgit/NAME/best at HEAD, the manifest recorded under
    refs/kgit/NAME/campaign, the commit gate installed (chaining any existing hook),
    and plain `git log` set to show each round's summary. kgit's notes do not follow an
    amend or a rebase: the new commit has no verdict until it is validated.
    """
    from kgit.engine.lifecycle.define import load_shapes_file, write_template
    from kgit.engine.lifecycle.init import init_campaign

    fields = {k: v for k, v in overrides.items() if v is not None}
    if kernel_source:
        fields["kernel_source"] = list(kernel_source)
    if shapes_file is not None:
        fields["target_shapes"] = load_shapes_file(shapes_file)
    if shapes_for and not from_template:
        raise UsageError("--shapes-for drafts a template's shapes", hint="add --from-template KIND")
    if from_template:
        gpu = None if shapes_for is None else shapes_for == "gpu"
        written = write_template(obj.repo().root, from_template, fields, gpu=gpu)
        emit(written, as_json, lambda r: render_template(name, r))
        return
    manifest = _confirmed_manifest(obj, name, manifest_file, fields, ask)
    result = init_campaign(obj.repo(), name, manifest)
    emit(
        result,
        as_json,
        lambda r: (
            f"campaign {r.campaign} created at {r.base[:10]}; best line {r.best}\n"
            f"hooks installed: {', '.join(r.hooks)}\nnext: kgit baseline"
        ),
    )


def _confirmed_manifest(
    obj: Ctx, name: str, manifest_file: Path | None, fields: dict[str, Any], ask: bool | None
) -> Manifest:
    """The manifest of MANIFEST_FILE with FIELDS over it; a missing field asked for (on a
    terminal, or with ASK) and the whole target confirmed, else an error that lists them."""
    from kgit.engine.lifecycle.define import (
        ask_missing,
        missing_fields,
        render_target,
        require_complete,
    )
    from kgit.records.manifest import load_manifest_fields, parse_manifest
    from kgit.records.yamltext import read_text_capped

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
    return manifest


def _prompt(question: str, default: str | None) -> str:
    # Prompts go to stderr so that --json output stays one JSON document on stdout.
    answer: str = click.prompt(question, default=default, show_default=bool(default), err=True)
    return answer


@cli.command()
@click.option(
    "--wait-audit",
    is_flag=True,
    help="Run the gate audit inline and return once it is recorded [default: it runs in the "
    "background, holding the device, and kgit status says when it ends; also "
    "KGIT_AUDIT_INLINE=1].",
)
@json_option
@click.pass_obj
def baseline(obj: Ctx, wait_audit: bool, as_json: bool) -> None:
    """Round-1: run the tests, then the harness on every target shape.

    Freezes the CSV header and the protected files (the harness), and picks the 3-5
    representative shapes that quick validation will use. The quick gate audit that follows
    runs in the background unless --wait-audit.
    """
    from kgit.engine.lifecycle.baseline import baseline as run_baseline

    obj.long_step()
    with progress.collecting() as phases:
        result = run_baseline(obj.campaign(), obj.voice, wait=wait_audit)
    obj.say(phases.line())
    emit(
        replace(result, phases=phases.to_dict()),
        as_json,
        lambda r: (
            f"baseline recorded on {r.commit[:10]}: {r.metric} aggregate {r.aggregate:.4g}\n"
            f"representative shapes: {', '.join(r.representative_shapes)}\n"
            f"{audit_line(r.gate_audit)}"
            f"{background_line(r.gate_audit_background)}"
            'next: kgit round start "HYPOTHESIS"'
        ),
    )


@cli.command("_baseline-audit", hidden=True)
@click.pass_obj
def baseline_audit(obj: Ctx) -> None:
    """The baseline's quick gate audit, in the background (started by kgit baseline)."""
    from kgit.engine.guards.audit import background_audit

    # Its standard error is the audit's log: the gate's output is kept there whatever -q says.
    background_audit(obj.campaign(), progress.Voice(obj.say, echo=True))


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
    from kgit.engine.read_only import CampaignReader
    from kgit.engine.rounds.finish import check_finish, record_finish
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
        obj.campaign(),
        obj.voice,
        allow_paths=allow_paths,
        confirm=confirm,
    )
    final_note = render_final_note(CampaignReader(finishing.finished), finishing.data)
    result = record_finish(finishing, final_note)
    emit(result, as_json, render_finish)


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
    from kgit.engine.rounds.revise import edit_manifest, editable_text
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
    for warning in result.warnings:
        obj.say(f"warning: {warning}")
    emit(result, as_json, render_revision)


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
    from kgit.engine.lifecycle.delete import campaign_refs, delete_campaign

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
            f"campaign {r.campaign} deleted ({len(r.deleted_refs)} refs"
            + (f", {len(r.work_trees)} work trees" if r.work_trees else "")
            + ")"
            + ("; HEAD detached where its branch was" if r.detached_head else "")
        ),
    )


@cli.command("gc")
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
@json_option
@click.pass_obj
def gc(obj: Ctx, dry_run: bool, as_json: bool) -> None:
    """Remove kgit's measuring trees that nothing will measure in again.

    \b
    Under .git/kgit/worktrees: those of a deleted campaign, of a finished one, and
    of a round's linked work tree that is gone; git then forgets the work trees
    whose folders are gone. A running campaign's trees stay (each is checked out
    again, sealed, when a side needs it). docs/disk-and-history.md says what they cost.
    """
    from kgit.engine.lifecycle.gc import collect

    emit(collect(obj.repo(), dry_run=dry_run), as_json, render_gc)
