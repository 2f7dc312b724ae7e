"""`main`, where a command line starts and where errors become exit codes, and nowhere else:
1 refused, 2 usage, 3 crash (with a log). `kgit status` and `kgit log` on a plain command line
run without click (kgit/cli/quick.py); every other command line goes to click (kgit/cli/app.py).
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from kgit import __version__, progress
from kgit.cli.output import echo, reader_gone, report
from kgit.cli.quick import quick_command
from kgit.errors import EXIT_CRASH, EXIT_INTERRUPTED, KgitError


def run() -> None:
    """The process's own entry (`python -m kgit`, the `kgit` script): `main`, then exit.

    A light command (status, log) allocates little and leaves nothing a collection must close
    (its files are written whole, its git processes waited for), yet the collector's passes over
    the tens of thousands of objects its imports make cost it ~3 ms, and the interpreter's last
    collection at exit ~7 ms more, of ~90 ms: both are skipped for it (gc.disable, gc.freeze).
    Not in `main`, which tests and the hook call inside processes that go on."""
    light = quick_command(sys.argv[1:]) is not None
    if light:
        gc.disable()
    code = main()
    if light:
        gc.freeze()
    sys.exit(code)


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
        command = quick_command(args)
        if command is None:
            from kgit.cli.app import run_click

            return run_click(args)
        return _run_quick(command)
    except KgitError as error:
        return report(error, as_json)
    except KeyboardInterrupt as stop:
        name = stop.args[0] if stop.args else "SIGINT"
        echo(f"kgit: interrupted by {name}; kgit status says where things stand", err=True)
        return EXIT_INTERRUPTED
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    except Exception as exc:  # a bug: keep the traceback for the report, not for the user
        path = _crash_log(exc)
        crash = KgitError(
            f"kgit crashed: {type(exc).__name__}: {exc}",
            hint=f"please report it with the log {path}",
        )
        crash.exit_code = EXIT_CRASH
        return report(crash, as_json)


def _run_quick(command: Callable[[], None]) -> int:
    """COMMAND, a light command, with click's ends where click is not: standard output closed
    by its reader exits 1 quietly, Ctrl-C first ends the terminal's ^C line."""
    try:
        command()
    except OSError as error:
        if not reader_gone(error):
            raise
        return 1
    except KeyboardInterrupt:
        echo("", err=True)
        raise
    return 0


def _interrupt(signum: int, _frame: object) -> None:
    """SIGTERM and SIGHUP unwind like Ctrl-C: every `finally` runs, so harness process groups
    are killed and set-aside edits restored rather than left behind."""
    raise KeyboardInterrupt(signal.Signals(signum).name)


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
