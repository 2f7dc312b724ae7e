"""The tail heuristic: block sizes read from kernel text, and whether some target shape has a
dimension that is not a multiple of the block tiling it."""

from __future__ import annotations

from kgit.judge.tails import BlockSize, block_sizes, power_of_two_padding, tail_warning

TRITON = """\
BLOCK_M = 64
NUM_WARPS = 4
BLOCK = 1

@triton.jit
def k(x, BLOCK_N: tl.constexpr = 128, BLOCK_K: tl.constexpr):
    pass

configs = [triton.Config({"BLOCK_K": 32, 'TILE_SIZE': 16})]
kernel[grid](x, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
"""


def test_block_sizes_from_constants_defaults_and_configs() -> None:
    found = [(b.name, b.value, b.where) for b in block_sizes("k.py", TRITON)]
    assert found == [
        ("BLOCK_M", 64, "k.py:1"),
        ("BLOCK_N", 128, "k.py:6"),
        ("BLOCK_K", 32, "k.py:9"),
        ("TILE_SIZE", 16, "k.py:9"),
    ]  # NUM_WARPS is no block; BLOCK = 1 tiles nothing


def test_block_sizes_in_cpp() -> None:
    text = "#define BLOCK_M 128\nconstexpr int TILE_N = 16;\ntemplate <int BLOCK_K = 32>\n"
    assert [(b.name, b.value) for b in block_sizes("k.cu", text)] == [
        ("BLOCK_M", 128),
        ("TILE_N", 16),
        ("BLOCK_K", 32),
    ]


def shape(m: int, n: int, k: int | None = None) -> dict[str, object]:
    return {"label": f"{m}x{n}", "M": m, "N": n, **({"K": k} if k else {})}


BLOCKS = [BlockSize("BLOCK_M", 64, "k.py:1"), BlockSize("BLOCK_N", 128, "k.py:2")]


def test_warns_when_every_dimension_is_a_multiple_of_its_block() -> None:
    warning = tail_warning([shape(256, 256), shape(1024, 4096)], BLOCKS, [])
    assert warning is not None and "no target shape exercises a tail" in warning
    assert "BLOCK_M = 64 at k.py:1" in warning and "Heuristic" in warning


def test_one_ragged_shape_is_enough() -> None:
    assert tail_warning([shape(256, 256), shape(4097, 256)], BLOCKS, []) is None
    # a block named for a dimension is checked against that dimension only: N=192 is not a
    # multiple of BLOCK_N = 128 (a tail) although it is one of BLOCK_M = 64
    assert tail_warning([shape(256, 192)], BLOCKS, []) is None
    # an unnamed block size tiles every dimension
    assert tail_warning([shape(96, 128)], [BlockSize("BLOCK_SIZE", 64, "k.py:3")], []) is None


def test_power_of_two_padding_with_power_of_two_shapes() -> None:
    where = power_of_two_padding("k.py", "x = 1\nBLOCK_N = triton.next_power_of_2(n)\n")
    assert where == "k.py:2"
    warning = tail_warning([shape(1024, 4096)], [], [where])
    assert warning is not None and "pads to a power of two (k.py:2)" in warning
    assert tail_warning([shape(1024, 4000)], [], [where]) is None


def test_nothing_found_nothing_said() -> None:
    assert tail_warning([shape(256, 256)], [], []) is None
    assert tail_warning([{"label": "x", "rows": 64}], BLOCKS, []) is None  # no M, N, K: no idea


# What `kgit: WARNING: ` leaves of a 100-column terminal.
WARNING_WIDTH = 100 - len("kgit: WARNING: ")

GEMM_BLOCKS = [
    BlockSize("BLOCK_M", 64, "gemm_kernel.py:23"),
    BlockSize("BLOCK_N", 64, "gemm_kernel.py:24"),
    BlockSize("BLOCK_K", 32, "gemm_kernel.py:25"),
]


def test_the_suggested_shape_on_the_cpu_is_the_interpreters_size() -> None:
    # The CPU demo's shapes: the interpreter takes seconds at 128, minutes at 4097.
    shapes = [
        {"label": "g128x256", "M": 128, "N": 256, "K": 128, "dtype": "fp32"},
        {"label": "g128", "M": 128, "N": 128, "K": 128, "dtype": "fp32"},
    ]
    warning = tail_warning(shapes, GEMM_BLOCKS, [])
    assert warning is not None and "4097" not in warning
    assert "{label: g128-tail, M: 127, N: 127, K: 127, dtype: fp32}" in warning
    assert all(len(line) <= WARNING_WIDTH for line in warning.splitlines()), warning
    assert "BLOCK_K = 32 at gemm_kernel.py:25" in warning  # a listed block is never split


def test_the_suggested_shape_on_a_gpu_is_no_larger_than_its_smallest_shape() -> None:
    shapes = [shape(16384, 4096), shape(1024, 1024), shape(32768, 8192)]
    warning = tail_warning(shapes, [BlockSize("BLOCK_N", 128, "k.py:2")], [])
    assert warning is not None
    assert "{label: 1024x1024-tail, M: 1024, N: 1023}" in warning  # BLOCK_N tiles N alone
    assert all(len(line) <= WARNING_WIDTH for line in warning.splitlines()), warning
    # what it suggests has a tail, by the same rule
    assert tail_warning([shape(1024, 1023)], [BlockSize("BLOCK_N", 128, "k.py:2")], []) is None


def test_the_suggested_shape_under_power_of_two_padding_is_no_power_of_two() -> None:
    warning = tail_warning([shape(2, 64)], [], ["k.py:2"])
    assert warning is not None and "{label: 2x64-tail, M: 3, N: 63}" in warning
