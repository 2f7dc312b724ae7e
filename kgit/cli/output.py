"""What a command prints: a view's text or a typed result's JSON (`emit`), and an error as kgit
says every error (`report`). No click here: `kgit status` and `kgit log` print through this
module without loading click (kgit/cli/quick.py)."""

from __future__ import annotations

import errno
import json
import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from kgit import progress
from kgit.errors import KgitError
from kgit.records.results import Result, is_result, to_json

R = TypeVar("R", bound=Result)

_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")  # click's own pattern (click._compat._ansi_re)


def echo(text: str, *, err: bool = False) -> None:
    """TEXT and a newline on standard output (ERR: standard error), flushed, as `click.echo`
    writes a string: terminal escapes dropped unless the stream is a terminal (a hypothesis may
    hold some). A stream that cannot encode a character gets it replaced, not a crash."""
    stream = sys.stderr if err else sys.stdout
    line = text + "\n"
    if not stream.isatty():
        line = _ANSI.sub("", line)
    try:
        stream.write(line)
    except UnicodeEncodeError:
        encoding = stream.encoding or "utf-8"
        stream.write(line.encode(encoding, "replace").decode(encoding))
    stream.flush()


class _Pacified:
    """A stream whose flush ignores a reader gone away, as click's own wrapper does: the
    interpreter's last flush at exit says nothing of it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            if error.errno != errno.EPIPE:
                raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def reader_gone(error: OSError) -> bool:
    """Whether ERROR is the reader of standard output going away (`kgit log | head`): then
    click quiets both streams and exits 1, and so does the quick path (kgit/cli/entry.py)."""
    if error.errno != errno.EPIPE:
        return False
    sys.stdout, sys.stderr = _Pacified(sys.stdout), _Pacified(sys.stderr)
    return True


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
        echo(json.dumps(to_json(result), indent=2))
    else:
        echo(render(result))


def emit_line(result: R, as_json: bool, render: Callable[[R], str]) -> None:
    """RESULT as `emit` says it, its JSON on one line: a command that reports as it goes
    (`kgit worker --json`: one line per round, then the summary)."""
    if not is_result(result):
        raise TypeError(f"emit_line takes a typed result, not {type(result).__name__}")
    progress.stop()
    echo(json.dumps(to_json(result)) if as_json else render(result))


def report(error: KgitError, as_json: bool) -> int:
    """ERROR as kgit says every error (its JSON on standard output under --json, the details,
    `error:` and `hint:` on standard error); its exit code."""
    if as_json:
        echo(json.dumps(error.to_dict(), indent=2))
    if error.details:
        echo(error.details.rstrip(), err=True)
    echo(f"error: {error.message}", err=True)
    if error.hint:
        echo(f"hint: {error.hint}", err=True)
    return error.exit_code
