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

import re
from dataclasses import dataclass
from typing import Any

DIMENSIONS = ("M", "N", "K")

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
    return (
        "no target shape exercises a tail: "
        + "; and ".join(reasons)
        + ". Masked edges, the last partial block and a mean over the padded width are never "
        "measured, so a bug there passes the harness; add a target shape with ragged "
        "dimensions (e.g. M = 4097). Heuristic: block sizes are read from BLOCK*/TILE* integer "
        "constants in kernel_source; sizes chosen at run time are not seen."
    )


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
