"""`kgit status` and `kgit log` without click (kgit/cli/quick.py): the quick path reads a plain
command line as click would, leaves click every other one, and the command modules load on use."""

from __future__ import annotations

import errno
import importlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

from kgit.cli import app, entry
from kgit.cli.quick import quick_command
from tests.conftest import KgitResult, run_kgit

READ = [
    ["status"],
    ["status", "--json"],
    ["-q", "status", "--all"],
    ["status", "--all", "--json"],
    ["-c", "c1", "status", "--json", "--json"],
    ["--campaign", "c1", "-q", "log"],
    ["--campaign=c1", "log", "-v"],
    ["log", "--json", "--verbose"],
    ["-c", "nope", "status", "--json"],
    ["-c", "status", "log"],
    ["--campaign=x/y", "log"],
]


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--help"],
        ["-h"],
        ["--version"],
        ["status", "--help"],
        ["log", "-h"],
        ["-c"],
        ["-c", "-q", "status"],
        ["-c", "", "status"],
        ["--campaign=", "status"],
        ["-qc", "c1", "status"],
        ["-cc1", "status"],
        ["--", "status"],
        ["status", "--bogus"],
        ["status", "-v"],
        ["log", "--all"],
        ["status", "--json=1"],
        ["status", "log"],
        ["show", "3"],
        ["round", "status"],
        ["status", "-q"],
    ],
)
def test_click_reads_what_the_quick_parser_does_not(args: list[str]) -> None:
    assert quick_command(args) is None


@pytest.mark.parametrize("args", READ)
def test_the_quick_parser_reads_a_plain_command_line(args: list[str]) -> None:
    assert quick_command(args) is not None


def test_shell_completion_is_left_to_click(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_KGIT_COMPLETE", "bash_complete")
    assert quick_command(["status"]) is None


def through_click(monkeypatch: pytest.MonkeyPatch, *args: str) -> KgitResult:
    with monkeypatch.context() as patch:
        patch.setattr(entry, "quick_command", lambda _args: None)
        return run_kgit(*args)


@pytest.mark.parametrize("args", READ)
def test_the_quick_path_says_what_click_says(
    campaign: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    quick, clicked = run_kgit(*args), through_click(monkeypatch, *args)
    assert (quick.code, quick.out, quick.err) == (clicked.code, clicked.out, clicked.err)
    assert quick.out or quick.err


@pytest.mark.parametrize("value", ["c1", "nope", ""])
def test_the_campaign_variable_counts_as_click_counts_it(
    campaign: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("KGIT_CAMPAIGN", value)
    for args in (["status", "--json"], ["-c", "c1", "log"]):
        quick, clicked = run_kgit(*args), through_click(monkeypatch, *args)
        assert (quick.code, quick.out, quick.err) == (clicked.code, clicked.out, clicked.err)
    assert run_kgit("status").code == (2 if value == "nope" else 0)


def test_the_command_table_names_what_the_modules_register() -> None:
    for module in set(app.COMMANDS.values()):
        importlib.import_module(f"kgit.cli.{module}")
    registered = {
        name: command.callback.__module__.removeprefix("kgit.cli.")
        for name, command in app.cli.commands.items()
        if command.callback is not None and command.callback.__module__ != app.__name__
    }
    assert registered == app.COMMANDS


def test_a_command_line_loads_only_its_own_command_module(campaign: Path) -> None:
    """`kgit show` loads the module of its command, not the others; the help lists them all."""
    probe = (
        "import sys, runpy; sys.argv = ['kgit', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('kgit', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('LOADED', sorted(m for m in sys.modules if m.startswith('kgit.cli.cmd_')), "
        "file=sys.stderr)\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe, "show", "1"], cwd=campaign, capture_output=True, text=True
    )
    assert "LOADED ['kgit.cli.cmd_review']" in shown.stderr, shown.stderr[-2000:]
    assert "BASELINE" in shown.stdout
    listed = run_kgit("--help").out
    assert all(f"  {name} " in listed for name in app.COMMANDS if not name.startswith("_"))


class ClosedPipe(io.StringIO):
    """Standard output whose reader went away (`kgit log | head -1`)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def closed_pipe_run(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str]:
    err = io.StringIO()
    with monkeypatch.context() as patch:
        patch.setattr(sys, "stdout", ClosedPipe())
        patch.setattr(sys, "stderr", err)
        code = entry.main(list(args))
        sys.stdout.flush()  # the interpreter's own flush at exit: quiet now
    return code, err.getvalue()


def test_a_reader_gone_away_ends_the_quick_path_as_it_ends_click(
    campaign: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kgit log | head -1` on a long log: click quiets both streams and exits 1; the quick
    path crashed (exit 3, a crash log) before it did the same."""
    quick = closed_pipe_run(monkeypatch, "log")
    with monkeypatch.context() as patch:
        patch.setattr(entry, "quick_command", lambda _args: None)
        clicked = closed_pipe_run(monkeypatch, "log")
    assert quick == clicked == (1, "")
    assert not (campaign / ".git" / "kgit" / "crashes").exists()


def test_ctrl_c_ends_the_quick_path_as_it_ends_click(
    campaign: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("kgit.engine.status.status_data", interrupted)
    quick, clicked = run_kgit("status"), through_click(monkeypatch, "status")
    assert (quick.code, quick.err) == (clicked.code, clicked.err) == (130, clicked.err)
    assert clicked.err.startswith("\nkgit: interrupted by SIGINT")


@pytest.mark.parametrize(("args", "light"), [(["status"], True), (["show", "1"], False)])
def test_a_light_command_skips_the_collector_and_its_last_pass(
    campaign: Path, args: list[str], light: bool
) -> None:
    """`run`, the process's entry, leaves the collector off through a light command and its
    objects out of the interpreter's last collection (~10 ms of ~90); any other command keeps
    both (a campaign's round runs for minutes)."""
    probe = (
        "import gc, sys; from kgit.cli import run; sys.argv = ['kgit', *sys.argv[1:]]\n"
        "try:\n    run()\nexcept SystemExit as done:\n    code = done.code\n"
        "print('GC', code, gc.isenabled(), gc.get_freeze_count() > 0, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], cwd=campaign, capture_output=True, text=True
    )
    assert f"GC 0 {not light} {light}" in done.stderr, done.stderr[-2000:]
    assert "BASELINE" in done.stdout or "c1" in done.stdout
