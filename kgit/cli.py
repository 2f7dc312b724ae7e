"""The command line: thin click commands over the engine and the views.

Errors become exit codes here and nowhere else: 1 refused, 2 usage, 3 crash (with a log).
torch and triton are never imported on this path.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kgit import __version__
from kgit.errors import EXIT_CRASH, EXIT_USAGE, KgitError, UsageError

if TYPE_CHECKING:
    from kgit.engine.store import Campaign
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
        from kgit.engine.store import Campaign, resolve_campaign

        repo = self.repo()
        return Campaign.load(repo, resolve_campaign(repo, self.campaign_name))

    def say(self, message: str) -> None:
        if not self.quiet:
            click.echo(f"kgit: {message}", err=True)


def emit(data: Any, as_json: bool, render: Callable[[Any], str]) -> None:
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

    \b
    Everything lives in git: branches kgit/<campaign>/best and kgit/<campaign>/round-<N>,
    refs/kgit/<campaign>/ (campaign record, every round's commit), and notes
    refs/notes/kgit/<campaign>/{rounds,bench,gate}.  Try it: kgit demo
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
@json_option
@click.pass_obj
def init(obj: Ctx, name: str, manifest_file: Path | None, as_json: bool, **overrides: Any) -> None:
    """Create campaign NAME from a manifest, starting at HEAD.

    Creates the best line kgit/NAME/best at HEAD, records the manifest under
    refs/kgit/NAME/campaign, installs the commit gate (chaining any existing hook)
    and tells git to carry kgit's notes through amend and rebase.
    """
    from kgit.engine.setup import init_campaign
    from kgit.records.manifest import parse_manifest

    text, source = "", "command-line fields"
    if manifest_file is not None:
        try:
            text = manifest_file.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(
                f"cannot read {manifest_file}: {exc}", hint="pass the path of a manifest.yaml"
            ) from None
        source = str(manifest_file)
    fields = {k: v for k, v in overrides.items() if v is not None}
    manifest, warnings = parse_manifest(text, source, fields)
    for warning in warnings:
        obj.say(f"warning: {warning}")
    result = init_campaign(obj.repo(), name, manifest)
    emit(
        result,
        as_json,
        lambda r: (
            f"campaign {r['campaign']} created at {r['base'][:10]}; best line {r['best']}\n"
            f"hooks installed: {', '.join(r['hooks'])}\nnext: kgit baseline"
        ),
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

    result = run_baseline(obj.campaign(), obj.say, echo=not obj.quiet)
    emit(
        result,
        as_json,
        lambda r: (
            f"baseline recorded on {r['commit'][:10]}: {r['metric']} aggregate {r['aggregate']:.4g}\n"
            f"representative shapes: {', '.join(r['representative_shapes'])}\n"
            'next: kgit round start "HYPOTHESIS"'
        ),
    )


@cli.group(context_settings=CONTEXT)
def round() -> None:
    """One hypothesis, one change: start, validate, accept or rollback."""


@round.command("start")
@click.argument("hypothesis")
@json_option
@click.pass_obj
def round_start(obj: Ctx, hypothesis: str, as_json: bool) -> None:
    """Begin the next round with its HYPOTHESIS, on a new branch from the best line."""
    from kgit.engine.rounds import start_round

    result = start_round(obj.campaign(), hypothesis)
    emit(
        result,
        as_json,
        lambda r: (
            f"round-{r['round']} started on {r['branch'].removeprefix('refs/heads/')}\n"
            "next: change the kernel, git commit (the hook gates it), kgit round validate"
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

    result = validate_round(obj.campaign(), obj.say, full=full, echo=not obj.quiet)
    emit(result, as_json, _render_verdict)


def _render_verdict(r: dict[str, Any]) -> str:
    lines = [f"round-{r['round']}: {r['decision'] or r['status']}"]
    lines += [f"  - {reason}" for reason in r["reasons"]]
    if r["delta_vs_best_pct"] is not None:
        lines.append(f"aggregate {r['aggregate']:.4g} ({r['delta_vs_best_pct']:+.3f}% vs best)")
    accepts = r["decision"] in ("ACCEPTED", "ACCEPTED (trade-off)")
    lines.append(
        "next: kgit round accept" if accepts else 'next: kgit round rollback --reason "..."'
    )
    return "\n".join(lines)


@round.command("accept")
@json_option
@click.pass_obj
def round_accept(obj: Ctx, as_json: bool) -> None:
    """Fast-forward the best line to the round's commit (only on an accepting verdict)."""
    from kgit.engine.rounds import accept_round

    result = accept_round(obj.campaign(), obj.say, echo=not obj.quiet)
    emit(
        result,
        as_json,
        lambda r: f"round-{r['round']} {r['status']}; best line at {r['best'][:10]}",
    )


@round.command("rollback")
@click.option("--reason", help="Why it failed (root cause, lesson); kept in the round's note.")
@json_option
@click.pass_obj
def round_rollback(obj: Ctx, reason: str | None, as_json: bool) -> None:
    """Return to the best line; the round's commit and notes stay reachable."""
    from kgit.engine.rounds import rollback_round

    result = rollback_round(obj.campaign(), reason, obj.say)
    emit(
        result,
        as_json,
        lambda r: (
            f"round-{r['round']} ROLLED BACK"
            + (f"; commit {r['commit'][:10]} kept at {r['kept_at']}" if r["commit"] else "")
        ),
    )


@cli.command()
@click.option("--all", "all_campaigns", is_flag=True, help="List every campaign of the repository.")
@json_option
@click.pass_obj
def status(obj: Ctx, all_campaigns: bool, as_json: bool) -> None:
    """Where the campaign stands and what to do next."""
    from kgit.engine.store import list_campaigns
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
@json_option
@click.pass_obj
def log(obj: Ctx, as_json: bool) -> None:
    """The whole lineage, rolled-back rounds included."""
    from kgit.views.lineage import log_rows, render_log

    campaign = obj.campaign()
    emit(log_rows(campaign, campaign.all_rounds()), as_json, render_log)


@cli.command()
@click.argument("number", metavar="ROUND")
@click.option("--csv", "with_csv", is_flag=True, help="Also print the round's benchmark CSV.")
@json_option
@click.pass_obj
def show(obj: Ctx, number: str, with_csv: bool, as_json: bool) -> None:
    """One round's summary (ROUND: 3 or round-3): verdict, reasons, per-shape results."""
    from kgit.views.lineage import render_show, show_data

    digits = number.removeprefix("round-")
    if not digits.isdigit():
        raise UsageError(f"{number!r} is not a round number", hint="kgit show 3 (or round-3)")
    data = show_data(obj.campaign(), int(digits))
    if data is None:
        raise UsageError(f"round-{digits} has no record", hint="kgit log lists the recorded rounds")
    emit(
        data,
        as_json,
        lambda d: render_show(d) + (f"\n\n{d['csv']}" if with_csv and d["csv"] else ""),
    )


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


@cli.group(context_settings=CONTEXT)
def hooks() -> None:
    """The commit gate's hooks."""


@hooks.command("install")
@click.pass_obj
def hooks_install(obj: Ctx) -> None:
    """(Re)install kgit's pre-commit and prepare-commit-msg hooks, chaining existing ones."""
    from kgit.engine.setup import install_hooks

    click.echo("installed: " + ", ".join(install_hooks(obj.repo())))


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
        raise UsageError(f"unknown hook {name!r}")
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


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    as_json = "--json" in args
    try:
        cli.main(args=args, prog_name="kgit", standalone_mode=False)
    except KgitError as error:
        return _report(error, as_json)
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 1
    except click.ClickException as exc:
        exc.show()
        return EXIT_USAGE
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
