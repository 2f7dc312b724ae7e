"""Inputs a kernel has not seen, for every block a resident harness times (issue 35, item 4).

CPU blocks replayed two input sets and a CUDA graph replays the same buffers: a kernel that
memoised its outputs on a few sampled element values (a quarter of the work on a hit) read +148%.
Before each block, outside its timing, the inputs get new contents, drawn after seeding torch's
generators from the system's random source (a kernel in the process can read a generator's state
and predict what comes next).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

import torch

T = TypeVar("T")


def reseed() -> None:
    """Torch's generators seeded from the system's random source: the next inputs cannot be
    predicted from anything in the process (a kernel can read a generator's state)."""
    torch.manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)


def fresh_inputs(make_inputs: Callable[[], T], pool: list[T]) -> Callable[[int], None]:
    """Before each block: every set of POOL gets new contents, made by MAKE_INPUTS from the
    system's random source and written into the same buffers (a graph replays those), outside
    the timing; the copy bypasses autograd's version counters (a backward's saved inputs)."""

    def prepare(_reps: int) -> None:
        reseed()
        with torch.no_grad():
            for inputs in pool:
                copy_into(inputs, make_inputs())
        torch.cuda.synchronize()

    return prepare


def copy_into(target: object, source: object) -> None:
    if isinstance(target, torch.Tensor) and isinstance(source, torch.Tensor):
        if target.shape == source.shape and target.dtype == source.dtype:
            target.data.copy_(source.data)
    elif isinstance(target, (list, tuple)) and isinstance(source, (list, tuple)):
        for one, other in zip(target, source, strict=False):
            copy_into(one, other)
    elif isinstance(target, dict) and isinstance(source, dict):
        for key in target.keys() & source.keys():
            copy_into(target[key], source[key])
