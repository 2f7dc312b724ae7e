"""How a command speaks travels as one Voice (kgit/progress.py), not as a `say` and an `echo`
threaded side by side: no function, and no dataclass (its constructor is one), takes both."""

from __future__ import annotations

import ast
from pathlib import Path

import kgit

ROOT = Path(kgit.__file__).parent
PAIR = {"say", "echo"}
HOLDER = "Voice"  # the one class that holds the pair


def pair_takers(path: Path) -> list[str]:
    """`file:line name` for each function of PATH with both a `say` and an `echo` parameter, and
    each class but the Voice with both as annotated fields."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            names = {arg.arg for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
        elif isinstance(node, ast.ClassDef):
            names = {
                field.target.id
                for field in node.body
                if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
            }
        else:
            continue
        if names >= PAIR and node.name != HOLDER:
            found.append(f"{path.name}:{node.lineno} {node.name}")
    return found


def test_no_function_takes_both_say_and_echo() -> None:
    assert [hit for path in sorted(ROOT.rglob("*.py")) for hit in pair_takers(path)] == []


def test_the_scan_sees_the_pair(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "def f(campaign, say, *, echo=False):\n    pass\n"
        "def g(say):\n    pass\n"
        "class Run:\n    say: object\n    echo: bool\n"
        "class Kept:\n    voice: object\n"
        "class Voice:\n    say: object\n    echo: bool\n"
    )
    assert pair_takers(module) == ["m.py:1 f", "m.py:5 Run"]
