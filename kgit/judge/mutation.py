"""A mutant: one small change to one file of a kernel, for `kgit gate audit`. The mutators
(kgit/judge/mutants_python.py, mutants_cpp.py) make them; kgit/judge/mutants.py draws them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    """One small change to one file: bytes START..END of its text become REPLACEMENT."""

    path: str
    line: int
    kind: str
    description: str  # `before` -> `after`, for people
    start: int
    end: int
    replacement: bytes
    # The kernel (function) the change lies in, for the audit's reach and per-kernel figures;
    # None where the mutator does not know it (C++ sources are read by tokens).
    function: str | None = None

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def apply(self, source: bytes) -> bytes:
        return source[: self.start] + self.replacement + source[self.end :]


class NotMutable(Exception):
    """A file kgit cannot mutate, with the reason (no mutator for its kind, it does not parse)."""


def short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
