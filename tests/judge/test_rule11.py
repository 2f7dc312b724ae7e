"""Rule 11 as a check: what a round adds is scanned for the shortcuts that vanish in a real
training step. Cheats are caught, weight caches and ordinary code pass (the examples included)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kgit.judge import rule11, tampering
from kgit.judge.rule11 import (
    CONSTEXPR_GROUP,
    DIVISIBLE_GROUP,
    IDENTITY_CACHE,
    IDENTITY_TEST,
    MEMOIZED,
    NO_EMPTY_GROUP,
    STATIC_PARTITION,
    TENSOR_ATTR,
    TENSOR_KEY,
    new_findings,
    scan_change,
    scan_text,
)


def found(source: str, path: str = "kernel.py") -> list[tuple[int, str]]:
    return [(f.line, f.pattern) for f in scan_text(path, textwrap.dedent(source))]


CHEATS = {
    "id-keyed output cache": (
        """
        _CACHE = {}
        def forward(x):
            k = id(x)
            if k in _CACHE:
                return _CACHE[k]
            out = x * 2
            _CACHE[k] = out
            return out
        """,
        IDENTITY_CACHE,
    ),
    "key split over lines, _version and shape added": (
        """
        _CACHE = {}
        def forward(x):
            key = (
                id(x),
                x._version,
                x.shape,
            )
            hit = _CACHE.get(key)
            return hit
        """,
        IDENTITY_CACHE,
    ),
    "data_ptr key": (
        """
        _CACHE = {}
        def forward(x):
            _CACHE[(x.data_ptr(), x.shape)] = x * 2
        """,
        IDENTITY_CACHE,
    ),
    "storage pointer key": (
        """
        _CACHE = {}
        def forward(x):
            return _CACHE.setdefault(x.untyped_storage().data_ptr(), x * 2)
        """,
        IDENTITY_CACHE,
    ),
    "hash(x) key": (
        """
        _CACHE = {}
        def forward(x):
            _CACHE[hash(x)] = x * 2
        """,
        IDENTITY_CACHE,
    ),
    "grad_out on an instance cache": (
        """
        class Op:
            def backward(self, grad_out):
                if id(grad_out) in self._seen:
                    return None
                self._seen.add(id(grad_out))
        """,
        IDENTITY_CACHE,
    ),
    "a weight-named alias of an activation": (
        """
        _CACHE = {}
        def forward(x):
            weight = x
            _CACHE[id(weight)] = x * 2
        """,
        IDENTITY_CACHE,
    ),
    "getattr data_ptr": (
        """
        _CACHE = {}
        def forward(x):
            _CACHE[getattr(x, "data_ptr")()] = x
        """,
        IDENTITY_CACHE,
    ),
    "builtins.id": (
        """
        import builtins
        _CACHE = {}
        def forward(x):
            _CACHE[builtins.id(x)] = x
        """,
        IDENTITY_CACHE,
    ),
    "id renamed": (
        """
        ident = id
        _CACHE = {}
        def forward(x):
            _CACHE[ident(x)] = x
        """,
        IDENTITY_CACHE,
    ),
    "a key function": (
        """
        _CACHE = {}
        def _key(t):
            return (id(t), t._version)
        def forward(x):
            _CACHE[_key(x)] = x
        """,
        IDENTITY_CACHE,
    ),
    "a closure's cache": (
        """
        def make():
            memo = {}
            def forward(x):
                if x.data_ptr() in memo:
                    return memo[x.data_ptr()]
            return forward
        """,
        IDENTITY_CACHE,
    ),
    "lru_cache over a tensor": (
        """
        import functools
        import torch
        @functools.lru_cache(maxsize=None)
        def forward(x: torch.Tensor, scale: float) -> torch.Tensor:
            return x * scale
        """,
        MEMOIZED,
    ),
    "functools.cache over grad_output": (
        """
        from functools import cache
        @cache
        def backward(grad_output):
            return grad_output * 2
        """,
        MEMOIZED,
    ),
    "WeakKeyDictionary of activations": (
        """
        import weakref
        _OUT = weakref.WeakKeyDictionary()
        def forward(x):
            if x in _OUT:
                return _OUT[x]
        """,
        TENSOR_KEY,
    ),
    "is-test against the last input": (
        """
        _last = None
        def forward(x):
            global _last
            if _last is not None and _last[0] is x:
                return _last[1]
            _last = (x, x * 2)
            return _last[1]
        """,
        IDENTITY_TEST,
    ),
    "hash over an unannotated input": (
        """
        _C = {}
        class Op:
            @staticmethod
            def forward(ctx, a, b):
                _C[hash(a)] = a @ b
        """,
        IDENTITY_CACHE,
    ),
    "hash of a local alias of an input": (
        """
        _C = {}
        def forward(a):
            t = a.contiguous()
            _C[hash(t)] = t
        """,
        IDENTITY_CACHE,
    ),
    "a key lambda": (
        """
        _C = {}
        key = lambda t: (id(t), t.shape)
        def forward(x):
            _C[key(x)] = x
        """,
        IDENTITY_CACHE,
    ),
    "the storage object as a key": (
        """
        _C = {}
        def forward(x):
            _C[(x.untyped_storage(), x.shape)] = x
        """,
        IDENTITY_CACHE,
    ),
    "a weak reference as a key": (
        """
        import weakref
        _C = {}
        def forward(x):
            _C[weakref.ref(x)] = x
        """,
        IDENTITY_CACHE,
    ),
    "id fetched from builtins": (
        """
        import builtins
        _C = {}
        def forward(x):
            _C[getattr(builtins, "id")(x)] = x
        """,
        IDENTITY_CACHE,
    ),
    "a weight-named attribute holding an activation": (
        """
        _C = {}
        class Op:
            def forward(self, x):
                self.w_in = x
                _C[id(self.w_in)] = x * 2
        """,
        IDENTITY_CACHE,
    ),
    "a result kept on the input": (
        """
        def forward(x):
            if hasattr(x, "_out"):
                return x._out
            x._out = x * 2
            return x._out
        """,
        TENSOR_ATTR,
    ),
    "setattr on the input": (
        """
        def forward(inp):
            setattr(inp, "_saved", inp * 2)
        """,
        TENSOR_ATTR,
    ),
    "lru_cache applied as a call": (
        """
        import functools
        import torch
        def _forward(x: torch.Tensor) -> torch.Tensor:
            return x * 2
        forward = functools.lru_cache(maxsize=None)(_forward)
        """,
        MEMOIZED,
    ),
    "is-test on an unannotated input": (
        """
        class Op:
            def forward(self, a):
                if a is self._last_a:
                    return self._last_out
        """,
        IDENTITY_TEST,
    ),
    "constexpr tokens per group": (
        """
        @triton.jit
        def grouped(a_ptr, M_per_group: tl.constexpr, BLOCK_M: tl.constexpr):
            pass
        """,
        CONSTEXPR_GROUP,
    ),
    "groups divide by the block": (
        """
        def grouped(x, M_per_group, BLOCK_M):
            assert M_per_group % BLOCK_M == 0
        """,
        DIVISIBLE_GROUP,
    ),
    "every group size divides": (
        """
        def grouped(x, group_sizes, BLOCK_M):
            assert all(m % BLOCK_M == 0 for m in group_sizes)
        """,
        DIVISIBLE_GROUP,
    ),
    "equal slices of the tokens": (
        """
        def grouped(x, num_experts):
            tokens_per_expert = x.shape[0] // num_experts
        """,
        STATIC_PARTITION,
    ),
    "equal groups handed to the kernel": (
        """
        import torch
        def grouped(x, num_experts):
            sizes = torch.full((num_experts,), x.shape[0] // num_experts)
            return sizes
        """,
        STATIC_PARTITION,
    ),
    "a group's offset from a constant stride": (
        """
        @triton.jit
        def grouped(a_ptr, M_per_group):
            pid_g = tl.program_id(1)
            start = pid_g * M_per_group
        """,
        STATIC_PARTITION,
    ),
    "no empty group": (
        """
        def grouped(x, group_sizes):
            assert (group_sizes > 0).all()
        """,
        NO_EMPTY_GROUP,
    ),
}


@pytest.mark.parametrize("name", list(CHEATS))
def test_cheats_are_found(name: str) -> None:
    source, pattern = CHEATS[name]
    assert pattern in [p for _, p in found(source)], name


INNOCENT = {
    "id for logging": """
        import logging
        def forward(x):
            logging.debug("input %s at %x", x.shape, id(x))
            print(f"x is {id(x)}")
            return x * 2
        """,
    "weight caches keyed by id + _version + shape": """
        _W = {}
        class Linear:
            def forward(self, x):
                key = (id(self.weight), self.weight._version, self.weight.shape)
                if key not in _W:
                    _W[key] = self.weight.t().contiguous()
                w_t = _W[key]
                ptr = self.weight.data_ptr()
                _W[(ptr, self.bias.data_ptr())] = w_t
                return x @ w_t
        def fwd(x, weight):
            return _W.get((id(weight), weight._version))
        """,
    "a set the function builds for itself": """
        def unique(tensors):
            seen = set()
            out = []
            for t in tensors:
                if id(t) not in seen:
                    seen.add(id(t))
                    out.append(t)
            return out
        """,
    "lru_cache over sizes": """
        import functools
        @functools.lru_cache(maxsize=None)
        def configs(M: int, N: int, K: int, dtype) -> list:
            return []
        @functools.lru_cache
        def grid(m, n, k):
            return (m // 64, n // 64)
        """,
    "alignment in a specialization key": """
        _KERNELS = {}
        def launch(x, M, N):
            aligned = x.data_ptr() % 16 == 0
            kernel = _KERNELS[(M, N, aligned)]
            kernel2 = _KERNELS.get((M, N, x.data_ptr() % 16))
            return kernel, kernel2
        """,
    "hash of sizes and kernels keyed by function": """
        _COMPILED = {}
        def compile_for(fn, M, N, K):
            key = hash((M, N, K))
            _COMPILED[(id(fn), key)] = fn
        """,
    "tensor indexing and aliasing checks": """
        def forward(x, idx, out=None):
            y = x[idx]
            y[y < 0] = 0
            if out is x:
                raise ValueError("in-place")
            return y
        """,
    "workspace buffers cached per shape": """
        import torch
        _WORKSPACE = {}
        def workspace(M, N, device):
            key = (M, N, device)
            if key not in _WORKSPACE:
                _WORKSPACE[key] = torch.empty(M, N, device=device)
            return _WORKSPACE[key]
        """,
    "aligned K and expert parallel shards": """
        def check(K, BLOCK_K, num_experts, world_size):
            assert K % BLOCK_K == 0
            assert num_experts % world_size == 0
            assert num_experts > 0
        """,
    "the grouped launch swizzle": """
        @triton.jit
        def matmul(a_ptr, M, N, BLOCK_M: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
            pid = tl.program_id(0)
            num_pid_in_group = GROUP_SIZE_M * tl.cdiv(N, BLOCK_M)
            group_id = pid // num_pid_in_group
        """,
    "a grouped GEMM that reads its offsets": """
        @triton.jit
        def grouped(a_ptr, offsets_ptr, BLOCK_M: tl.constexpr):
            g = tl.program_id(1)
            start = tl.load(offsets_ptr + g)
            end = tl.load(offsets_ptr + g + 1)
            m = end - start
        """,
    "a parameter built and cached by its module": """
        import torch.nn as nn
        _T = {}
        class Linear(nn.Module):
            def __init__(self, n):
                self.weight = nn.Parameter(torch.empty(n, n))
            def forward(self, x):
                _T[id(self.weight)] = self.weight.t()
        """,
    "hash of a key and attributes of what a function builds": """
        _C = {}
        def lookup(key, x):
            out = x * 2
            out.kgit_tag = 1
            x.grad = None
            return _C.get(hash(key))
        """,
    "an average share for a tile heuristic": """
        def pick_tiles(x, group_offs):
            G = group_offs.shape[0] - 1
            avg_m = max(x.shape[0] // max(G, 1), 256)
            avg_tokens = x.shape[0] // G
            return 128 if min(avg_m, avg_tokens) < 512 else 256
        """,
    "a pointer passed to a kernel": """
        def launch(x, y):
            kernel[(1,)](x.data_ptr(), y.data_ptr())
            return {"ptr": x.data_ptr()}
        """,
}


@pytest.mark.parametrize("name", list(INNOCENT))
def test_ordinary_code_passes(name: str) -> None:
    assert found(INNOCENT[name]) == [], name


EXAMPLES = Path(rule11.__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize(
    "path", sorted(EXAMPLES.rglob("*.py")), ids=lambda p: str(p.relative_to(EXAMPLES))
)
def test_every_bundled_example_passes(path: Path) -> None:
    found = scan_change({path.name: (None, path.read_text())})
    if path.name.startswith("bench_"):
        # A harness is built on kgit.measure: a round that added those imports would be
        # tampering (kgit/judge/tampering.py), and the harness itself is frozen at baseline.
        assert found and {f.pattern for f in found} == {tampering.IMPORTS_KGIT}
    else:
        assert found == []


def test_findings_name_the_line() -> None:
    source = CHEATS["key split over lines, _version and shape added"][0]
    (finding,) = scan_text("ops/k.py", textwrap.dedent(source))
    assert finding.where == "ops/k.py:9" and "_CACHE.get(key)" in finding.text
    assert finding.subject == "x"
    assert finding.describe().startswith("training shortcut: ops/k.py:9: identity-keyed cache (x)")


def test_only_what_the_change_adds_is_reported() -> None:
    old = "_CACHE = {}\ndef f(x):\n    _CACHE[id(x)] = x\n"
    moved = "import os\n\n" + old  # the same cache, two lines lower: not the round's
    assert new_findings("k.py", old, moved) == []
    added = old + "def g(y):\n    _CACHE[id(y)] = y\n"
    assert [f.line for f in new_findings("k.py", old, added)] == [5]
    # A change to the key alone makes an old line a new finding.
    keyed = "_C = {}\ndef f(x):\n    key = (x.shape,)\n    _C[key] = x\n"
    assert [
        f.line for f in new_findings("k.py", keyed, keyed.replace("(x.shape,)", "(id(x),)"))
    ] == [4]


def test_other_files_are_read_line_by_line() -> None:
    cpp = textwrap.dedent(
        """
        static std::unordered_map<void*, at::Tensor> cache;
        auto it = cache.find(input.data_ptr());
        auto w = cache.find(weight.data_ptr<float>());
        template <int BLOCK_M> void k() { constexpr int M_per_group = 128; }
        static_assert(M_per_group % BLOCK_M == 0);
        auto hit = cache.find(
            grad_out.data_ptr());
        """
    )
    assert found(cpp, "kernel.cu") == [
        (3, IDENTITY_CACHE),
        (5, CONSTEXPR_GROUP),
        (6, DIVISIBLE_GROUP),
        (7, IDENTITY_CACHE),  # a call split over two lines
    ]
    # Python that does not parse falls back to lines.
    assert found("_cache[id(x)] = out\ndef (:\n", "broken.py") == [(1, IDENTITY_CACHE)]
