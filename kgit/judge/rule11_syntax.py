"""What rule 11's Python scan reads in a syntax tree: the names that say weight, tensor, group or
cache, and the scopes that say what a name was assigned (see kgit/judge/rule11.py).

The underscored names are this package's own: kgit/judge/rule11_python.py and
kgit/judge/rule11_lines.py read them, nothing outside kgit/judge/ does."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

# A weight, a parameter, or what owns them: keys on these are the bounded caches rule 11 allows.
WEIGHT = re.compile(
    r"(?i)w|wt|w\d+|w_\w+|\w+_w|\w*weights?\w*|params?|parameters?|\w+_params?|bias(es)?|\w+_bias"
    r"|self|module|model|layer|\w+_layer|lora_\w+"
)
# Objects that are not tensors at all (kernels, callbacks, configurations).
NOT_TENSOR = re.compile(r"(?i)fn|func|function|callback|kernel|\w+_(fn|func|kernel)|cls|config|cfg")
# Names that say "tensor" without an annotation. Deliberately narrow (no a, b, k, t): hash() or
# lru_cache over `k` is more often over an int than over a tensor.
TENSOR = re.compile(
    r"x|xs|x\d|inp|input|inputs|out|output|outputs|grad|grads|grad_\w+|\w+_grad|dy|dx|dout|d_out"
    r"|act|acts|activations?|hidden|hidden_states|tokens|tensor|tensors|\w+_tensor|logits"
)
CACHE_NAME = re.compile(r"(?i)\w*(cache|memo|lookup|saved|seen|stash|last|prev)\w*")
PER_GROUP = re.compile(r"(?i)(m|tokens?|rows?|num_tokens|n_tokens)_?per_?(group|expert)s?")
GROUPS = re.compile(r"(?i)(num_|n_|n)?(groups|experts|local_experts)|num_group|num_expert|G|E")
_TOTAL = re.compile(r"(?i)m|t|total\w*|\w*tokens|num_rows|rows|\w+\.shape\[0\]|\w+\.size\(0\)")
GROUP_INDEX = re.compile(r"(?i)(pid_?)?(g|group|expert|e)(_?id|_?idx|_index)?|gid|eid")
GROUPISH = re.compile(
    r"(?i)per_?(group|expert)|group_?(sizes?|lens?)|\bexpert|m_?splits|batch_?sizes|\bsizes\b"
    r"|\bsplits\b|\bcounts\b"
)
SIZES = re.compile(
    r"(?i)sizes|splits|counts|tokens_per_(expert|group)|m_per_(group|expert)|group_lens?"
)
BLOCK_NAME = re.compile(r"(?i)block|blk|tile")
SCALAR = re.compile(r"\b(int|float|str|bool|tuple|Tuple|dtype|Sequence|list|List|dict|Dict)\b")
# Parameters that are keys, sizes or names, not tensors: hash() over them is ordinary.
NOT_KEY_PART = re.compile(
    r"(?i)self|cls|ctx|key|keys|\w*name|\w*shape|dims?|sizes?|[mnk]|\w+_(id|idx)"
)
# Attributes a tensor has of its own: setting them is no stashing.
TENSOR_ATTRS = {"grad", "data", "requires_grad", "retains_grad", "names"}
_LIBRARIES = {"torch", "nn", "F", "np", "numpy", "triton", "tl", "math", "functools", "weakref"}
MEMO_DECORATORS = {"lru_cache", "cache", "cached", "memoize", "memoized"}
ASSERTS = {"static_assert", "device_assert", "_assert", "_check", "assert_"}


def node_name(node: ast.AST) -> str | None:
    """The name a node is about: `x`, `self.weight` -> weight, `w.t()` -> w, `xs[0]` -> xs."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript | ast.Starred):
        return node_name(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node_name(node.func.value)  # a method of the object: w.t(), x.contiguous()
    return None


# -- Python: scopes ---------------------------------------------------------------------------


@dataclass
class Scope:
    parent: Scope | None
    assigns: dict[str, list[ast.expr]] = field(default_factory=dict)
    params: dict[str, ast.arg] = field(default_factory=dict)
    shared: set[str] = field(default_factory=set)  # declared `global` or `nonlocal`

    def values(self, name: str) -> list[ast.expr] | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.params:
                return None
            if name in scope.assigns:
                return scope.assigns[name]
            scope = scope.parent
        return None

    def param(self, name: str) -> ast.arg | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.params:
                return scope.params[name]
            if name in scope.assigns:
                return None
            scope = scope.parent
        return None

    def persistent(self, container: ast.expr, depth: int = 0) -> bool:
        """Whether CONTAINER outlives one call (a module global, an attribute, a parameter):
        only such a container can carry a result from one call to the next. A container the
        function builds itself (`seen = set()`) is not a cache."""
        while isinstance(container, ast.Subscript):
            container = container.value
        if not isinstance(container, ast.Name) or self.parent is None:
            return True
        name = container.id
        if name in self.shared or name not in self.assigns:
            return True
        values = self.assigns[name]
        if depth < 4 and all(
            isinstance(v, ast.Name | ast.Attribute | ast.Subscript) for v in values
        ):
            return any(self.persistent(v, depth + 1) for v in values)
        return not all(_fresh(v) for v in values)


_CONTAINERS = {"set", "dict", "list", "defaultdict", "OrderedDict", "Counter", "deque"}


def _fresh(value: ast.expr) -> bool:
    """A new container: `{}`, `set()`, `collections.defaultdict(list)`, a comprehension."""
    if isinstance(value, ast.Dict | ast.Set | ast.List | ast.DictComp | ast.SetComp | ast.ListComp):
        return True
    return isinstance(value, ast.Call) and node_name(value.func) in _CONTAINERS


def module_functions(
    tree: ast.Module,
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda]]:
    """The module's functions by name: `def f(...)` and `f = lambda ...`."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, node
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    yield target.id, node.value


def self_attributes(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """What each `self.<attr>` is assigned anywhere in the module."""
    found: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and ast.unparse(target.value) == "self":
                    found.setdefault(target.attr, []).append(node.value)
    return found


def own_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of BODY, not descending into nested functions, lambdas or classes."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _targets(node: ast.AST) -> list[tuple[str, ast.expr]]:
    if isinstance(node, ast.Assign):
        pairs = [(t, node.value) for t in node.targets]
    elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and node.value:
        pairs = [(node.target, node.value)]
    else:
        return []
    out = []
    for target, value in pairs:
        for name in ast.walk(target):
            if isinstance(name, ast.Name):
                out.append((name.id, value))
    return out


def scope_of(body: list[ast.stmt], parent: Scope | None, args: ast.arguments | None) -> Scope:
    scope = Scope(parent)
    if args is not None:
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None:
                scope.params[arg.arg] = arg
    for node in own_nodes(body):
        for name, value in _targets(node):
            scope.assigns.setdefault(name, []).append(value)
        if isinstance(node, ast.Global | ast.Nonlocal):
            scope.shared.update(node.names)
    return scope


def annotation_of(arg: ast.arg | None) -> str:
    return ast.unparse(arg.annotation) if arg is not None and arg.annotation is not None else ""


# -- Python: helpers of the scan ------------------------------------------------------------

PARTITION_CALLS = {"full", "split", "tensor_split", "arange", "repeat_interleave"}


def equal_split(expr: ast.AST) -> ast.expr | None:
    """`M // num_experts` or `cdiv(tokens, G)` in EXPR: the tokens cut in equal shares."""
    for node in ast.walk(expr):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
            total, groups = node.left, node.right
        elif isinstance(node, ast.Call) and node_name(node.func) in ("cdiv", "ceil_div"):
            if len(node.args) != 2:
                continue
            total, groups = node.args
        else:
            continue
        name = node_name(groups) if isinstance(groups, ast.Name | ast.Attribute) else None
        if name and GROUPS.fullmatch(name) and _TOTAL.fullmatch(ast.unparse(total)):
            return node
    return None


def key_parts(expr: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a key that may carry an identity: not a comparison nor an alignment
    (`x.data_ptr() % 16 == 0` is what Triton itself specializes on, not an identity)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Compare):
            continue
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod | ast.BitAnd)
            and isinstance(node.right, ast.Constant)
            and isinstance(node.right.value, int)
            and 0 < node.right.value <= 4096
        ):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def inner_body(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.stmt]:
    return node.body if isinstance(node.body, list) else [ast.Expr(node.body)]


def getattr_name(func: ast.expr) -> tuple[ast.expr, str] | None:
    """(object, attribute) of `getattr(object, "attribute")` used as a callee."""
    if (
        isinstance(func, ast.Call)
        and isinstance(func.func, ast.Name)
        and func.func.id == "getattr"
        and len(func.args) >= 2
        and isinstance(func.args[1], ast.Constant)
        and isinstance(func.args[1].value, str)
    ):
        return func.args[0], func.args[1].value
    return None


def alias_of(value: ast.expr) -> bool:
    """A value that names another object (`x`, `self.w`, `x.t()`), not a library call that
    builds a new one (`nn.Parameter(...)`, `torch.empty(...)`)."""
    if isinstance(value, ast.Name | ast.Attribute | ast.Subscript):
        return True
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        root = value.func.value
        while isinstance(root, ast.Attribute | ast.Call | ast.Subscript):
            root = root.func if isinstance(root, ast.Call) else root.value
        return not (isinstance(root, ast.Name) and root.id in _LIBRARIES)
    return False


def storage_owner(node: ast.expr) -> ast.expr:
    """`x.untyped_storage().data_ptr()` is about x."""
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("untyped_storage", "storage", "_storage")
    ):
        node = node.func.value
    return node
