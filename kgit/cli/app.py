"""The command line's click frame: the `cli` group, its options, the hidden `hook` entry of the
commit gate, and `run_click`, which maps click's own refusals onto kgit's errors. The commands
live in the `cmd_*` modules beside it, each loaded when its command runs (or when the help lists
them all); `main` (kgit/cli/entry.py) turns errors into exit codes.
"""

from __future__ import annotations

import importlib
import sys

import click

from kgit import __version__
from kgit.cli.context import Ctx
from kgit.cli.output import echo, emit, emit_line
from kgit.errors import UsageError

__all__ = ["CONTEXT", "Ctx", "cli", "emit", "emit_line", "json_option", "run_click"]

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

# Each top-level command and the module under kgit/cli/ that defines it. Named, not imported:
# the modules import this one to register on `cli`, and a command line loads only its own
# (tests/test_quick.py checks this table against what the modules register).
COMMANDS = {
    "hooks": "cmd_guards",
    "trust": "cmd_guards",
    "gate": "cmd_guards",
    "init": "cmd_lifecycle",
    "baseline": "cmd_lifecycle",
    "demo": "cmd_lifecycle",
    "finish": "cmd_lifecycle",
    "manifest": "cmd_lifecycle",
    "campaign": "cmd_lifecycle",
    "gc": "cmd_lifecycle",
    "_baseline-audit": "cmd_lifecycle",
    "status": "cmd_review",
    "doctor": "cmd_review",
    "log": "cmd_review",
    "show": "cmd_review",
    "tips": "cmd_review",
    "report": "cmd_review",
    "export": "cmd_review",
    "import": "cmd_review",
    "csv": "cmd_review",
    "round": "cmd_rounds",
    "worker": "cmd_rounds",
    "push": "cmd_sharing",
    "pull": "cmd_sharing",
}


class LazyGroup(click.Group):
    """A group whose commands are registered by their modules, loaded on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        for module in dict.fromkeys(COMMANDS.values()):
            importlib.import_module(f"kgit.cli.{module}")
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(f"kgit.cli.{COMMANDS[cmd_name]}")
        return super().get_command(ctx, cmd_name)


json_option = click.option(
    "--json", "as_json", is_flag=True, help="Machine-readable output (for agents)."
)


@click.group(cls=LazyGroup, context_settings=CONTEXT)
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


def run_click(args: list[str]) -> int:
    """ARGS read and run by click; its exit code. click's own refusals become kgit's errors
    (raised for `main` to report), Ctrl-C the KeyboardInterrupt it was."""
    try:
        cli.main(args=args, prog_name="kgit", standalone_mode=False)
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.exceptions.Abort as stop:
        # click turns Ctrl-C (and our SIGTERM/SIGHUP) into Abort; a declined prompt is one too.
        if isinstance(stop.__cause__, KeyboardInterrupt):
            raise stop.__cause__ from None
        echo("aborted", err=True)
        return 1
    except click.ClickException as exc:
        raise _click_error(exc) from None
    return 0
