"""The seed's rule 11 as a check: every accepted gain must carry over to a real training step.

A round's change is scanned for the shortcuts the seed forbids, and a hit rolls the round back
(kgit/judge/verdict.py) with file:line:
- caches keyed on the identity of an activation or grad_out: `id(x)`, `hash(x)`, `x.data_ptr()`,
  `x._cdata`, directly or through a key variable or a key function (adding `_version`, shape or
  dtype to the key does not rescue them: the benchmark reuses tensors and the allocator reuses
  addresses, a training step does neither);
- memoization over tensor arguments: `lru_cache`/`functools.cache` on a function taking tensors
  (as a decorator or a call), a tensor or its storage used as the key of a cache (a
  `WeakKeyDictionary`, a dict named like a cache), an `is` test against a stored tensor, a result
  kept as an attribute of an input tensor (`x._out = out`);
- grouped GEMM shortcuts valid only for a uniform token distribution: a tokens-per-group
  `tl.constexpr` (`M_per_group: tl.constexpr`), an assertion that groups divide by the block
  (`assert M_per_group % BLOCK_M == 0`), a static partition (`tokens_per_expert = M //
  num_experts`, `torch.full((G,), M // G)`, `[m_per_group] * G`, `g * M_per_group`; an equal
  share named otherwise, `avg_m = M // G` for a tile heuristic, passes), an assertion that no
  group is empty.
Weight caches pass: a key on a weight or a parameter (`id(weight)`, `self.weight.data_ptr()`,
`id(w)`, a module) is the bounded cache the seed allows.

Python files are read as syntax trees (a pattern split over lines is one expression; an `id()`
for logging is no key); other files (C++, HIP) and Python that does not parse, line by line.
Only what the change adds is reported: a finding already in the old file is not the round's.
Pure functions over file texts. The findings and their patterns: kgit/judge/rule11_findings.py;
the Python scan: kgit/judge/rule11_python.py (over kgit/judge/rule11_syntax.py); the line scan:
kgit/judge/rule11_lines.py. This module scans a change.
"""

from __future__ import annotations

import ast
import difflib
from collections import Counter
from collections.abc import Mapping

from kgit.judge import tampering
from kgit.judge.rule11_findings import (
    CONSTEXPR_GROUP,
    DIVISIBLE_GROUP,
    IDENTITY_CACHE,
    IDENTITY_TEST,
    MEMOIZED,
    NO_EMPTY_GROUP,
    PATTERNS,
    STATIC_PARTITION,
    TENSOR_ATTR,
    TENSOR_KEY,
    WHY,
    Finding,
)
from kgit.judge.rule11_lines import scan_lines
from kgit.judge.rule11_python import PythonScan

__all__ = [
    "CONSTEXPR_GROUP",
    "DIVISIBLE_GROUP",
    "IDENTITY_CACHE",
    "IDENTITY_TEST",
    "MEMOIZED",
    "NO_EMPTY_GROUP",
    "PATTERNS",
    "STATIC_PARTITION",
    "TENSOR_ATTR",
    "TENSOR_KEY",
    "WHY",
    "Finding",
    "added_lines",
    "new_findings",
    "scan_change",
    "scan_text",
]

_PYTHON = (".py", ".pyi")


def scan_text(path: str, text: str) -> list[Finding]:
    """Every rule-11 finding in one file's TEXT."""
    if path.endswith(_PYTHON):
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return scan_lines(path, text)
        scanner = PythonScan(path, text, tree)
        for node, pattern, subject in tampering.scan(tree):
            scanner._add(node, pattern, subject)
        return scanner.run(tree)
    return scan_lines(path, text)


def new_findings(path: str, old: str | None, new: str) -> list[Finding]:
    """The findings of NEW that OLD did not have: what a change adds to one file."""
    before = Counter(f.key for f in scan_text(path, old)) if old else Counter()
    added = []
    for finding in scan_text(path, new):
        if before[finding.key] > 0:
            before[finding.key] -= 1
        else:
            added.append(finding)
    return added


def scan_change(files: Mapping[str, tuple[str | None, str | None]]) -> list[Finding]:
    """The findings a change adds: FILES maps each changed path to its (old, new) text, None
    for a file that did not exist (or no longer does)."""
    found = []
    for path in sorted(files):
        old, new = files[path]
        if new is not None:
            found += new_findings(path, old, new)
    return found


def added_lines(old: str | None, new: str | None) -> int:
    """How many lines NEW adds to OLD (for the report's summary of what was scanned)."""
    a, b = (old or "").splitlines(), (new or "").splitlines()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return sum(
        j2 - j1 for tag, _, _, j1, j2 in matcher.get_opcodes() if tag in ("insert", "replace")
    )
