"""What the gate and the target shapes run (kgit/judge/reach.py) and the draw in that order
(kgit/judge/mutants.py draw): pure functions over the recorder's log and the kernel's source."""

from __future__ import annotations

import json

from kgit.judge.mutants import draw, mutants_of
from kgit.judge.mutants_python import kernel_functions
from kgit.judge.reach import (
    GATE,
    SHAPES,
    UNKNOWN,
    UNREACHED,
    parse_launches,
    reach_of,
    unrelated_tests,
)

SOURCE = b"""\
import triton
import triton.language as tl


@triton.jit
def _square(x):
    return x * x


@triton.jit
def row_kernel(x_ptr, N, BLOCK_N: tl.constexpr):
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
    tl.store(x_ptr + cols, tl.sum(_square(x), axis=0) / N, mask=cols < N)


@triton.jit
def block_kernel(x_ptr, M, N, BLOCK_M: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)
    tl.store(x_ptr + rows, rows * 2 + 1, mask=rows < M)


@triton.jit
def gate_only_kernel(x_ptr, N):
    tl.store(x_ptr + N, N - 1)
"""


def _log(*records: dict[str, object]) -> str:
    started = [{"started": 1}, {"patched": "triton.runtime.jit"}]
    return "".join(json.dumps(r) + "\n" for r in [*started, *records])


def _launch(name: str, root: str = "/t", test: str = "") -> dict[str, object]:
    return {"kernel": name, "file": f"{root}/k.py", "test": test}


def test_the_log_is_read_relative_to_the_tree() -> None:
    text = _log(
        _launch("row_kernel", test="test_k.py::test_a"),
        _launch("row_kernel", test="test_k.py::test_b"),
        _launch("other", root="/site-packages"),  # an installed copy: not the tree's file
    )
    found = parse_launches(text + '{"kernel": "cut', ["/t"])  # a line cut by a kill
    assert found.recorded and found.kernels == {("k.py", "row_kernel")}
    assert found.tests[("k.py", "row_kernel")] == {"test_k.py::test_a", "test_k.py::test_b"}
    assert found.outside == {"/site-packages/k.py"}
    # A record's own cwd is a root too (the baseline's harness runs in another of kgit's trees).
    elsewhere = {"kernel": "row_kernel", "file": "/c/k.py", "cwd": "/c"}
    assert parse_launches(_log(elsewhere), ["/t"]).kernels == {("k.py", "row_kernel")}


def test_a_log_without_the_recorder_knows_nothing() -> None:
    # Started but triton never wrapped (no triton import, or a version kgit cannot wrap).
    text = json.dumps({"started": 1}) + "\n" + json.dumps(_launch("row_kernel")) + "\n"
    assert not parse_launches(text, ["/t"]).recorded
    assert not parse_launches("", ["/t"]).recorded


def test_reach_tiers_and_helpers_through_their_callers() -> None:
    functions = {"k.py": kernel_functions(SOURCE)}
    shapes = parse_launches(_log(_launch("row_kernel")), ["/t"])
    gate = parse_launches(_log(_launch("row_kernel"), _launch("gate_only_kernel")), ["/t"])
    tiers = {r.function: r.tier for r in reach_of(functions, shapes, gate)}
    # _square is never launched itself: row_kernel calls it.
    assert tiers == {"_square": SHAPES, "row_kernel": SHAPES, "block_kernel": UNREACHED,
                     "gate_only_kernel": GATE}  # fmt: skip
    unrecorded = reach_of(functions, shapes, None)
    assert {r.function: r.tier for r in unrecorded}["block_kernel"] == UNKNOWN
    assert all(r.gate is None for r in unrecorded)


def test_the_draw_takes_what_the_shapes_run_first_and_nobodys_code_last() -> None:
    mutants = mutants_of("k.py", SOURCE)
    order = {"row_kernel": 0, "_square": 0, "gate_only_kernel": 1, "block_kernel": 3}
    drawn = draw(mutants, len(mutants), lambda m: order[m.function or ""])
    ranks = [order[m.function or ""] for m in drawn]
    assert ranks == sorted(ranks) and sorted(drawn, key=id) == sorted(mutants, key=id)
    # Within a tier the kernels take turns: both shapes kernels before either's second mutant.
    assert {drawn[0].function, drawn[1].function} == {"_square", "row_kernel"}
    assert draw(mutants, 3, lambda m: order[m.function or ""]) == drawn[:3]


def test_a_mutants_gate_run_leaves_out_the_tests_that_cannot_see_it() -> None:
    functions = {"k.py": kernel_functions(SOURCE)}
    gate = parse_launches(
        _log(
            _launch("row_kernel", test="t.py::test_row"),
            _launch("gate_only_kernel", test="t.py::test_other"),
            _launch("row_kernel", test="t.py::test_both"),
            _launch("gate_only_kernel", test="t.py::test_both"),
        ),
        ["/t"],
    )
    # _square runs inside row_kernel: the tests that launch row_kernel see it.
    assert unrelated_tests(functions, gate, "k.py", "_square") == ["t.py::test_other"]
    assert unrelated_tests(functions, gate, "k.py", "gate_only_kernel") == ["t.py::test_row"]
    # Nobody's kernel: leaving every test out would pass for the wrong reason.
    assert unrelated_tests(functions, gate, "k.py", "block_kernel") == []
    # A launch outside any test (at import, or a gate that is not pytest): leave nothing out.
    outside = parse_launches(
        _log(_launch("row_kernel"), _launch("gate_only_kernel", test="t")), ["/t"]
    )
    assert unrelated_tests(functions, outside, "k.py", "gate_only_kernel") == []
    assert unrelated_tests(functions, None, "k.py", "row_kernel") == []
