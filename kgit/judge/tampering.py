"""What a round's change must not do to the process that measures it (pure).

A kernel runs inside the harness's process: a module that rebinds `time.perf_counter`, patches
the CSV writer or evaluates code it builds at run time can move the number without moving the
kernel. A red-team kernel that halved the harness's clock was accepted at +138% (under the
physical floor). These patterns are scanned in what a round adds, next to rule 11's
(kgit/judge/rule11.py), and reported the same way, with file:line; the harness also checks its
clocks at run time (kgit/measure/timing.py, replaced_clocks).

- a function or object bound onto another module's attribute (`time.perf_counter = fake`,
  `setattr(torch.cuda.Event, "elapsed_time", f)`); a constant is a setting and passes
  (`torch.backends.cuda.matmul.allow_tf32 = True`);
- an entry written into `sys.modules` or `builtins`;
- kgit imported by a kernel (its measuring code is not the kernel's business), `sys.modules`
  read (how a module is reached without importing it);
- code registered to run at exit (`atexit`): it runs after the harness wrote its CSV;
- code evaluated at run time (`eval`, `exec`, `compile`, `__import__`): what it does cannot be
  read from the change, and it is how a scan is dodged (`eval("id")(x)` as a cache key);
- the call stack inspected (`sys._getframe`, a frame's `f_back`, the `inspect` or `traceback`
  modules): how a kernel tells a timed call from a checked one, and computes a cheaper, wrong
  result only when timed (accepted at +229%: the checks around the timing saw the honest path).
"""

from __future__ import annotations

import ast

PATCHED_MODULE = "another module's attribute replaced"
SYS_MODULES = "sys.modules or builtins reached"
IMPORTS_KGIT = "kgit imported by a kernel"
AT_EXIT = "code run at exit"
DYNAMIC_CODE = "code evaluated at run time"
STACK = "the call stack inspected"

WHY = {
    PATCHED_MODULE: "a kernel runs inside the harness's process: rebinding a library's function "
    "(a clock, an event's timer, a writer) changes what is measured, not the kernel",
    SYS_MODULES: "reaching the loaded modules or the builtins by hand is how the harness's own "
    "code is changed without an import to show it",
    IMPORTS_KGIT: "kgit's measuring code is the harness's; a kernel has no use for it but to "
    "change how it measures",
    AT_EXIT: "an exit handler runs after the harness wrote its figures, and can rewrite them",
    DYNAMIC_CODE: "what evaluated code does cannot be read from the change (it hides, for "
    "example, an identity-keyed cache or a patched clock from this scan)",
    STACK: "a kernel that reads who calls it can tell a timed call from a checked one and be "
    "wrong only when timed; a kernel's result depends on its inputs alone",
}
PATTERNS = tuple(WHY)
_DYNAMIC = {"eval", "exec", "compile", "__import__"}
_STACK_MODULES = {"inspect", "traceback"}
_FRAME_ATTRIBUTES = {"_getframe", "_current_frames", "f_back", "tb_frame", "gi_frame", "cr_frame"}


def scan(tree: ast.Module) -> list[tuple[ast.AST, str, str]]:
    """(node, pattern, subject) for every tampering pattern in a module's TREE."""
    modules = _module_names(tree)
    found: list[tuple[ast.AST, str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n == "kgit" or n.startswith("kgit.") for n in names):
                found.append((node, IMPORTS_KGIT, "kgit"))
            if "atexit" in names:
                found.append((node, AT_EXIT, "atexit"))
            stack = [n for n in names if n.split(".")[0] in _STACK_MODULES]
            if stack:
                found.append((node, STACK, stack[0]))
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                hit = _written(target, node.value, modules)
                if hit:
                    found.append((node, *hit))
        elif isinstance(node, ast.Subscript | ast.Attribute) and _reads_sys_modules(node):
            found.append((node, SYS_MODULES, "sys.modules"))
        elif isinstance(node, ast.Attribute) and node.attr in _FRAME_ATTRIBUTES:
            found.append((node, STACK, _dotted(node)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in _DYNAMIC:
                found.append((node, DYNAMIC_CODE, node.func.id))
            elif node.func.id in ("setattr", "delattr") and node.args:
                root = _root(node.args[0])
                value = node.args[2] if len(node.args) > 2 else None
                if root in modules and not _constant(value):
                    found.append((node, PATCHED_MODULE, _dotted(node.args[0])))
    return found


def _reads_sys_modules(node: ast.Subscript | ast.Attribute) -> bool:
    """`sys.modules[name]`, `sys.modules.get(name)` (a write is found as one)."""
    if isinstance(node, ast.Subscript):
        return _dotted(node.value) == "sys.modules" and isinstance(node.ctx, ast.Load)
    return _dotted(node.value) == "sys.modules" and node.attr in ("get", "values", "items")


def _module_names(tree: ast.Module) -> set[str]:
    """Names an `import` binds to a module anywhere in the file (`import torch.cuda as tc`)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module:
            # `from torch import cuda` binds a module as often as a function: both count.
            for alias in node.names:
                names.add(alias.asname or alias.name)
    return names


def _written(target: ast.expr, value: ast.expr | None, modules: set[str]) -> tuple[str, str] | None:
    if isinstance(target, ast.Subscript):
        owner = _dotted(target.value)
        if owner in ("sys.modules", "builtins.__dict__", "__builtins__"):
            return SYS_MODULES, owner
        # `time.__dict__["perf_counter"] = f`, `vars(time)["perf_counter"] = f`
        inner = target.value
        if isinstance(inner, ast.Call) and _dotted(inner.func) == "vars" and inner.args:
            inner = ast.Attribute(inner.args[0], "__dict__")
        dict_of_module = isinstance(inner, ast.Attribute) and inner.attr == "__dict__"
        if dict_of_module and _root(inner) in modules and not _constant(value):
            return PATCHED_MODULE, _dotted(inner)
        return None
    if not isinstance(target, ast.Attribute):
        return None
    root = _root(target)
    if root == "builtins" or root == "__builtins__":
        return SYS_MODULES, _dotted(target)
    if root in modules and not _constant(value):
        return PATCHED_MODULE, _dotted(target)
    return None


def _constant(value: ast.expr | None) -> bool:
    """A setting: a literal, a tuple of them, or a negated one."""
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.UnaryOp):
        return _constant(value.operand)
    if isinstance(value, ast.Tuple | ast.List):
        return all(_constant(e) for e in value.elts)
    return False


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    parts.append(node.id if isinstance(node, ast.Name) else "…")
    return ".".join(reversed(parts))
