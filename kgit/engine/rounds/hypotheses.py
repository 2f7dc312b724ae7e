"""The queue of hypotheses that `kgit worker` takes rounds from, shared by every worker.

A queue is a text file, one hypothesis a line, with the change that tests it:

    bigger BLOCK_K halves the K loop :: sed -i 's/^BLOCK_K = .*/BLOCK_K = 64/' kernel.py
    {"hypothesis": "swizzle the tile order", "patch": "ideas/swizzle.patch"}

A plain line is `HYPOTHESIS :: COMMAND` (a shell command run at the top of the round's work
tree); a line opening with `{` is JSON with `hypothesis` and one of `command` or `patch` (a file
`git apply` takes, relative to the queue's folder). Blank lines and `#` comments are skipped.
Workers claim lines in a ledger under .git/kgit/queue/ (under a file lock), so each line is tried
once by one worker, and a queue run again takes up where it stopped; delete the ledger to try
the lines again. Workers of several clones (`kgit worker --remote`) claim lines in the campaign
record instead, which travels between them (kgit/engine/rounds/shared_hypotheses.py).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from kgit.errors import UsageError
from kgit.gitdoor import Repo

SEPARATOR = " :: "


@dataclass(frozen=True)
class Hypothesis:
    text: str
    command: str | None = None
    patch: Path | None = None
    line: int = 0

    @property
    def key(self) -> str:
        """The claim's key in this clone's ledger: the same hypothesis and change is one line,
        wherever it sits."""
        change = self.command or (str(self.patch) if self.patch else "")
        return hashlib.sha1(f"{self.text}\0{change}".encode()).hexdigest()

    def shared_key(self) -> str:
        """The claim's key between clones (kgit/engine/rounds/shared_hypotheses.py): a patch by its bytes, as each
        clone has the file at a path of its own; a command line keeps `key`. A patch missing here
        keeps its path: the round will say it did not apply."""
        if self.patch is None:
            return self.key
        try:
            change = "patch " + hashlib.sha1(self.patch.read_bytes()).hexdigest()
        except OSError:
            return self.key
        return hashlib.sha1(f"{self.text}\0{change}".encode()).hexdigest()


def parse_line(line: str, number: int, folder: Path) -> Hypothesis | None:
    """One queue line, None for a blank or a comment; a malformed one names its line."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    where = f"hypotheses line {number}"
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"{where} is not valid JSON ({exc})", hint=_FORMAT) from None
        if not isinstance(data, dict) or not str(data.get("hypothesis", "")).strip():
            raise UsageError(f"{where} has no hypothesis", hint=_FORMAT)
        command, patch = data.get("command"), data.get("patch")
        if bool(command) == bool(patch):
            raise UsageError(f"{where} names no change, or two", hint=_FORMAT)
        return Hypothesis(
            str(data["hypothesis"]).strip(),
            str(command) if command else None,
            (folder / str(patch)).resolve() if patch else None,
            number,
        )
    hypothesis, sep, command = text.partition(SEPARATOR.strip())
    if not sep or not hypothesis.strip() or not command.strip():
        raise UsageError(f"{where} is not `HYPOTHESIS :: COMMAND`", hint=_FORMAT)
    return Hypothesis(hypothesis.strip(), command.strip(), None, number)


_FORMAT = (
    "each line is `HYPOTHESIS :: SHELL COMMAND`, or JSON "
    '{"hypothesis": "...", "command": "..."} / {"hypothesis": "...", "patch": "FILE"}'
)


def read_queue(path: Path) -> list[Hypothesis]:
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}", hint="kgit worker --help") from None
    found = [parse_line(line, n, path.parent) for n, line in enumerate(lines, 1)]
    return [item for item in found if item is not None]


class Ledger:
    """Claims of one campaign's queue lines: `<key> <worker> <pid>` per line, appended under
    a file lock. A claim is taken before its round starts, so a crash costs that line, never a
    double try."""

    def __init__(self, repo: Repo, campaign: str) -> None:
        folder = repo.kgit_dir() / "queue"
        folder.mkdir(exist_ok=True)
        self.path = folder / f"{campaign}.claims"
        self.lock = folder / f"{campaign}.lock"

    def claim_next(self, items: list[Hypothesis], worker: str) -> Hypothesis | None:
        """The first of ITEMS no worker claimed, claimed now for WORKER."""
        with open(self.lock, "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            taken = self.claimed()
            item = next((i for i in items if i.key not in taken), None)
            if item is not None:
                with open(self.path, "a") as ledger:
                    ledger.write(f"{item.key} {worker} {os.getpid()}\n")
            return item

    def claimed(self) -> set[str]:
        try:
            return {line.split(" ", 1)[0] for line in self.path.read_text().splitlines() if line}
        except FileNotFoundError:
            return set()
