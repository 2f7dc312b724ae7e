"""Rule 11's static audit: lines the best line added since the campaign's base that may make a
gain vanish in a real training step (caches keyed by object ids, memoization, shortcuts valid
only for uniform token counts). A finding is for a person to read, not a verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# (name, pattern, why) - matched against each added line of the diff.
PATTERNS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "id()-keyed cache",
        re.compile(r"\bid\s*\("),
        "a cache keyed by id(...) hits on reused test tensors and misses in training; allowed "
        "only for weights keyed by id + _version + shape",
    ),
    (
        "lru_cache",
        re.compile(r"\blru_cache\b"),
        "memoization on non-weight arguments does not carry over to training",
    ),
    (
        "functools.cache",
        re.compile(r"(\bfunctools\.cache\b|^\s*@cache\b)"),
        "memoization on non-weight arguments does not carry over to training",
    ),
    (
        "dict memo",
        re.compile(r"\b\w*(cache|memo)\w*\s*(\[|\.get\(|\.setdefault\()", re.I),
        "a dict memo must not be keyed on activation or grad_out identities",
    ),
    (
        "uniform-token shortcut",
        re.compile(r"M_per_group\s*:\s*tl\.constexpr|%\s*BLOCK_M\s*==\s*0"),
        "grouped GEMM must not assume a uniform token distribution",
    ),
)

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    pattern: str
    text: str
    why: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def added_lines(diff: str) -> list[tuple[str, int, str]]:
    """(path, line number in the new file, text) of every added line of a -U0 unified diff."""
    added: list[tuple[str, int, str]] = []
    path, number = "", 0
    for line in diff.splitlines():
        if line.startswith("+++ "):
            target = line[4:]
            path = target[2:] if target.startswith("b/") else target
        elif line.startswith("@@"):
            match = _HUNK.match(line)
            number = int(match[1]) if match else 0
        elif line.startswith("+") and path != "/dev/null":
            added.append((path, number, line[1:]))
            number += 1
        elif line.startswith(" "):
            number += 1
    return added


def audit_diff(diff: str) -> list[Finding]:
    findings = []
    for path, number, text in added_lines(diff):
        for name, pattern, why in PATTERNS:
            if pattern.search(text):
                findings.append(Finding(path, number, name, text.strip(), why))
    return findings
