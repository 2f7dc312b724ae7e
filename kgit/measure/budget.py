"""How much device memory one measuring process may hold: its share of the card, and what to say
when a shape does not fit.

Two measuring processes (the two sides of an interleaved validation) share one card, and the
second starts while the first already holds its buffers. A budget taken from the memory *free*
when a process starts gives the first side a share of a whole empty card and the second a share
of what is left: on an 80 GB H100 the first side of an RMSNorm campaign held 70.5 GiB and the
second ran out of memory in its correctness check. So each side plans for a fixed share of the
card's *total* memory (the other side may not have started yet), never more than half of what is
free beside what it already holds (a card others already fill), and a pool or a block's units
shrink to fit it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

import torch

from kgit.records.protocol import MEMORY_SHARE_ENV

# Each measuring process plans for this share of the card's total memory (MEMORY_SHARE_ENV, the
# knob a user turns when a shape does not fit): two sides take half a card at most.
MEMORY_SHARE = 0.25
# ... and never more than this share of what is free beside what it holds already: on a card
# that other processes half fill, the other side needs room too.
FREE_SHARE = 0.5

# Where a harness appends its peak device memory, a JSON line per phase (bench/memory_check.py).
MEMORY_LOG_ENV = "KGIT_MEMORY_LOG"

_ASKED = re.compile(r"Tried to allocate ([0-9.]+) (B|KiB|MiB|GiB|TiB)")
_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}


def memory_share() -> float:
    """The share of the card this process plans for: KGIT_MEMORY_SHARE, else MEMORY_SHARE."""
    text = os.environ.get(MEMORY_SHARE_ENV, "").strip()
    if not text:
        return MEMORY_SHARE
    try:
        share = float(text)
    except ValueError:
        share = 0.0  # refused below
    if not 0.0 < share <= 1.0:
        raise ValueError(f"{MEMORY_SHARE_ENV}={text!r}: a share of the card in (0, 1], e.g. 0.25")
    return share


@dataclass(frozen=True)
class Budget:
    """One process's device memory, in bytes: what it may hold in all (`limit`), what it holds
    allocated now, and the card's total and free memory it was drawn from."""

    limit: int
    allocated: int
    total: int
    free: int

    @property
    def spare(self) -> int:
        """What this process may still allocate."""
        return max(0, self.limit - self.allocated)


def budget(device: torch.device) -> Budget:
    """This process's budget on DEVICE (a CUDA device), as the card stands now."""
    free, total = torch.cuda.mem_get_info(device)
    reserved = torch.cuda.memory_reserved(device)
    limit = min(int(memory_share() * total), reserved + int(FREE_SHARE * free))
    return Budget(limit, torch.cuda.memory_allocated(device), total, free)


def give_back(device: torch.device) -> None:
    """Return what the caching allocator keeps but nothing uses (a finished pass's pools) to
    the driver, so that the other side can have it."""
    if device.type == "cuda":
        torch.cuda.empty_cache()


def asked_bytes(error: BaseException) -> int | None:
    """The size of the allocation an out-of-memory error refused, as torch words it."""
    found = _ASKED.search(str(error))
    return int(float(found.group(1)) * _UNITS[found.group(2)]) if found else None


def gib(count: int) -> str:
    return f"{count / 1024**3:.2f} GiB"


def out_of_memory_report(label: str, error: BaseException, device: torch.device) -> dict[str, Any]:
    """What a shape's out-of-memory error says, for kgit (kgit/records/protocol.py): the shape,
    the refused allocation, and this process's budget as the card stands after it."""
    report: dict[str, Any] = {"shape": label, "asked_bytes": asked_bytes(error)}
    if device.type == "cuda":
        side = budget(device)
        report.update(
            limit_bytes=side.limit,
            allocated_bytes=side.allocated,
            free_bytes=side.free,
            total_bytes=side.total,
        )
    report["share"] = memory_share()
    return report


def log_peak(device: torch.device, phase: str, labels: list[str]) -> None:
    """Append this process's peak device memory since the last call to MEMORY_LOG_ENV's file,
    where it is set (a bench's question, not a campaign's), and start the next phase's count."""
    path = os.environ.get(MEMORY_LOG_ENV)
    if not path or device.type != "cuda" or not torch.cuda.is_initialized():
        return
    record = {
        "pid": os.getpid(),
        "phase": phase,
        "shapes": labels,
        "peak_reserved": torch.cuda.max_memory_reserved(device),
        "peak_allocated": torch.cuda.max_memory_allocated(device),
        "limit": budget(device).limit,
    }
    with open(path, "a") as log:
        log.write(json.dumps(record) + "\n")
    torch.cuda.reset_peak_memory_stats(device)
