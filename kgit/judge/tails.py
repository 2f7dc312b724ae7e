"""Do the target shapes exercise a tail? A heuristic over the kernel's text and the manifest.

A kernel's edge code (masks, the last partial block, a mean over the padded width) only runs when
a dimension is not a multiple of the block that tiles it. When every dimension of every target
shape is such a multiple, the harness never measures that code and a bug there passes every
measurement (a real campaign divided by the padded block width instead of the row length, and its
power-of-two shapes could not see it). Pure functions over text and shapes.

What is read, and so what can be missed: integer constants named BLOCK*/TILE* (`BLOCK_M = 64`,
`BLOCK_N: tl.constexpr = 128`, `triton.Config({"BLOCK_K": 32})`, `#define TILE 16`,
`constexpr int BLOCK_SIZE = 256`) and the use of `next_power_of_2`. Sizes chosen at run time
(autotuning over configs held elsewhere, heuristics) are not seen.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import textwrap
from dataclasses import dataclass
from typing import Any

DIMENSIONS = ("M", "N", "K")
WARNING_WIDTH = 85  # what `kgit: WARNING: ` leaves of a 100-column terminal

_BLOCK = re.compile(
    r"""(?:
        \#\s*define\s+(?P<define>(?:BLOCK|TILE)\w*)\s+\(?(?P<dvalue>\d+)
      | ["'](?P<key>(?:BLOCK|TILE)\w*)["']\s*:\s*(?P<kvalue>\d+)
      | \b(?P<name>(?:BLOCK|TILE)\w*)\s*(?::[^=\n,()]*)?=\s*(?P<value>\d+)\b(?!\s*[.*/+\-])
    )""",
    re.X | re.I,
)
_PADS_POW2 = re.compile(r"next_power_of_2|next_pow(?:er_of_)?2|nextPow2", re.I)


@dataclass(frozen=True)
class BlockSize:
    name: str
    value: int
    where: str  # path:line

    @property
    def dimension(self) -> str | None:
        """The dimension the name says it tiles (BLOCK_M -> M), if it says."""
        suffix = self.name.upper().rsplit("_", 1)[-1]
        return suffix if suffix in DIMENSIONS and "_" in self.name else None


def block_sizes(path: str, text: str) -> list[BlockSize]:
    found = []
    for match in _BLOCK.finditer(text):
        name = match["define"] or match["key"] or match["name"]
        value = int(match["dvalue"] or match["kvalue"] or match["value"])
        if value > 1:
            line = text.count("\n", 0, match.start()) + 1
            found.append(BlockSize(name, value, f"{path}:{line}"))
    return found


def power_of_two_padding(path: str, text: str) -> str | None:
    """Where the kernel pads a dimension to a power of two (path:line), if it does."""
    match = _PADS_POW2.search(text)
    return f"{path}:{text.count(chr(10), 0, match.start()) + 1}" if match else None


def _dims(shape: dict[str, Any]) -> dict[str, int]:
    return {d: v for d in DIMENSIONS if isinstance(v := shape.get(d), int) and v > 0}


def tail_warning(
    shapes: list[dict[str, Any]], blocks: list[BlockSize], padding: list[str]
) -> str | None:
    """Why no target shape exercises a tail, or None when one does (or nothing was found to
    tell). A block named for a dimension (BLOCK_M) is checked against that dimension only."""
    sized = [_dims(shape) for shape in shapes]
    if not any(sized):
        return None  # shapes without M, N, K: nothing to tell
    reasons = []
    if blocks and not any(_has_tail(dims, blocks) for dims in sized):
        listed = ", ".join(f"{b.name} = {b.value} at {b.where}" for b in _unique(blocks))
        reasons.append(f"every dimension is a multiple of the block that tiles it ({listed})")
    all_pow2 = all(v & (v - 1) == 0 for dims in sized for v in dims.values())
    if padding and all_pow2:
        reasons.append(
            f"the kernel pads to a power of two ({', '.join(padding)}) and every dimension "
            "of every target shape is a power of two"
        )
    if not reasons:
        return None
    paragraphs = [
        "no target shape exercises a tail: " + "; and ".join(reasons) + ".",
        "Masked edges, the last partial block and a mean over the padded width are never "
        "measured, so a bug there passes the harness. Add a target shape with ragged "
        f"dimensions, the size of your smallest: {_ragged_shape(shapes, blocks, bool(padding))}",
        "Heuristic: block sizes are read from BLOCK*/TILE* integer constants in kernel_source; "
        "sizes chosen at run time are not seen.",
    ]
    return "\n".join(_wrap(text, "  " if index else "") for index, text in enumerate(paragraphs))


def _wrap(text: str, indent: str) -> str:
    """TEXT in lines that fit a terminal after `kgit: WARNING: `; a listed block
    (`BLOCK_M = 64 at k.py:1`) or a suggested shape (`{label: ..., M: 127}`) is never split."""
    kept = re.sub(r"\{[^}]*\}|\w+ = \d+ at \S+?(?=[,)])", lambda m: m[0].replace(" ", "\0"), text)
    lines = textwrap.wrap(kept, WARNING_WIDTH, initial_indent=indent, subsequent_indent="  ",
                          break_long_words=False, break_on_hyphens=False)  # fmt: skip
    return "\n".join(lines).replace("\0", " ")


def _ragged_shape(shapes: list[dict[str, Any]], blocks: list[BlockSize], padded: bool) -> str:
    """The smallest target shape with each dimension a block tiles (every one, when the kernel
    pads to a power of two) made ragged, as a manifest line: measuring it costs no more than a shape the
    campaign measures already, on the interpreter's sizes as on a GPU's. A fixed size (M = 4097)
    would take minutes per shape under the CPU's interpreter."""
    smallest = min((s for s in shapes if _dims(s)), key=lambda s: math.prod(_dims(s).values()))
    tiled = {block.dimension for block in blocks}
    ragged = dict(smallest, label=f"{smallest['label']}-tail")
    for name, value in _dims(smallest).items():
        if padded or None in tiled or name in tiled:
            tiles = [b.value for b in blocks if b.dimension in (None, name)]
            ragged[name] = _ragged_size(value, tiles, padded)
    return "{" + ", ".join(f"{key}: {_yaml(value)}" for key, value in ragged.items()) + "}"


def _ragged_size(value: int, tiles: list[int], padded: bool) -> int:
    """The largest size below VALUE (above it when none is) that is no multiple of a tile in
    TILES and, where the kernel pads (PADDED), no power of two."""

    def ragged(size: int) -> bool:
        return all(size % tile for tile in tiles) and not (padded and size & (size - 1) == 0)

    below = (size for size in range(value - 1, 1, -1) if ragged(size))
    return next(below, None) or next(size for size in itertools.count(value + 1) if ragged(size))


def _yaml(value: object) -> str:
    text = str(value)
    return text if re.fullmatch(r"[\w.+-]+", text) else json.dumps(text)


def _has_tail(dims: dict[str, int], blocks: list[BlockSize]) -> bool:
    for block in blocks:
        names = [block.dimension] if block.dimension else list(dims)
        if any(name in dims and dims[name] % block.value for name in names):
            return True
    return False


def _unique(blocks: list[BlockSize]) -> list[BlockSize]:
    seen: dict[tuple[str, int], BlockSize] = {}
    for block in blocks:
        seen.setdefault((block.name, block.value), block)
    return list(seen.values())
