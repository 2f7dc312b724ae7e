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
