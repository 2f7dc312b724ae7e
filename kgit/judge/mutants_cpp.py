"""Mutants of C, C++, CUDA and HIP sources, by tokens outside comments, strings and
preprocessor lines (see kgit/judge/mutants.py for the kinds). Lexical: a mutant may not compile,
which a gate that builds then "catches" unless a rebuild step tells it apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kgit.judge.mutation import Mutant, short

_TOKEN = re.compile(
    rb"""
    (?P<skip>//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'
            |^[ \t]*\#(?:[^\n]*\\\n)*[^\n]*)
    |(?P<number>\b\d+[uUlL]*\b(?![.\w]))
    |(?P<ident>[A-Za-z_]\w*)
    |(?P<op><=|>=|->|\+\+|--|<<|>>|&&|\|\||[-+*/<>()])
    """,
    re.S | re.M | re.X,
)
_CPP_ARITH = {b"+": b"-", b"-": b"+", b"*": b"/", b"/": b"*"}
_CPP_BOUNDARY = {b"<": b"<=", b"<=": b"<", b">": b">=", b">=": b">"}


@dataclass(frozen=True)
class _Token:
    kind: str
    text: bytes
    start: int
    end: int


def cpp_mutants(path: str, source: bytes) -> list[Mutant]:
    """Lexical mutants: binary operators written with a blank on each side (`a + b`, the usual
    style, which tells them from unary `-x`, pointers `*p` and templates `<T>`), integer literals,
    `/ count`, and `if (...)` bounds guards (the C++ form of a mask)."""
    tokens = [
        _Token(m.lastgroup or "", m.group(), m.start(), m.end())
        for m in _TOKEN.finditer(source)
        if m.lastgroup != "skip"
    ]
    found: list[Mutant] = []

    def add(kind: str, start: int, end: int, new: bytes, description: str) -> None:
        line = source.count(b"\n", 0, start) + 1
        found.append(Mutant(path, line, kind, description, start, end, new))

    for index, token in enumerate(tokens):
        spaced = source[token.start - 1 : token.start] in (b" ", b"\t") and source[
            token.end : token.end + 1
        ] in (b" ", b"\t")
        text = token.text.decode()
        if token.kind == "op" and spaced and token.text in _CPP_ARITH:
            new = _CPP_ARITH[token.text]
            add("arith", token.start, token.end, new, f"`{text}` -> `{new.decode()}`")
            following = tokens[index + 1] if index + 1 < len(tokens) else None
            if token.text == b"/" and following is not None and following.kind == "ident":
                name = following.text.decode()
                add(
                    "denominator",
                    following.start,
                    following.end,
                    f"({name} + 1)".encode(),
                    f"`/ {name}` -> `/ ({name} + 1)`",
                )
        elif token.kind == "op" and spaced and token.text in _CPP_BOUNDARY:
            new = _CPP_BOUNDARY[token.text]
            add("boundary", token.start, token.end, new, f"`{text}` -> `{new.decode()}`")
        elif token.kind == "number":
            digits = re.match(rb"\d+", token.text)
            assert digits is not None
            value = int(digits.group())
            new = str(value + 1).encode() + token.text[digits.end() :]
            add("constant", token.start, token.end, new, f"`{text}` -> `{new.decode()}`")
        elif token.kind == "ident" and token.text == b"if":
            guard = _guard(tokens, index + 1)
            if guard is not None:
                start, end = guard
                shown = short(source[start:end].decode(errors="replace"), 40)
                add("mask", start, end, b"(true)", f"`if {shown}` -> `if (true)`")
    return sorted(found, key=lambda m: (m.start, m.kind))


def _guard(tokens: list[_Token], index: int) -> tuple[int, int] | None:
    """The byte span of the parenthesized condition of an `if` at INDEX, when it compares."""
    if index >= len(tokens) or tokens[index].text != b"(":
        return None
    depth, compares = 0, False
    for token in tokens[index:]:
        if token.text == b"(":
            depth += 1
        elif token.text == b")":
            depth -= 1
            if depth == 0:
                return (tokens[index].start, token.end) if compares else None
        elif token.text in _CPP_BOUNDARY:
            compares = True
    return None
