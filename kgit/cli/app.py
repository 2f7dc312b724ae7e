"""The command line's frame: the `cli` group, its context (the campaign, quiet, progress), the
output (`emit`: a view's text, or JSON for agents), the hidden `hook` entry of the commit gate,
and `main`, where errors become exit codes and nowhere else: 1 refused, 2 usage, 3 crash (with
a log). The commands live in the `cmd_*` modules beside it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from kgit import __version__, progress
from kgit.errors import EXIT_CRASH, EXIT_INTERRUPTED, KgitError, UsageError
from kgit.records.results import Result, is_result, to_json

if TYPE_CHECKING:
    from kgit.engine.campaign import Campaign
    from kgit.engine.read_only import CampaignReader
    from kgit.gitdoor import Repo

R = TypeVar("R", bound=Result)

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

    def campaign(self, *, branch: str | None = None) -> Campaign:
        """The campaign the command is for (BRANCH: the checked-out branch, where the caller
        read it already)."""
        from kgit.engine.campaign import Campaign, resolve_campaign

        repo = self.repo()
        return Campaign.load(repo, resolve_campaign(repo, self.campaign_name, branch=branch))

    def reader(self) -> CampaignReader:
        """The campaign, read-only: what a view gets (kgit/records/reader.py)."""
        from kgit.engine.read_only import CampaignReader

        return CampaignReader(self.campaign())

    def say(self, message: str) -> None:
        if not self.quiet:
            progress.say(message)

    @property
    def voice(self) -> progress.Voice:
        """What the command says, and whether its harnesses' and tests' output is shown: both
        silenced by -q."""
        return progress.Voice(self.say, echo=not self.quiet)

    def long_step(self) -> None:
        """This command runs harnesses or tests for a while: on a terminal, a live line shows
        the step in progress and its elapsed time (kgit/progress.py)."""
        progress.start(self.quiet)


def emit(result: R, as_json: bool, render: Callable[[R], str]) -> None:
    """A command's RESULT, a typed result (kgit/records/results.py): RENDER's text, or under
    --json the document `to_json` makes of it. Anything else, a plain dict included, is a
    programming error: the JSON documents follow from the result types (docs/json.md)."""
    if not is_result(result):
        raise TypeError(
            f"emit takes a typed result (a Result dataclass, kgit/records/results.py), not "
            f"{type(result).__name__}"
        )
    progress.stop()  # the result, not a live line, ends the command's output
    if as_json:
        click.echo(json.dumps(to_json(result), indent=2))
    else:
        click.echo(render(result))


def emit_line(result: R, as_json: bool, render: Callable[[R], str]) -> None:
    """RESULT as `emit` says it, its JSON on one line: a command that reports as it goes
    (`kgit worker --json`: one line per round, then the summary)."""
    if not is_result(result):
        raise TypeError(f"emit_line takes a typed result, not {type(result).__name__}")
    progress.stop()
    click.echo(json.dumps(to_json(result)) if as_json else render(result))


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
      kgit finish                               final acceptance: re-gated, re-measured, a branch
      kgit report [--format html]               the campaign's report (trend, per-shape gains)
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


@cli.command(hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook(name: str, args: tuple[str, ...]) -> None:
    """Entry point of the installed hook shims."""
    from kgit.engine.guards import hookrun

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
