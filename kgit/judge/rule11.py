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
Pure functions over file texts.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from kgit.judge import tampering

IDENTITY_CACHE = "identity-keyed cache"
TENSOR_KEY = "tensor-keyed cache"
MEMOIZED = "memoized tensor arguments"
IDENTITY_TEST = "identity test against a stored tensor"
TENSOR_ATTR = "result stashed on a tensor"
CONSTEXPR_GROUP = "constexpr tokens per group"
DIVISIBLE_GROUP = "groups assumed to divide by the block"
STATIC_PARTITION = "static per-expert partition"
NO_EMPTY_GROUP = "no empty group assumed"

_CACHE_WHY = (
    "hits when the benchmark reuses a tensor or the allocator reuses an address, and misses or "
    "returns stale data in a training step; _version, shape or dtype in the key do not rescue "
    "it (allowed: weights keyed by id(weight) + _version + shape)"
)
_UNIFORM_WHY = (
    "valid only when every expert gets the same tokens: routed MoE traffic is skewed (top-k, "
    "capacity factors, hot and empty experts)"
)
WHY = {
    IDENTITY_CACHE: "a cache keyed on the identity of a non-weight tensor " + _CACHE_WHY,
    TENSOR_KEY: "a cache keyed on a tensor object (tensors hash by identity) " + _CACHE_WHY,
    MEMOIZED: "memoization over tensor arguments (keyed by identity) " + _CACHE_WHY,
    IDENTITY_TEST: "reusing a result when the same tensor object comes back " + _CACHE_WHY,
    TENSOR_ATTR: "a result kept as an attribute of an input tensor (`x._out = out`) " + _CACHE_WHY,
    CONSTEXPR_GROUP: "tokens per group compiled in as a constant: " + _UNIFORM_WHY,
    DIVISIBLE_GROUP: "every group's rows assumed to be a multiple of the block: " + _UNIFORM_WHY,
    STATIC_PARTITION: "groups cut as equal slices of the tokens: " + _UNIFORM_WHY,
    NO_EMPTY_GROUP: "asserts that no group is empty: " + _UNIFORM_WHY,
    # What a change must not do to the measuring process, scanned and reported alongside.
    **tampering.WHY,
}
PATTERNS = tuple(WHY)


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    pattern: str
    text: str  # the source line, stripped
    subject: str = ""  # what the key or the shortcut is about (`x`, `M_per_group`)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def why(self) -> str:
        return WHY[self.pattern]

    @property
    def key(self) -> tuple[str, str]:
        """What makes two findings the same one, wherever the line moved."""
        return self.pattern, " ".join(self.text.split())

    def describe(self) -> str:
        about = f" ({self.subject})" if self.subject else ""
        rule = "tampering" if self.pattern in tampering.PATTERNS else "rule 11"
        return f"{rule}: {self.where}: {self.pattern}{about}: `{self.text}`"

    def to_dict(self) -> dict[str, str | int]:
        return {
            "path": self.path,
            "line": self.line,
            "where": self.where,
            "pattern": self.pattern,
            "subject": self.subject,
            "text": self.text,
            "why": self.why,
        }


# -- names ------------------------------------------------------------------------------------

# A weight, a parameter, or what owns them: keys on these are the bounded caches rule 11 allows.
_WEIGHT = re.compile(
    r"(?i)w|wt|w\d+|w_\w+|\w+_w|\w*weights?\w*|params?|parameters?|\w+_params?|bias(es)?|\w+_bias"
    r"|self|module|model|layer|\w+_layer|lora_\w+"
)
# Objects that are not tensors at all (kernels, callbacks, configurations).
_NOT_TENSOR = re.compile(
    r"(?i)fn|func|function|callback|kernel|\w+_(fn|func|kernel)|cls|config|cfg"
)
# Names that say "tensor" without an annotation. Deliberately narrow (no a, b, k, t): hash() or
# lru_cache over `k` is more often over an int than over a tensor.
_TENSOR = re.compile(
    r"x|xs|x\d|inp|input|inputs|out|output|outputs|grad|grads|grad_\w+|\w+_grad|dy|dx|dout|d_out"
    r"|act|acts|activations?|hidden|hidden_states|tokens|tensor|tensors|\w+_tensor|logits"
)
_CACHE_NAME = re.compile(r"(?i)\w*(cache|memo|lookup|saved|seen|stash|last|prev)\w*")
_PER_GROUP = re.compile(r"(?i)(m|tokens?|rows?|num_tokens|n_tokens)_?per_?(group|expert)s?")
_GROUPS = re.compile(r"(?i)(num_|n_|n)?(groups|experts|local_experts)|num_group|num_expert|G|E")
_TOTAL = re.compile(r"(?i)m|t|total\w*|\w*tokens|num_rows|rows|\w+\.shape\[0\]|\w+\.size\(0\)")
_GROUP_INDEX = re.compile(r"(?i)(pid_?)?(g|group|expert|e)(_?id|_?idx|_index)?|gid|eid")
_GROUPISH = re.compile(
    r"(?i)per_?(group|expert)|group_?(sizes?|lens?)|\bexpert|m_?splits|batch_?sizes|\bsizes\b"
    r"|\bsplits\b|\bcounts\b"
)
_SIZES = re.compile(
    r"(?i)sizes|splits|counts|tokens_per_(expert|group)|m_per_(group|expert)|group_lens?"
)
_BLOCK = re.compile(r"(?i)block|blk|tile")
_SCALAR = re.compile(r"\b(int|float|str|bool|tuple|Tuple|dtype|Sequence|list|List|dict|Dict)\b")
# Parameters that are keys, sizes or names, not tensors: hash() over them is ordinary.
_NOT_KEY_PART = re.compile(
    r"(?i)self|cls|ctx|key|keys|\w*name|\w*shape|dims?|sizes?|[mnk]|\w+_(id|idx)"
)
# Attributes a tensor has of its own: setting them is no stashing.
_TENSOR_ATTRS = {"grad", "data", "requires_grad", "retains_grad", "names"}
_LIBRARIES = {"torch", "nn", "F", "np", "numpy", "triton", "tl", "math", "functools", "weakref"}
_MEMO_DECORATORS = {"lru_cache", "cache", "cached", "memoize", "memoized"}
_ASSERTS = {"static_assert", "device_assert", "_assert", "_check", "assert_"}


def _name(node: ast.AST) -> str | None:
    """The name a node is about: `x`, `self.weight` -> weight, `w.t()` -> w, `xs[0]` -> xs."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript | ast.Starred):
        return _name(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return _name(node.func.value)  # a method of the object: w.t(), x.contiguous()
    return None


# -- Python: scopes ---------------------------------------------------------------------------


@dataclass
class _Scope:
    parent: _Scope | None
    assigns: dict[str, list[ast.expr]] = field(default_factory=dict)
    params: dict[str, ast.arg] = field(default_factory=dict)
    shared: set[str] = field(default_factory=set)  # declared `global` or `nonlocal`

    def values(self, name: str) -> list[ast.expr] | None:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.params:
                return None
            if name in scope.assigns:
                return scope.assigns[name]
            scope = scope.parent
        return None

    def param(self, name: str) -> ast.arg | None:
        scope: _Scope | None = self
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
    return isinstance(value, ast.Call) and _name(value.func) in _CONTAINERS


def _module_functions(
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


def _self_attributes(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """What each `self.<attr>` is assigned anywhere in the module."""
    found: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and ast.unparse(target.value) == "self":
                    found.setdefault(target.attr, []).append(node.value)
    return found


def _own_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
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


def _scope(body: list[ast.stmt], parent: _Scope | None, args: ast.arguments | None) -> _Scope:
    scope = _Scope(parent)
    if args is not None:
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None:
                scope.params[arg.arg] = arg
    for node in _own_nodes(body):
        for name, value in _targets(node):
            scope.assigns.setdefault(name, []).append(value)
        if isinstance(node, ast.Global | ast.Nonlocal):
            scope.shared.update(node.names)
    return scope


def _annotation(arg: ast.arg | None) -> str:
    return ast.unparse(arg.annotation) if arg is not None and arg.annotation is not None else ""


# -- Python: the scan -------------------------------------------------------------------------


class _PythonScan:
    def __init__(self, path: str, text: str, tree: ast.Module) -> None:
        self.path, self.lines = path, text.splitlines()
        self.module = _scope(tree.body, None, None)
        self.aliases = {  # `ident = id` at module level
            name
            for name, values in self.module.assigns.items()
            if any(isinstance(v, ast.Name) and v.id in ("id", "hash") for v in values)
        }
        self.self_attrs = _self_attributes(tree)
        self.functions = {
            node.name: node
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        self.key_functions: dict[str, list[int]] = {}
        self.key_functions = self._key_functions(tree)
        self.found: dict[tuple[str, int], Finding] = {}
        self.caches: set[tuple[object, ...]] = set()

    def run(self, tree: ast.Module) -> list[Finding]:
        self._visit_body(tree.body, self.module)
        return sorted(self.found.values(), key=lambda f: (f.line, f.pattern))

    def _add(
        self, node: ast.AST, pattern: str, subject: str, once: tuple[object, ...] = ()
    ) -> None:
        """Record a finding at NODE's line; ONCE names a cache so that its lookups and stores
        in one function are one finding, at the first line."""
        if once:
            if once in self.caches:
                return
            self.caches.add(once)
        line = getattr(node, "lineno", 1)
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        self.found.setdefault((pattern, line), Finding(self.path, line, pattern, text, subject))

    def _visit_body(self, body: list[ast.stmt], scope: _Scope) -> None:
        for node in _own_nodes(body):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                inner = _scope(inner_body(node), scope, node.args)
                if not isinstance(node, ast.Lambda):
                    self._memoized(node, inner)
                self._constexpr_params(node.args)
                self._visit_body(inner_body(node), inner)
            elif isinstance(node, ast.ClassDef):
                self._visit_body(node.body, scope)
            else:
                self._check(node, scope)

    # identity keys ------------------------------------------------------------------------

    def _key_functions(self, tree: ast.Module) -> dict[str, list[int]]:
        """Functions that return a key built on the identity of (some of) their parameters:
        `def _key(t): return (id(t), t._version)` makes `cache[_key(x)]` keyed on x."""
        found: dict[str, list[int]] = {}
        for name, node in _module_functions(tree):
            scope = _scope(inner_body(node), self.module, node.args)
            names = [a.arg for a in node.args.args]
            returned = (
                [node.body]
                if isinstance(node, ast.Lambda)
                else [r.value for r in _own_nodes(node.body) if isinstance(r, ast.Return)]
            )
            keyed = {
                names.index(subject.id)
                for value in returned
                if value is not None
                for subject in self._subjects(value, scope, set(), {})
                if isinstance(subject, ast.Name) and subject.id in names
            }
            if keyed:
                found[name] = sorted(keyed)
        return found

    def _subjects(
        self, expr: ast.AST, scope: _Scope, seen: set[str], functions: Mapping[str, list[int]]
    ) -> list[ast.expr]:
        """The objects whose identity EXPR is built on, through key variables of SCOPE."""
        subjects: list[ast.expr] = []
        for node in _key_parts(expr):
            if isinstance(node, ast.Call):
                subjects += self._identity_call(node, scope, functions)
            elif isinstance(node, ast.Attribute) and node.attr == "_cdata":
                subjects.append(node.value)
            elif isinstance(node, ast.Name) and node.id not in seen:
                values = scope.values(node.id)
                if values:
                    seen.add(node.id)
                    for value in values:
                        subjects += self._subjects(value, scope, seen, functions)
        return subjects

    def _identity_call(
        self, call: ast.Call, scope: _Scope, functions: Mapping[str, list[int]]
    ) -> list[ast.expr]:
        func, args = call.func, call.args
        name = func.id if isinstance(func, ast.Name) else None
        qualified = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
        if qualified and ast.unparse(func).startswith("builtins."):
            name = ast.unparse(func).removeprefix("builtins.")
        fetched = _getattr_name(func)  # getattr(x, "data_ptr")(), getattr(builtins, "id")(x)
        if fetched and ast.unparse(fetched[0]) in ("builtins", "__builtins__"):
            name = fetched[1]
        elif fetched and fetched[1] in ("data_ptr", "__hash__", "_cdata"):
            return [fetched[0]]
        if (name == "id" or name in self.aliases) and args:
            return [args[0]]
        if ast.unparse(func) in ("weakref.ref", "weakref.proxy") and args:
            return [args[0]]  # a weak reference hashes as its referent
        if name == "hash" and args and self._maybe_tensor(args[0], scope):
            return [args[0]]
        if isinstance(func, ast.Attribute) and func.attr in ("data_ptr", "__hash__"):
            return [_storage_owner(func.value)]
        keyed = functions.get(name or "") or self.key_functions.get(name or "", [])
        return [args[i] for i in keyed if i < len(args)]

    def _weight(self, subject: ast.expr, scope: _Scope, depth: int = 0) -> bool:
        """A weight, a parameter or their owner. An alias is followed, local or an attribute of
        `self` (`weight = x`, `self.w_in = x` make no weight of an activation)."""
        name = _name(subject)
        if name is None:
            return False
        if isinstance(subject, ast.Name):
            values = scope.values(name) or []
        elif isinstance(subject, ast.Attribute) and ast.unparse(subject.value) == "self":
            values = self.self_attrs.get(name, [])
        else:
            values = []
        aliases = [v for v in values if _alias(v)]
        if aliases and depth < 4:
            return all(self._weight(v, scope, depth + 1) for v in aliases)
        return bool(_WEIGHT.fullmatch(name) or _NOT_TENSOR.fullmatch(name))

    def _maybe_tensor(self, node: ast.expr, scope: _Scope, depth: int = 0) -> bool:
        """Tensor-named, or a parameter nothing says is not a tensor (for hash() and `is`);
        a local alias is followed (`t = a.contiguous()`)."""
        if self._tensor_like(node, scope):
            return True
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value  # a method's result is about its object: a.contiguous()
        name = _name(node)
        values = scope.values(name) if isinstance(node, ast.Name) and name else None
        aliases = [v for v in values or [] if _alias(v)]
        if aliases and depth < 4:
            return any(self._maybe_tensor(v, scope, depth + 1) for v in aliases)
        arg = scope.param(name) if isinstance(node, ast.Name) and name else None
        return (
            arg is not None
            and not _SCALAR.search(_annotation(arg))
            and not _NOT_KEY_PART.fullmatch(arg.arg)
            and not self._weight(node, scope)
        )

    def _tensor_like(self, node: ast.expr, scope: _Scope) -> bool:
        name = _name(node)
        if name is None:
            return False
        if "Tensor" in _annotation(scope.param(name)):
            return True
        return bool(_TENSOR.fullmatch(name)) and not self._weight(node, scope)

    def _key_check(self, node: ast.AST, key: ast.expr, container: ast.expr, s: _Scope) -> None:
        if not s.persistent(container):
            return
        subjects = self._subjects(key, s, set(), {})
        loose = [x for x in subjects if not self._weight(x, s)]
        cache = (id(s), ast.unparse(container))
        if loose:
            subject = ", ".join(sorted({ast.unparse(x) for x in loose}))
            self._add(node, IDENTITY_CACHE, subject, (IDENTITY_CACHE, *cache, subject))
            return
        parts = key.elts if isinstance(key, ast.Tuple) else [key]
        storages = [
            p.func.value
            for p in parts
            if isinstance(p, ast.Call)
            and isinstance(p.func, ast.Attribute)
            and p.func.attr in ("untyped_storage", "storage", "_storage")
            and not self._weight(p.func.value, s)
        ]
        if storages:  # a storage object hashes by identity too
            subject = ", ".join(ast.unparse(x) for x in storages)
            self._add(node, IDENTITY_CACHE, subject, (IDENTITY_CACHE, *cache, subject))
            return
        if not self._cache_container(container, s):
            return
        tensors = [p for p in parts if isinstance(p, ast.Name) and self._tensor_like(p, s)]
        if tensors:
            subject = ", ".join(p.id for p in tensors)
            self._add(node, TENSOR_KEY, subject, (TENSOR_KEY, *cache, subject))

    def _cache_container(self, container: ast.expr, scope: _Scope) -> bool:
        name = _name(container)
        if name is None:
            return False
        values = scope.values(name) or []
        weak = any("Weak" in ast.unparse(v) for v in values)
        return weak or bool(_CACHE_NAME.fullmatch(name))

    def _check(self, node: ast.AST, scope: _Scope) -> None:
        if isinstance(node, ast.Subscript):
            self._key_check(node, node.slice, node.value, scope)
        elif isinstance(node, ast.Call):
            self._call(node, scope)
        elif isinstance(node, ast.Compare):
            self._compare(node, scope)
        elif isinstance(node, ast.Assert):
            self._assertion(node, node.test)
        elif isinstance(node, ast.BinOp):
            self._partition(node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            self._constexpr(node, node.target.id, ast.unparse(node.annotation))
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            self._per_group_split(node)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                self._stash(node, target, scope)

    def _stash(self, node: ast.AST, target: ast.expr, scope: _Scope) -> None:
        """`x._out = out`: a result kept on the input tensor object is an identity cache."""
        if (
            isinstance(target, ast.Attribute)
            and target.attr not in _TENSOR_ATTRS
            and isinstance(target.value, ast.Name)
            and scope.param(target.value.id) is not None  # an input, not what it builds
            and self._tensor_like(target.value, scope)
        ):
            self._add(node, TENSOR_ATTR, ast.unparse(target))

    def _call(self, call: ast.Call, scope: _Scope) -> None:
        func = call.func
        self._memoized_call(call, scope)
        if (
            _name(func) == "setattr"
            and isinstance(func, ast.Name)
            and len(call.args) == 3
            and isinstance(call.args[0], ast.Name)
            and scope.param(call.args[0].id) is not None
            and self._tensor_like(call.args[0], scope)
        ):
            self._add(call, TENSOR_ATTR, ast.unparse(call.args[0]))
        if isinstance(func, ast.Attribute) and call.args:
            if func.attr in ("get", "setdefault", "pop", "add", "__contains__", "__getitem__"):
                self._key_check(call, call.args[0], func.value, scope)
            if func.attr == "update" and isinstance(call.args[0], ast.Dict):
                for key in call.args[0].keys:
                    if key is not None:
                        self._key_check(call, key, func.value, scope)
            if func.attr in _ASSERTS:
                self._assertion(call, call.args[0])
        if isinstance(func, ast.Name) and func.id in _ASSERTS and call.args:
            self._assertion(call, call.args[0])
        name = _name(func) if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in _PARTITION_CALLS:  # torch.full((G,), M // G), x.split(T // E)
            for arg in [*call.args, *(k.value for k in call.keywords)]:
                if _equal_split(arg):
                    self._add(call, STATIC_PARTITION, ast.unparse(call))
                    return

    def _compare(self, node: ast.Compare, scope: _Scope) -> None:
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=False):
            if isinstance(op, ast.In | ast.NotIn):
                self._key_check(node, left, right, scope)
            elif isinstance(op, ast.Is | ast.IsNot):
                for a, b in ((left, right), (right, left)):
                    stored = _name(b)
                    kept = stored and _CACHE_NAME.fullmatch(stored) and scope.persistent(b)
                    if kept and self._maybe_tensor(a, scope):
                        self._add(node, IDENTITY_TEST, f"{ast.unparse(a)} is {ast.unparse(b)}")
                        break
            left = right

    # memoization --------------------------------------------------------------------------

    def _memoized_call(self, call: ast.Call, scope: _Scope) -> None:
        """`fwd = functools.lru_cache(maxsize=None)(_fwd)`, `fwd = functools.cache(_fwd)`."""
        memo = call.func.func if isinstance(call.func, ast.Call) else call.func
        if _name(memo) not in _MEMO_DECORATORS or not call.args:
            return
        wrapped = call.args[0]
        target = self.functions.get(wrapped.id) if isinstance(wrapped, ast.Name) else None
        if target is not None:
            inner = _scope(target.body, self.module, target.args)
            self._memoized(target, inner, at=call)

    def _memoized(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope, at: ast.AST | None = None
    ) -> None:
        names = {_name(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list}
        if at is None and not names & _MEMO_DECORATORS:
            return
        tensors = [
            arg.arg
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            if arg.arg not in ("self", "cls")
            and self._tensor_like(ast.Name(arg.arg, ast.Load()), scope)
        ]
        if tensors:
            self._add(at or node, MEMOIZED, ", ".join(tensors))

    # grouped GEMM ---------------------------------------------------------------------------

    def _constexpr_params(self, args: ast.arguments) -> None:
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            self._constexpr(arg, arg.arg, _annotation(arg))

    def _constexpr(self, node: ast.AST, name: str, annotation: str) -> None:
        if "constexpr" in annotation and _PER_GROUP.fullmatch(name):
            self._add(node, CONSTEXPR_GROUP, name)

    def _assertion(self, node: ast.AST, test: ast.expr) -> None:
        text = ast.unparse(test)
        for part in ast.walk(test):
            if isinstance(part, ast.BinOp) and isinstance(part.op, ast.Mod):
                divisor = ast.unparse(part.right)
                block = _BLOCK.search(divisor) or (
                    isinstance(part.right, ast.Constant) and str(part.right.value).isdigit()
                )
                if block and _GROUPISH.search(text):
                    self._add(node, DIVISIBLE_GROUP, ast.unparse(part.left))
                    return
            if isinstance(part, ast.Compare) and _SIZES.search(text):
                for op, right in zip(part.ops, part.comparators, strict=False):
                    value = right.value if isinstance(right, ast.Constant) else None
                    nonzero = (isinstance(op, ast.Gt | ast.NotEq) and value == 0) or (
                        isinstance(op, ast.GtE) and value == 1
                    )
                    if nonzero:
                        self._add(node, NO_EMPTY_GROUP, ast.unparse(part.left))
                        return

    def _per_group_split(self, node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> None:
        """`tokens_per_expert = M // num_experts`: an equal share named as each group's rows.
        The same division named otherwise (`avg_m = M // G` for a tile heuristic) passes."""
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if node.value is not None and any(_PER_GROUP.fullmatch(n) for n in names):
            split = _equal_split(node.value)
            if split is not None:
                self._add(node, STATIC_PARTITION, ast.unparse(split))

    def _partition(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.Mult):
            for a, b in ((node.left, node.right), (node.right, node.left)):
                if isinstance(a, ast.List) and len(a.elts) == 1:
                    item, count = _name(a.elts[0]), _name(b)
                    if item and count and _PER_GROUP.fullmatch(item) and _GROUPS.fullmatch(count):
                        self._add(node, STATIC_PARTITION, ast.unparse(node))
                        return
                per, index = _name(a), ast.unparse(b)
                uniform = (
                    per and _PER_GROUP.fullmatch(per) and isinstance(a, ast.Name | ast.Attribute)
                )
                if uniform and (_GROUP_INDEX.fullmatch(index) or "arange" in index):
                    self._add(node, STATIC_PARTITION, ast.unparse(node))
                    return


_PARTITION_CALLS = {"full", "split", "tensor_split", "arange", "repeat_interleave"}


def _equal_split(expr: ast.AST) -> ast.expr | None:
    """`M // num_experts` or `cdiv(tokens, G)` in EXPR: the tokens cut in equal shares."""
    for node in ast.walk(expr):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
            total, groups = node.left, node.right
        elif isinstance(node, ast.Call) and _name(node.func) in ("cdiv", "ceil_div"):
            if len(node.args) != 2:
                continue
            total, groups = node.args
        else:
            continue
        name = _name(groups) if isinstance(groups, ast.Name | ast.Attribute) else None
        if name and _GROUPS.fullmatch(name) and _TOTAL.fullmatch(ast.unparse(total)):
            return node
    return None


def _key_parts(expr: ast.AST) -> Iterator[ast.AST]:
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


def _getattr_name(func: ast.expr) -> tuple[ast.expr, str] | None:
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


def _alias(value: ast.expr) -> bool:
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


def _storage_owner(node: ast.expr) -> ast.expr:
    """`x.untyped_storage().data_ptr()` is about x."""
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("untyped_storage", "storage", "_storage")
    ):
        node = node.func.value
    return node


# -- other files: line by line ----------------------------------------------------------------

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
        if not (_WEIGHT.fullmatch(last) or _NOT_TENSOR.fullmatch(last)):
            return subject
    return None


def _scan_lines(path: str, text: str) -> list[Finding]:
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


# -- the change -------------------------------------------------------------------------------

_PYTHON = (".py", ".pyi")


def scan_text(path: str, text: str) -> list[Finding]:
    """Every rule-11 finding in one file's TEXT."""
    if path.endswith(_PYTHON):
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return _scan_lines(path, text)
        scanner = _PythonScan(path, text, tree)
        for node, pattern, subject in tampering.scan(tree):
            scanner._add(node, pattern, subject)
        return scanner.run(tree)
    return _scan_lines(path, text)


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
