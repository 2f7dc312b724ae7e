"""Mutants of Python/Triton sources, through the AST (see kgit/judge/mutants.py for the kinds).

Only inside `@triton.jit`-style kernels when the file has any (else inside every function); the
mutated expression is spliced, parenthesized, into the original bytes: the rest of the file keeps
its bytes, and every mutant is parsed back before it is offered.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import dataclass, replace

from kgit.judge.mutants_operands import input_names, operand_sites, sign_turned
from kgit.judge.mutation import Mutant, NotMutable, short

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
    seen: set[tuple[int, int, bytes]] = set()
    for function in _kernel_functions(tree):
        names = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}
        names |= {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
        jit = any(_is_jit(d) for d in function.decorator_list)
        inputs = input_names(function, jit)
        scope = _Scope(names, _loads_feeding_reductions(function), inputs)
        for statement in function.body:
            if isinstance(statement, _NESTED):
                continue  # a nested function is one of the functions walked on its own
            for node, parent in _walk_with_parent(statement):
                for kind, new, text in _python_sites(node, parent, scope):
                    mutant = _splice(path, source, offsets, node, new, kind, text)
                    # Two kinds may make the same change (`x * x` without either operand): once.
                    key = (mutant.start, mutant.end, mutant.replacement) if mutant else None
                    if mutant is not None and key not in seen:
                        seen.add(key)  # type: ignore[arg-type]
                        found.append(replace(mutant, function=function.name))
    return sorted(found, key=lambda m: (m.start, m.kind))


@dataclass(frozen=True)
class KernelFunction:
    """A function the audit mutates: its name, `def` line, whether it is a Triton kernel
    (`@jit`: launches of those are recorded) and the names it calls (a `@jit` helper runs
    inside the kernels that call it, launched or not itself)."""

    name: str
    line: int
    jit: bool
    calls: frozenset[str]
    end: int = 0  # its last line (0: not known)


def kernel_functions(source: bytes) -> list[KernelFunction]:
    """The functions `python_mutants` mutates in SOURCE, in file order ([] when it does not
    parse: `python_mutants` says why)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found = []
    for function in _kernel_functions(tree):
        calls = frozenset(
            _call_name(node) for node in ast.walk(function) if isinstance(node, ast.Call)
        )
        jit = any(_is_jit(d) for d in function.decorator_list)
        end = function.end_lineno or function.lineno
        found.append(KernelFunction(function.name, function.lineno, jit, calls - {""}, end))
    return sorted(found, key=lambda f: f.line)


@dataclass(frozen=True)
class _Scope:
    names: set[str]  # every name of the function: its BLOCK_* parameters among them
    feeding: set[int]  # ids of the load calls whose value reaches a reduction or a dot
    inputs: set[str]  # the names holding what the kernel reads (kgit/judge/mutants_operands.py)


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
                f"`{sign} {short(ast.unparse(node.right))}` -> `{sign} {short(shown)}`",
            )
        new_op = _ARITH[type(node.op)]()
        if sign_turned(node, scope.inputs):  # the same change, drawn as that input's sign
            yield from operand_sites(node, scope.inputs)
            return
        yield (
            "arith",
            ast.BinOp(node.left, new_op, node.right),
            f"`{_ARITH_SIGN[type(node.op)]}` -> `{_ARITH_SIGN[type(new_op)]}` in "
            f"`{short(ast.unparse(node), 50)}`",
        )
        yield from operand_sites(node, scope.inputs)
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _BOUNDARY:
        new_cmp = ast.Compare(node.left, [_BOUNDARY[type(node.ops[0])]()], node.comparators)
        yield (
            "boundary",
            new_cmp,
            f"`{short(ast.unparse(node))}` -> `{short(ast.unparse(new_cmp))}`",
        )
        yield from operand_sites(node, scope.inputs)
    elif isinstance(node, ast.Call) and _call_name(node) in _MASKED_CALLS:
        keywords = {k.arg: k for k in node.keywords}
        call = f"{short(_dotted(node.func), 20)}(...)"
        if "mask" in keywords:
            dropped = [k for k in node.keywords if k.arg in ("mask", "other")]
            shown = ", ".join(short(ast.unparse(k), 30) for k in dropped)
            yield "mask", _without(node, dropped), f"{call}: drop `{shown}`"
        if "mask" in keywords and "other" in keywords and id(node) in scope.feeding:
            yield _other_changed(node, keywords["other"], call)
    elif (value := _mutable_int(node, parent)) is not None:
        yield "constant", ast.Constant(value + 1), f"`{value}` -> `{value + 1}`"
    elif (number := _zero_or_one(node, parent)) is not None:
        yield "constant", ast.Constant(1.0 - number), f"`{number!r}` -> `{1.0 - number!r}`"
    else:
        yield from operand_sites(node, scope.inputs)


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
        return "other", new, f"{shown}: `{short(before, 30)}` -> `{after}`"
    return "other", _without(call, [other]), f"{shown}: drop `{short(ast.unparse(other), 30)}`"


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


def _zero_or_one(node: ast.AST, parent: ast.AST | None) -> float | None:
    """NODE's value when it is a float 0.0 or 1.0 worth swapping for the other (`other=` has
    its own kind, which knows when masked-off lanes matter)."""
    if not isinstance(node, ast.Constant) or type(node.value) is not float:
        return None
    if node.value not in (0.0, 1.0) or (isinstance(parent, ast.keyword) and parent.arg == "other"):
        return None
    return float(node.value)


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
