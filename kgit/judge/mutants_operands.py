"""Mutants of an expression's operands, for Python/Triton sources (kgit/judge/mutants_python.py
walks the kernel and splices them in; kgit/judge/mutants.py names the kinds).

They find the holes real kernel tests have: upstream LayerNorm tests run with zero bias and unit
weight, so a kernel that subtracts its bias or ignores its weight passes them (`+ b` -> `- b`
survived such tests, and no arithmetic swap of the audit's first draws reached it).

- `sign`: an input's term of a sum with its sign turned (`+ b` -> `- b`);
- `operand`: an input dropped from a sum or a product (`y * w + b` -> `y * w`, `x * w` -> `x`);
- `bound`: a mask's or a bound's limit off by one (`cols < N` -> `cols < N - 1`);
- `swap`: two arguments swapped (`where(c, a, b)` -> `where(c, b, a)`, `a - b` -> `b - a`);
- `constant` (0/1): a float `0.0` <-> `1.0` (integers get their off-by-one in mutants_python).

An *input* is a value the kernel reads: in a Triton kernel a name bound to a `load` (or the load
itself), in a plain Python kernel one of the function's parameters. Pure functions over ASTs.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

from kgit.judge.mutation import short

Site = tuple[str, ast.expr, str]  # (kind, mutated node, description)

_SUMS = (ast.Add, ast.Sub)
_SIGN = {ast.Add: ("+", ast.Sub, "-"), ast.Sub: ("-", ast.Add, "+")}
_BOUNDS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
# Calls whose two arguments commute (a swap changes nothing) or are of different kinds (a
# pointer and a value, a shape: a swap only trips a type check that any gate catches).
_NO_SWAP = {"maximum", "minimum", "max", "min", "add", "mul", "multiply", "fma", "load",
            "store", "arange", "zeros", "full", "ones", "empty", "reshape", "view", "range",
            "static_range", "program_id", "cdiv", "isclose", "allclose", "dot", "matmul",
            "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas", "broadcast_to",
            "expand_dims", "permute", "trans", "split", "join", "cat", "stack", "print",
            "device_print", "static_print", "static_assert", "device_assert", "multiple_of",
            "max_contiguous", "isinstance", "getattr", "setattr", "len"}  # fmt: skip


def input_names(function: ast.FunctionDef | ast.AsyncFunctionDef, jit: bool) -> set[str]:
    """The names that hold an input of FUNCTION (see the module's docstring)."""
    if not jit:
        return {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    found = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and is_load(node.value):
            found |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return found


def is_load(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    target = node.func
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return name == "load"


def _is_input(node: ast.expr, inputs: set[str]) -> bool:
    return (isinstance(node, ast.Name) and node.id in inputs) or is_load(node)


def operand_sites(node: ast.AST, inputs: set[str]) -> Iterator[Site]:
    """The sign, operand, bound and swap mutants of NODE itself (the 0/1 constants are made
    with the integers', in mutants_python: they share its rules on where a literal is fixed)."""
    if isinstance(node, ast.BinOp):
        yield from _sum_and_product(node, inputs)
        if isinstance(node.op, ast.Sub | ast.Div) and ast.dump(node.left) != ast.dump(node.right):
            swapped = ast.BinOp(node.right, node.op, node.left)
            text = f"`{short(ast.unparse(node), 40)}` -> `{short(ast.unparse(swapped), 40)}`"
            yield "swap", swapped, text
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], _BOUNDS):
        limit = node.comparators[0]
        if not (isinstance(limit, ast.Constant) and isinstance(limit.value, str)):
            lower = ast.BinOp(limit, ast.Sub(), ast.Constant(1))
            new = ast.Compare(node.left, node.ops, [lower])
            yield "bound", new, f"`{short(ast.unparse(node))}` -> `{short(ast.unparse(new))}`"
    elif isinstance(node, ast.Call):
        yield from _swapped_arguments(node)


def sign_turned(node: ast.BinOp, inputs: set[str]) -> bool:
    """Whether NODE is a sum whose right operand is an input: its `+`/`-` swap is a `sign`
    mutant (the arithmetic swap would be the same change, drawn under that kind instead)."""
    return isinstance(node.op, _SUMS) and _is_input(node.right, inputs)


def _sum_and_product(node: ast.BinOp, inputs: set[str]) -> Iterator[Site]:
    shown = short(ast.unparse(node), 40)
    if sign_turned(node, inputs):
        before, op, after = _SIGN[type(node.op)]
        operand = short(ast.unparse(node.right), 20)
        new = ast.BinOp(node.left, op(), node.right)
        yield "sign", new, f"`{before} {operand}` -> `{after} {operand}` in `{shown}`"
    if not isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
        return
    if _is_input(node.right, inputs):
        yield "operand", node.left, f"`{shown}` -> `{short(ast.unparse(node.left), 40)}`"
    if _is_input(node.left, inputs) and not isinstance(node.op, ast.Sub):
        yield "operand", node.right, f"`{shown}` -> `{short(ast.unparse(node.right), 40)}`"


def _swapped_arguments(call: ast.Call) -> Iterator[Site]:
    target = call.func
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    args = call.args
    if name == "where" and len(args) == 3:
        first, second = 1, 2
    elif name not in _NO_SWAP and len(args) == 2:
        first, second = 0, 1
    else:
        return
    if ast.dump(args[first]) == ast.dump(args[second]) or any(
        isinstance(a, ast.Starred) for a in args
    ):
        return
    new = copy.copy(call)
    new.args = list(args)
    new.args[first], new.args[second] = args[second], args[first]
    yield "swap", new, f"`{short(ast.unparse(call), 40)}` -> `{short(ast.unparse(new), 40)}`"
