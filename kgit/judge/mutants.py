"""Small mutations of a kernel's source, for auditing its correctness gate (`kgit gate audit`).

A gate that does not exercise the kernel passes anything. The audit plants one small bug at a time
(a mutant) and runs the gate on it: a mutant the gate passes has *survived*, and names a bug the
gate cannot see. The mutations are the bugs kernel rounds actually make:

- `denominator`: a reduction divided by the wrong count (`tl.sum(x * x) / N` -> `/ BLOCK_N`, the
  padded block width: right only when N is a power of two; seen passing a real project's gate);
- `arith`: an arithmetic operator swapped (`+` <-> `-`, `*` -> `+`, `/` -> `*`);
- `boundary`: a bounds check off by one (`rows < M` -> `rows <= M`);
- `mask`: a load or store without its mask (and `other=`): an out-of-bounds access;
- `constant`: an integer constant off by one;
- `other`: masked-off lanes of a load that feeds a reduction or a dot read another value
  (`other=0.0` -> `other=1.0`).

Why our own mutator rather than cosmic-ray or mutmut: both are built to run a whole test suite
over hundreds of generic mutants (cosmic-ray rewrites the files of the tree it is given, in place),
neither knows Triton's masks or a reduction's denominator, and neither reads C++/HIP. kgit needs a
handful of kernel-shaped mutants, chosen deterministically, spliced into a copy of one file.

Python (Triton) sources are mutated through their AST, only inside `@triton.jit`-style kernels when
the file has any (else inside every function), and the mutated expression is spliced back into the
original text: the rest of the file keeps its bytes. C, C++, CUDA and HIP sources get a lexical
mutator (tokens outside comments, strings and preprocessor lines); it may make a mutant that does
not compile, which the gate then "catches" unless a rebuild step tells it apart.

Pure functions over text: no git, no files, no processes.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

# The order in which kinds are drawn: the first mutants of an audit are the most telling ones.
KINDS = ("denominator", "arith", "boundary", "mask", "constant", "other")

PYTHON_SUFFIXES = (".py",)
CPP_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".hip", ".inl")


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

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def apply(self, source: bytes) -> bytes:
        return source[: self.start] + self.replacement + source[self.end :]


class NotMutable(Exception):
    """A file kgit cannot mutate, with the reason (no mutator for its kind, it does not parse)."""


def mutants_of(path: str, source: bytes) -> list[Mutant]:
    """Every mutant kgit can make of PATH's SOURCE, in file order; NotMutable when it has no
    mutator for that kind of file or the file does not parse."""
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in PYTHON_SUFFIXES:
        return python_mutants(path, source)
    if suffix in CPP_SUFFIXES:
        return cpp_mutants(path, source)
    raise NotMutable(
        f"no mutator for {suffix or 'extension-less'} files (kgit mutates Python/Triton and "
        "C/C++/CUDA/HIP sources)"
    )


def choose(mutants: list[Mutant], count: int) -> list[Mutant]:
    """COUNT mutants drawn round-robin over KINDS (so a handful covers each kind), each kind's
    sites in a fixed pseudo-random order (a hash of the site): the same source gives the same
    choice, and the choice spreads over the file rather than taking its first lines."""
    by_kind: dict[str, list[Mutant]] = {kind: [] for kind in KINDS}
    for mutant in mutants:
        by_kind[mutant.kind].append(mutant)
    for sites in by_kind.values():
        sites.sort(key=_site_key)
    chosen: list[Mutant] = []
    while len(chosen) < count and any(by_kind.values()):
        for kind in KINDS:
            if by_kind[kind] and len(chosen) < count:
                chosen.append(by_kind[kind].pop(0))
    return chosen


def _site_key(mutant: Mutant) -> str:
    text = f"{mutant.path}:{mutant.start}:{mutant.end}:{mutant.description}"
    return hashlib.sha1(text.encode()).hexdigest()


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- Python / Triton ---------------------------------------------------------------------------

# Each swap keeps the operands' type (an integer offset stays an integer: `rows * stride` ->
# `rows / stride` would only trip Triton's type check, which any gate catches).
_ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.Div: ast.Mult,
          ast.FloorDiv: ast.Mult}  # fmt: skip
_ARITH_SIGN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//"}
_BOUNDARY = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_REDUCTIONS = {"sum", "cumsum", "nansum"}
_REDUCING = {"sum", "cumsum", "nansum", "max", "min", "argmax", "argmin", "reduce", "dot",
             "xor_sum", "cumprod", "prod", "mean"}  # fmt: skip
_MASKED_CALLS = {"load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_xchg"}
# Integers whose change only trips a compile-time check (axes, launch settings, power-of-two
# block shapes): caught by any gate, so they would waste the audit's few mutants.
_FIXED_KEYWORDS = {"axis", "dim", "num_warps", "num_stages", "num_ctas", "dtype"}
_SHAPE_CALLS = {"arange", "zeros", "full", "ones", "empty", "static_range", "reshape", "view",
                "program_id", "num_programs"}  # fmt: skip


def python_mutants(path: str, source: bytes) -> list[Mutant]:
    try:
        source.decode()
    except UnicodeDecodeError:
        # The AST's column offsets count UTF-8 bytes: splicing another encoding would misplace.
        raise NotMutable("is not UTF-8") from None
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        raise NotMutable(
            f"does not parse as Python ({type(exc).__name__}"
            + (f" at line {line}" if line else "")
            + f": {getattr(exc, 'msg', exc)})"
        ) from None
    offsets = _line_offsets(source)
    found: list[Mutant] = []
    for function in _kernel_functions(tree):
        names = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}
        names |= {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
        scope = _Scope(names, _loads_feeding_reductions(function))
        for statement in function.body:
            if isinstance(statement, _NESTED):
                continue  # a nested function is one of the functions walked on its own
            for node, parent in _walk_with_parent(statement):
                for kind, new, text in _python_sites(node, parent, scope):
                    mutant = _splice(path, source, offsets, node, new, kind, text)
                    if mutant is not None:
                        found.append(mutant)
    return sorted(found, key=lambda m: (m.start, m.kind))


@dataclass(frozen=True)
class _Scope:
    names: set[str]  # every name of the function: its BLOCK_* parameters among them
    feeding: set[int]  # ids of the load calls whose value reaches a reduction or a dot


def _loads_feeding_reductions(function: ast.AST) -> set[int]:
    """The loads whose masked-off lanes can change a result: their value reaches, through
    plain assignments, the arguments of a reduction or a dot. Elsewhere those lanes only flow
    into masked stores, and changing `other=` there is an equivalent mutant (noise)."""
    deps: dict[str, set[str]] = {}
    loads_of: dict[str, set[int]] = {}
    reduced: set[str] = set()
    direct: set[int] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            used = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
            loads = {id(n) for n in ast.walk(node.value) if _is_load(n)}
            for target in targets:
                for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                    deps.setdefault(name, set()).update(used)
                    loads_of.setdefault(name, set()).update(loads)
        elif isinstance(node, ast.Call) and _call_name(node) in _REDUCING:
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                reduced |= {n.id for n in ast.walk(argument) if isinstance(n, ast.Name)}
                direct |= {id(n) for n in ast.walk(argument) if _is_load(n)}
    reaching, todo = set(), list(reduced)
    while todo:
        name = todo.pop()
        if name not in reaching:
            reaching.add(name)
            todo.extend(deps.get(name, ()))
    return direct.union(*(loads_of.get(name, set()) for name in reaching))


def _is_load(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _call_name(node) == "load"


def _kernel_functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The @jit-decorated functions (Triton kernels), or every function when there are none."""
    functions = [
        node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    kernels = [f for f in functions if any(_is_jit(d) for d in f.decorator_list)]
    return kernels or functions


def _is_jit(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = _dotted(target)
    return name.rsplit(".", 1)[-1] == "jit"


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _walk_with_parent(root: ast.AST) -> Iterator[tuple[ast.AST, ast.AST | None]]:
    stack: list[tuple[ast.AST, ast.AST | None]] = [(root, None)]
    while stack:
        node, parent = stack.pop()
        if isinstance(node, (ast.JoinedStr, *_NESTED)):
            continue  # f-strings (unreliable offsets), nested functions (walked on their own)
        yield node, parent
        stack.extend((child, node) for child in reversed(list(ast.iter_child_nodes(node))))


def _python_sites(
    node: ast.AST, parent: ast.AST | None, scope: _Scope
) -> Iterator[tuple[str, ast.expr, str]]:
    """(kind, mutated node, description) for each mutation of NODE itself."""
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH and not _is_text(node):
        if isinstance(node.op, ast.Div | ast.FloorDiv) and _has_reduction(node.left):
            denominator = _wrong_denominator(node.right, scope.names)
            sign = _ARITH_SIGN[type(node.op)]
            shown = ast.unparse(denominator)
            shown = shown if isinstance(denominator, ast.Name) else f"({shown})"
            yield (
                "denominator",
                ast.BinOp(node.left, node.op, denominator),
                f"`{sign} {_short(ast.unparse(node.right))}` -> `{sign} {_short(shown)}`",
            )
        new_op = _ARITH[type(node.op)]()
        yield (
            "arith",
            ast.BinOp(node.left, new_op, node.right),
            f"`{_ARITH_SIGN[type(node.op)]}` -> `{_ARITH_SIGN[type(new_op)]}` in "
            f"`{_short(ast.unparse(node), 50)}`",
        )
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _BOUNDARY:
        new_cmp = ast.Compare(node.left, [_BOUNDARY[type(node.ops[0])]()], node.comparators)
        yield (
            "boundary",
            new_cmp,
            f"`{_short(ast.unparse(node))}` -> `{_short(ast.unparse(new_cmp))}`",
        )
    elif isinstance(node, ast.Call) and _call_name(node) in _MASKED_CALLS:
        keywords = {k.arg: k for k in node.keywords}
        call = f"{_short(_dotted(node.func), 20)}(...)"
        if "mask" in keywords:
            dropped = [k for k in node.keywords if k.arg in ("mask", "other")]
            shown = ", ".join(_short(ast.unparse(k), 30) for k in dropped)
            yield "mask", _without(node, dropped), f"{call}: drop `{shown}`"
        if "mask" in keywords and "other" in keywords and id(node) in scope.feeding:
            yield _other_changed(node, keywords["other"], call)
    elif (value := _mutable_int(node, parent)) is not None:
        yield "constant", ast.Constant(value + 1), f"`{value}` -> `{value + 1}`"


def _other_changed(call: ast.Call, other: ast.keyword, shown: str) -> tuple[str, ast.expr, str]:
    """The value masked-off lanes read, changed: a code path that leans on it (a sum over the
    padded lanes) goes wrong unless no lane is ever masked off. A numeric `other` gets one added
    (dropping `other=0.0` would change nothing: Triton's interpreter, and in practice the GPU,
    read masked-off lanes as zero); any other `other` (say `-inf` for a max) is dropped."""
    value = other.value.value if isinstance(other.value, ast.Constant) else None
    if type(value) in (int, float):
        assert isinstance(value, int | float)
        new_value = ast.Constant(value + 1)
        new = copy.copy(call)
        new.keywords = [ast.keyword("other", new_value) if k is other else k for k in call.keywords]
        before, after = ast.unparse(other), f"other={ast.unparse(new_value)}"
        return "other", new, f"{shown}: `{_short(before, 30)}` -> `{after}`"
    return "other", _without(call, [other]), f"{shown}: drop `{_short(ast.unparse(other), 30)}`"


def _without(call: ast.Call, dropped: list[ast.keyword]) -> ast.Call:
    new = copy.copy(call)
    new.keywords = [k for k in call.keywords if k not in dropped]
    return new


def _is_text(node: ast.BinOp) -> bool:
    operands = (node.left, node.right)
    return any(
        isinstance(o, ast.JoinedStr) or (isinstance(o, ast.Constant) and isinstance(o.value, str))
        for o in operands
    )


def _call_name(node: ast.Call) -> str:
    return _dotted(node.func).rsplit(".", 1)[-1]


def _has_reduction(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and _call_name(n) in _REDUCTIONS for n in ast.walk(node))


def _wrong_denominator(right: ast.expr, names: set[str]) -> ast.expr:
    """The padded block width when the kernel has one for this dimension (N -> BLOCK_N, the bug
    a power-of-two-only gate cannot see), else the count plus one."""
    if isinstance(right, ast.Name):
        for candidate in (f"BLOCK_{right.id}", f"BLOCK_SIZE_{right.id}", "BLOCK_SIZE", "BLOCK"):
            if candidate in names and candidate != right.id:
                return ast.Name(candidate, ast.Load())
    return ast.BinOp(right, ast.Add(), ast.Constant(1))


def _mutable_int(node: ast.AST, parent: ast.AST | None) -> int | None:
    """NODE's value when it is an integer literal worth an off-by-one."""
    if not isinstance(node, ast.Constant) or type(node.value) is not int:
        return None
    if isinstance(parent, ast.keyword) and parent.arg in _FIXED_KEYWORDS:
        return None
    if isinstance(parent, ast.Call) and _call_name(parent) in _SHAPE_CALLS:
        return None
    if isinstance(parent, ast.Tuple | ast.List):  # shapes like (BLOCK_M, 1)
        return None
    return node.value


def _line_offsets(source: bytes) -> list[int]:
    offsets, position = [0], 0
    for line in source.splitlines(keepends=True):
        position += len(line)
        offsets.append(position)
    return offsets


def _splice(
    path: str,
    source: bytes,
    offsets: list[int],
    node: ast.AST,
    new: ast.expr,
    kind: str,
    description: str,
) -> Mutant | None:
    """NODE's text replaced by NEW (parenthesized, so precedence cannot change), or None when
    the result would not parse (it always should; the check keeps a bad mutant out)."""
    end_line, end_col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
    if end_line is None or end_col is None:
        return None
    start = offsets[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
    end = offsets[end_line - 1] + end_col
    replacement = f"({ast.unparse(ast.fix_missing_locations(new))})".encode()
    mutated = source[:start] + replacement + source[end:]
    try:
        ast.parse(mutated)
    except (SyntaxError, ValueError):
        return None
    return Mutant(path, node.lineno, kind, description, start, end, replacement)  # type: ignore[attr-defined]


# -- C, C++, CUDA, HIP (lexical) ---------------------------------------------------------------

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
                shown = _short(source[start:end].decode(errors="replace"), 40)
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
