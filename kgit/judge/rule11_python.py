"""Rule 11 over a Python file's syntax tree: a pattern split over lines is one expression, and an
`id()` for logging is no key (see kgit/judge/rule11.py for what is looked for)."""

from __future__ import annotations

import ast
from collections.abc import Mapping

from kgit.judge.rule11_findings import (
    CONSTEXPR_GROUP,
    DIVISIBLE_GROUP,
    IDENTITY_CACHE,
    IDENTITY_TEST,
    MEMOIZED,
    NO_EMPTY_GROUP,
    STATIC_PARTITION,
    TENSOR_ATTR,
    TENSOR_KEY,
    Finding,
)
from kgit.judge.rule11_syntax import (
    ASSERTS,
    BLOCK_NAME,
    CACHE_NAME,
    GROUP_INDEX,
    GROUPISH,
    GROUPS,
    MEMO_DECORATORS,
    NOT_KEY_PART,
    NOT_TENSOR,
    PARTITION_CALLS,
    PER_GROUP,
    SCALAR,
    SIZES,
    TENSOR,
    TENSOR_ATTRS,
    WEIGHT,
    Scope,
    alias_of,
    annotation_of,
    equal_split,
    getattr_name,
    inner_body,
    key_parts,
    module_functions,
    node_name,
    own_nodes,
    scope_of,
    self_attributes,
    storage_owner,
)


class PythonScan:
    def __init__(self, path: str, text: str, tree: ast.Module) -> None:
        self.path, self.lines = path, text.splitlines()
        self.module = scope_of(tree.body, None, None)
        self.aliases = {  # `ident = id` at module level
            name
            for name, values in self.module.assigns.items()
            if any(isinstance(v, ast.Name) and v.id in ("id", "hash") for v in values)
        }
        self.self_attrs = self_attributes(tree)
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

    def _visit_body(self, body: list[ast.stmt], scope: Scope) -> None:
        for node in own_nodes(body):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                inner = scope_of(inner_body(node), scope, node.args)
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
        for name, node in module_functions(tree):
            scope = scope_of(inner_body(node), self.module, node.args)
            names = [a.arg for a in node.args.args]
            returned = (
                [node.body]
                if isinstance(node, ast.Lambda)
                else [r.value for r in own_nodes(node.body) if isinstance(r, ast.Return)]
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
        self, expr: ast.AST, scope: Scope, seen: set[str], functions: Mapping[str, list[int]]
    ) -> list[ast.expr]:
        """The objects whose identity EXPR is built on, through key variables of SCOPE."""
        subjects: list[ast.expr] = []
        for node in key_parts(expr):
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
        self, call: ast.Call, scope: Scope, functions: Mapping[str, list[int]]
    ) -> list[ast.expr]:
        func, args = call.func, call.args
        name = func.id if isinstance(func, ast.Name) else None
        qualified = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
        if qualified and ast.unparse(func).startswith("builtins."):
            name = ast.unparse(func).removeprefix("builtins.")
        fetched = getattr_name(func)  # getattr(x, "data_ptr")(), getattr(builtins, "id")(x)
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
            return [storage_owner(func.value)]
        keyed = functions.get(name or "") or self.key_functions.get(name or "", [])
        return [args[i] for i in keyed if i < len(args)]

    def _weight(self, subject: ast.expr, scope: Scope, depth: int = 0) -> bool:
        """A weight, a parameter or their owner. An alias is followed, local or an attribute of
        `self` (`weight = x`, `self.w_in = x` make no weight of an activation)."""
        name = node_name(subject)
        if name is None:
            return False
        if isinstance(subject, ast.Name):
            values = scope.values(name) or []
        elif isinstance(subject, ast.Attribute) and ast.unparse(subject.value) == "self":
            values = self.self_attrs.get(name, [])
        else:
            values = []
        aliases = [v for v in values if alias_of(v)]
        if aliases and depth < 4:
            return all(self._weight(v, scope, depth + 1) for v in aliases)
        return bool(WEIGHT.fullmatch(name) or NOT_TENSOR.fullmatch(name))

    def _maybe_tensor(self, node: ast.expr, scope: Scope, depth: int = 0) -> bool:
        """Tensor-named, or a parameter nothing says is not a tensor (for hash() and `is`);
        a local alias is followed (`t = a.contiguous()`)."""
        if self._tensor_like(node, scope):
            return True
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value  # a method's result is about its object: a.contiguous()
        name = node_name(node)
        values = scope.values(name) if isinstance(node, ast.Name) and name else None
        aliases = [v for v in values or [] if alias_of(v)]
        if aliases and depth < 4:
            return any(self._maybe_tensor(v, scope, depth + 1) for v in aliases)
        arg = scope.param(name) if isinstance(node, ast.Name) and name else None
        return (
            arg is not None
            and not SCALAR.search(annotation_of(arg))
            and not NOT_KEY_PART.fullmatch(arg.arg)
            and not self._weight(node, scope)
        )

    def _tensor_like(self, node: ast.expr, scope: Scope) -> bool:
        name = node_name(node)
        if name is None:
            return False
        if "Tensor" in annotation_of(scope.param(name)):
            return True
        return bool(TENSOR.fullmatch(name)) and not self._weight(node, scope)

    def _key_check(self, node: ast.AST, key: ast.expr, container: ast.expr, s: Scope) -> None:
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

    def _cache_container(self, container: ast.expr, scope: Scope) -> bool:
        name = node_name(container)
        if name is None:
            return False
        values = scope.values(name) or []
        weak = any("Weak" in ast.unparse(v) for v in values)
        return weak or bool(CACHE_NAME.fullmatch(name))

    def _check(self, node: ast.AST, scope: Scope) -> None:
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

    def _stash(self, node: ast.AST, target: ast.expr, scope: Scope) -> None:
        """`x._out = out`: a result kept on the input tensor object is an identity cache."""
        if (
            isinstance(target, ast.Attribute)
            and target.attr not in TENSOR_ATTRS
            and isinstance(target.value, ast.Name)
            and scope.param(target.value.id) is not None  # an input, not what it builds
            and self._tensor_like(target.value, scope)
        ):
            self._add(node, TENSOR_ATTR, ast.unparse(target))

    def _call(self, call: ast.Call, scope: Scope) -> None:
        func = call.func
        self._memoized_call(call, scope)
        if (
            node_name(func) == "setattr"
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
            if func.attr in ASSERTS:
                self._assertion(call, call.args[0])
        if isinstance(func, ast.Name) and func.id in ASSERTS and call.args:
            self._assertion(call, call.args[0])
        name = node_name(func) if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in PARTITION_CALLS:  # torch.full((G,), M // G), x.split(T // E)
            for arg in [*call.args, *(k.value for k in call.keywords)]:
                if equal_split(arg):
                    self._add(call, STATIC_PARTITION, ast.unparse(call))
                    return

    def _compare(self, node: ast.Compare, scope: Scope) -> None:
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=False):
            if isinstance(op, ast.In | ast.NotIn):
                self._key_check(node, left, right, scope)
            elif isinstance(op, ast.Is | ast.IsNot):
                for a, b in ((left, right), (right, left)):
                    stored = node_name(b)
                    kept = stored and CACHE_NAME.fullmatch(stored) and scope.persistent(b)
                    if kept and self._maybe_tensor(a, scope):
                        self._add(node, IDENTITY_TEST, f"{ast.unparse(a)} is {ast.unparse(b)}")
                        break
            left = right

    # memoization --------------------------------------------------------------------------

    def _memoized_call(self, call: ast.Call, scope: Scope) -> None:
        """`fwd = functools.lru_cache(maxsize=None)(_fwd)`, `fwd = functools.cache(_fwd)`."""
        memo = call.func.func if isinstance(call.func, ast.Call) else call.func
        if node_name(memo) not in MEMO_DECORATORS or not call.args:
            return
        wrapped = call.args[0]
        target = self.functions.get(wrapped.id) if isinstance(wrapped, ast.Name) else None
        if target is not None:
            inner = scope_of(target.body, self.module, target.args)
            self._memoized(target, inner, at=call)

    def _memoized(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: Scope, at: ast.AST | None = None
    ) -> None:
        names = {node_name(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list}
        if at is None and not names & MEMO_DECORATORS:
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
            self._constexpr(arg, arg.arg, annotation_of(arg))

    def _constexpr(self, node: ast.AST, name: str, annotation: str) -> None:
        if "constexpr" in annotation and PER_GROUP.fullmatch(name):
            self._add(node, CONSTEXPR_GROUP, name)

    def _assertion(self, node: ast.AST, test: ast.expr) -> None:
        text = ast.unparse(test)
        for part in ast.walk(test):
            if isinstance(part, ast.BinOp) and isinstance(part.op, ast.Mod):
                divisor = ast.unparse(part.right)
                block = BLOCK_NAME.search(divisor) or (
                    isinstance(part.right, ast.Constant) and str(part.right.value).isdigit()
                )
                if block and GROUPISH.search(text):
                    self._add(node, DIVISIBLE_GROUP, ast.unparse(part.left))
                    return
            if isinstance(part, ast.Compare) and SIZES.search(text):
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
        if node.value is not None and any(PER_GROUP.fullmatch(n) for n in names):
            split = equal_split(node.value)
            if split is not None:
                self._add(node, STATIC_PARTITION, ast.unparse(split))

    def _partition(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.Mult):
            for a, b in ((node.left, node.right), (node.right, node.left)):
                if isinstance(a, ast.List) and len(a.elts) == 1:
                    item, count = node_name(a.elts[0]), node_name(b)
                    if item and count and PER_GROUP.fullmatch(item) and GROUPS.fullmatch(count):
                        self._add(node, STATIC_PARTITION, ast.unparse(node))
                        return
                per, index = node_name(a), ast.unparse(b)
                uniform = (
                    per and PER_GROUP.fullmatch(per) and isinstance(a, ast.Name | ast.Attribute)
                )
                if uniform and (GROUP_INDEX.fullmatch(index) or "arange" in index):
                    self._add(node, STATIC_PARTITION, ast.unparse(node))
                    return
