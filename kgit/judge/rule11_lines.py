"""Rule 11 line by line, for what is not Python (C++, CUDA, HIP) and for Python that does not
parse: identity-keyed lookups, tokens-per-group constants and divisibility assertions."""

from __future__ import annotations

import re

from kgit.judge.rule11_findings import CONSTEXPR_GROUP, DIVISIBLE_GROUP, IDENTITY_CACHE, Finding
from kgit.judge.rule11_syntax import NOT_TENSOR, WEIGHT

_IDENT = r"(?:\bid\s*\(\s*(?P<id>[\w.\->]+)|\bhash\s*\(\s*(?P<hash>[\w.\->]+)|(?P<ptr>[\w.\->]+?)\s*(?:\.|->)\s*data_ptr\s*(?:<[^>]*>)?\s*\(|(?P<cdata>[\w.\->]+?)\._cdata\b)"
_LINE_KEY = re.compile(
    r"(?:\[[^\]\n]*?|\.(?:get|setdefault|pop|find|count|contains|emplace|try_emplace|insert|at|add)\s*\([^)\n]*?)"
    + _IDENT
)
_LINE_CONSTEXPR = re.compile(
    r"(?i)\b(?P<name>\w*(?:m|tokens?|rows?)_?per_?(?:group|expert)s?)\s*:\s*tl\.constexpr"
    r"|constexpr\s+[\w:<>]+\s+(?P<cname>\w*(?:m|tokens?|rows?)_?per_?(?:group|expert)s?)\b"
)
_LINE_ASSERT = re.compile(
    r"(?i)\b(?:assert|static_assert|TORCH_CHECK|device_assert)\b.*(?:per_?(?:group|expert)|group_?sizes?|m_?splits).*%.*(?:block|blk|tile)"
)


def _line_key(line: str) -> str | None:
    """The non-weight object a line keys a lookup on, if any."""
    for match in _LINE_KEY.finditer(line):
        subject = next(g for g in match.groups() if g)
        last = re.split(r"\.|->", subject)[-1]
        if not (WEIGHT.fullmatch(last) or NOT_TENSOR.fullmatch(last)):
            return subject
    return None


def scan_lines(path: str, text: str) -> list[Finding]:
    found = []
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        subject = _line_key(line)
        following = lines[number] if number < len(lines) else ""
        if subject is None and following and _line_key(following) is None:
            subject = _line_key(f"{line.rstrip()} {following.strip()}")  # a call split in two
        if subject is not None:
            found.append(Finding(path, number, IDENTITY_CACHE, stripped, subject))
        constexpr = _LINE_CONSTEXPR.search(line)
        if constexpr:
            name = constexpr["name"] or constexpr["cname"]
            found.append(Finding(path, number, CONSTEXPR_GROUP, stripped, name))
        if _LINE_ASSERT.search(line):
            found.append(Finding(path, number, DIVISIBLE_GROUP, stripped))
    return found
