"""Reviewing a campaign: status, doctor, log, show, tips, report, export/import, csv."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from kgit.cli import quick
from kgit.cli.app import CONTEXT, Ctx, cli, emit, json_option
from kgit.errors import KgitError, UsageError


@cli.command()
@click.option("--all", "all_campaigns", is_flag=True, help="List every campaign of the repository.")
@json_option
@click.pass_obj
def status(obj: Ctx, all_campaigns: bool, as_json: bool) -> None:
    """Where the campaign stands and what to do next."""
    quick.status(obj, all_campaigns, as_json)


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
    from kgit.engine.lifecycle.doctor import diagnose, fix
    from kgit.records.campaign_results import DoctorReport
    from kgit.views.doctor_text import render_doctor

    campaign = obj.campaign()
    found = diagnose(campaign)
    fixed = fix(campaign, found, obj.say) if apply_fixes else []
    left = diagnose(campaign.reload()) if fixed else found
    data = DoctorReport(campaign.name, not left, tuple(left), tuple(fixed))
    emit(data, as_json, render_doctor)
    if left:
        sys.exit(1)  # problems remain: a refusal, with the facts already printed


@cli.command()
@json_option
@click.option(
    "-v", "--verbose", is_flag=True, help="Show each hypothesis whole (the table cuts long ones)."
)
@click.pass_obj
def log(obj: Ctx, as_json: bool, verbose: bool) -> None:
    """The whole lineage, rolled-back rounds included."""
    quick.log(obj, as_json, verbose)


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
    data, render = show_round(obj.reader(), int(digits), with_csv)
    emit(data, as_json, render)


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
    from kgit.engine.rounds.keep_tips import campaign_tips_ref, render_tip_line, tips_for
    from kgit.records.review_results import Tips

    campaign = ctx.obj.campaign()
    found = Tips(tuple(tips_for(campaign)))

    def render(shown: Tips) -> str:
        if not shown.tips:
            return f"no tips yet for this target ({campaign_tips_ref(campaign)})"
        return "\n".join(f"- {render_tip_line(tip)}" for tip in shown.tips)

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
    from kgit.engine.rounds.keep_tips import add_tip, campaign_tips_ref
    from kgit.records.review_results import TipRecorded

    campaign = obj.campaign()
    tip = add_tip(campaign, context_, signal, takeaway, applicability, round_number)
    emit(
        TipRecorded(tip),
        as_json,
        lambda t: f"tip recorded in {campaign_tips_ref(campaign)}: {t.tip.takeaway}",
    )


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
    SNR, verdict), the current best, directions that did not work, the performance trend
    table and its monotonic-progress check, best vs baseline per shape, the termination check
    and a static audit of the best line for training shortcuts (docs/rules.md maps each to the
    campaign method's numbered rules).
    """
    import tempfile

    from kgit.engine.guards.audit_background import audit_progress
    from kgit.views.campaign_report import plots_for, report_data, report_document
    from kgit.views.document import to_html, to_markdown

    campaign = obj.reader()
    data = replace(report_data(campaign), gate_audit_background=audit_progress(obj.campaign()))
    with tempfile.TemporaryDirectory(prefix="kgit-plots-") as tmp:
        folder = plots_dir or (Path(tmp) if fmt == "html" and not as_json else None)
        if folder is not None:
            try:
                plots = tuple(str(p) for p in plots_for(data, campaign, folder))
            except OSError as exc:
                raise UsageError(
                    f"cannot write the plots into {folder}: {exc.strerror or exc}",
                    hint="--plots DIR: a new or existing folder you can write to",
                ) from None
            data = replace(data, plots=plots)
        if as_json:
            emit(data, True, str)
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
    """Write the campaign in FOLDER as a campaign folder of the method's original layout.

    \b
    manifest.yaml, quick_test_bench.py, logs/optimize.md, logs/performance_trend.md,
    rounds/round-N/{summary.md, artifacts/benchmark.csv, kernel_snapshot/}.
    """
    from kgit.views.folder_export import export_campaign

    result = export_campaign(obj.reader(), folder)
    emit(result, as_json, lambda r: f"exported {r.rounds} rounds to {r.folder}")


@cli.command("import")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--name",
    help="Campaign name [default: the folder's name]. Must not exist in this repository.",
)
@json_option
@click.pass_obj
def import_cmd(obj: Ctx, folder: Path, name: str | None, as_json: bool) -> None:
    """Turn a campaign folder into a kgit campaign of this repository.

    The folder has the method's original layout, as `kgit export` writes it.
    Kernel snapshots become commits on a new best line from HEAD (accepted rounds) or
    commits kept under refs/kgit/NAME/rounds/N (rolled-back rounds); summaries and
    benchmark CSVs become the rounds' notes. The work tree is not touched.
    """
    from kgit.engine.lifecycle.folder_import import import_campaign

    result = import_campaign(obj.repo(), folder, name or folder.resolve().name)
    emit(
        result,
        as_json,
        lambda r: (
            f"campaign {r.campaign} imported: {r.rounds} rounds, best line {r.best}\n"
            f"next: git checkout {r.best.removeprefix('refs/heads/')}; kgit log"
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
