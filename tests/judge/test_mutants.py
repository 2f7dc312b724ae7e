"""The mutator of `kgit gate audit`: each kind, on Python/Triton and C++, spliced into the
original bytes; a deterministic draw; files it cannot mutate."""

from __future__ import annotations

import ast

import pytest

from kgit.judge.mutants import (
    KINDS,
    Mutant,
    NotMutable,
    choose,
    cpp_mutants,
    draw,
    mutants_of,
)

TRITON = b"""\
import triton
import triton.language as tl

BLOCK_M = 4  # a tunable: module-level code is never mutated


@triton.jit
def rms_kernel(x_ptr, y_ptr, M, N, stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0)
    mean = tl.sum(x * x, axis=0) / N
    tl.store(y_ptr + row * stride + cols, x / mean, mask=cols < N)
    tl.store(y_ptr + M, 3)


def launch(x):  # a wrapper: not mutated when the file has kernels
    return x.shape[0] + 1
"""


def _by_kind(mutants: list[Mutant]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for m in mutants:
        found.setdefault(m.kind, []).append(m.description)
    return found


def test_each_kind_on_a_triton_kernel() -> None:
    found = _by_kind(mutants_of("k.py", TRITON))
    assert found["denominator"] == ["`/ N` -> `/ BLOCK_N`"]  # the padded width: the real bug
    assert "tl.load(...): drop `mask=cols < N, other=0.0`" in found["mask"]
    assert found["other"] == ["tl.load(...): `other=0.0` -> `other=1.0`"]
    assert "tl.store(...): drop `mask=cols < N`" in found["mask"]
    assert found["boundary"] == ["`cols < N` -> `cols <= N`"] * 2
    assert "`*` -> `+` in `row * stride`" in found["arith"]
    assert "`+` -> `-` in `y_ptr + M`" in found["arith"]
    # 3 in the store; program_id's axis, arange's bounds, the tunable: never
    assert found["constant"] == ["`3` -> `4`"]


def test_a_mutant_changes_only_its_expression() -> None:
    for mutant in mutants_of("k.py", TRITON):
        mutated = mutant.apply(TRITON)
        ast.parse(mutated)
        assert mutated[: mutant.start] == TRITON[: mutant.start]
        assert mutated[mutant.start + len(mutant.replacement) :] == TRITON[mutant.end :]
        assert ast.dump(ast.parse(mutated)) != ast.dump(ast.parse(TRITON))
        assert mutant.line == TRITON[: mutant.start].count(b"\n") + 1
    denominator = next(m for m in mutants_of("k.py", TRITON) if m.kind == "denominator")
    assert b"tl.sum(x * x, axis=0) / BLOCK_N" in denominator.apply(TRITON)
    assert denominator.where == "k.py:12"


def test_parentheses_keep_precedence() -> None:
    source = b"def f(a, b, c):\n    return a * (b + c)\n"
    # `c`, a parameter, is an input of a plain Python kernel: its sign turned is a `sign` mutant.
    swapped = next(m for m in mutants_of("f.py", source) if m.kind == "sign")
    assert swapped.description == "`+ c` -> `- c` in `b + c`"
    namespace: dict[str, object] = {}
    exec(swapped.apply(source), namespace)
    assert namespace["f"](2, 3, 4) == 2 * (3 - 4)  # type: ignore[operator]


def test_without_kernels_every_function_is_mutated() -> None:
    source = b"def mean(xs, n):\n    return sum(xs) / n\n\nLIMIT = 3\n"
    found = _by_kind(mutants_of("m.py", source))
    assert found["denominator"] == ["`/ n` -> `/ (n + 1)`"]
    assert "constant" not in found  # module level


def test_other_only_where_masked_lanes_reach_a_reduction() -> None:
    source = b"""\
@triton.jit
def k(x_ptr, w_ptr, y_ptr, m, BLOCK: tl.constexpr):
    x = tl.load(x_ptr, mask=m, other=0.0)
    w = tl.load(w_ptr, mask=m, other=0.0)
    scaled = x * 2
    total = tl.sum(scaled, axis=0)
    tl.store(y_ptr, w * total, mask=m)
"""
    (other,) = [m for m in mutants_of("k.py", source) if m.kind == "other"]
    assert other.line == 3  # x reaches tl.sum through `scaled`; w only reaches a masked store


def test_an_other_that_is_not_a_number_is_dropped() -> None:
    source = b"@jit\ndef k(p, m):\n    return tl.max(tl.load(p, mask=m, other=-float('inf')))\n"
    (other,) = [m for m in mutants_of("k.py", source) if m.kind == "other"]
    assert other.description == "tl.load(...): drop `other=-float('inf')`"
    assert b"tl.load(p, mask=m)" in other.apply(source)


def test_nested_functions_are_mutated_once_and_strings_never() -> None:
    source = b'def outer(a):\n    def inner(b):\n        return b - 1\n    return inner(a) + "x"\n'
    mutants = mutants_of("n.py", source)
    assert [m.description for m in mutants if m.kind == "arith"] == ["`-` -> `+` in `b - 1`"]


def test_the_draw_is_deterministic_and_covers_each_kind_first() -> None:
    mutants = mutants_of("k.py", TRITON)
    present = [kind for kind in KINDS if any(m.kind == kind for m in mutants)]
    first = choose(mutants, len(present))
    assert first == choose(list(reversed(mutants)), len(present))
    assert [m.kind for m in first] == present
    assert len(choose(mutants, 100)) == len(mutants)
    assert choose(mutants, 0) == []


LAYER_NORM = b"""\
@triton.jit
def ln(x_ptr, w_ptr, b_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + cols, mask=mask, other=0.0)
    centered = tl.where(mask, x - tl.sum(x, axis=0) / N, 0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + cols, centered * w + b, mask=mask)
"""


def test_the_operators_that_find_what_zero_bias_and_unit_weight_hide() -> None:
    found = _by_kind(mutants_of("ln.py", LAYER_NORM))
    # Only the loaded input's term: not `N + eps`-like scalars, not pointer arithmetic.
    assert found["sign"] == ["`+ b` -> `- b` in `centered * w + b`"]
    assert "`+` -> `-` in `centered * w + b`" not in found["arith"]  # the same change, once
    assert found["operand"] == [
        "`centered * w + b` -> `centered * w`",
        "`centered * w` -> `centered`",
    ]
    assert found["bound"] == ["`cols < N` -> `cols < N - 1`"]
    assert any("-> `tl.where(mask, 0.0, x - " in d for d in found["swap"])
    assert "`x - tl.sum(x, axis=0) / N` -> `tl.sum(x, axis=0) / N - x`" in found["swap"]
    assert "`0.0` -> `1.0`" in found["constant"]  # the where's fill; never a load's `other=`
    assert found["constant"].count("`0.0` -> `1.0`") == 1
    # A quick audit judges one or two mutants: the bias's sign is the first drawn.
    assert choose(mutants_of("ln.py", LAYER_NORM), 1)[0].description.startswith("`+ b` -> `- b`")


def test_the_draw_takes_kinds_in_turn_across_kernels() -> None:
    four = b"".join(
        b"@jit\ndef k%d(p, q):\n    return tl.load(p) * %d + q\n" % (i, i) for i in range(4)
    )
    mutants = mutants_of("k.py", four)
    first = draw(mutants, 4, lambda m: 0)
    # Three kinds in all (operand, arith, constant): each before any kind comes again...
    assert [m.kind for m in first] == ["operand", "arith", "constant", "operand"]
    assert len({m.function for m in first}) == 4  # ...and each kernel gets one


def test_a_file_with_nothing_to_mutate_or_that_does_not_parse() -> None:
    assert mutants_of("empty.py", b"X = 1\n") == []
    assert mutants_of("doc.py", b'def f():\n    """text"""\n    return name\n') == []
    with pytest.raises(NotMutable, match=r"does not parse as Python \(SyntaxError at line 1"):
        mutants_of("bad.py", b"def f(:\n    return (\n")
    with pytest.raises(NotMutable, match=r"no mutator for \.txt files"):
        mutants_of("kernel.txt", b"speed: 100\n")


CUDA = b"""\
#define BLOCK 256  // not mutated: a preprocessor line
__global__ void rms(const float* x, float* y, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;  /* a * in a comment: not mutated */
    const char* s = "a + b";
    if (i < n) {
        y[i] = x[i] * x[i] / n + 1;
    }
    for (int j = 0; j <= n; j++) y[j] -= *x;
}
"""


def test_each_kind_on_a_cuda_kernel() -> None:
    found = _by_kind(cpp_mutants("k.cu", CUDA))
    assert found["mask"] == ["`if (i < n)` -> `if (true)`"]
    assert found["boundary"] == ["`<` -> `<=`", "`<=` -> `<`"]
    assert found["denominator"] == ["`/ n` -> `/ (n + 1)`"]
    assert found["arith"] == [
        "`*` -> `/`",
        "`+` -> `-`",
        "`*` -> `/`",
        "`/` -> `*`",
        "`+` -> `-`",
    ]
    assert found["constant"] == ["`1` -> `2`", "`0` -> `1`"]
    for mutant in cpp_mutants("k.cu", CUDA):  # nothing inside strings, comments, #define
        assert b"256" not in mutant.replacement and mutant.line > 1
        assert not CUDA[mutant.start : mutant.end].startswith(b'"')


def test_cpp_files_are_recognised_by_extension() -> None:
    assert mutants_of("k.hip", b"int f(int a, int b) { return a + b; }\n")
    assert mutants_of("k.cpp", b"// only a comment\n") == []
