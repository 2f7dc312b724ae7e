"""Token counts per expert for grouped-GEMM shapes, as a MoE router would produce them.

A grouped kernel that only works for equal groups (a constexpr tokens-per-group, partitions that
assume no empty group) is a shortcut the rules forbid; these distributions are what catches it.
Counts come from a generator seeded by the shape, so every round sees the same groups.
"""

from __future__ import annotations

import math
import zlib

import torch

DISTRIBUTIONS = ("uniform", "top2_cf1.0", "top1_cf1.25", "skewed")


def group_sizes(distribution: str, groups: int, tokens_per_group: int, seed: str) -> list[int]:
    """Rows per group for `groups` experts and `groups · tokens_per_group` routed rows at most.

    uniform: every group gets tokens_per_group. top2_cf1.0 / top1_cf1.25: each token picks
    top_k distinct experts from random router scores, and each expert keeps at most
    cf · (its fair share) rows (the rest are dropped, as capacity does). skewed: one expert
    takes at least half of the rows and at least one group stays empty.
    """
    gen = torch.Generator().manual_seed(zlib.crc32(seed.encode()))
    total = groups * tokens_per_group
    if distribution == "uniform":
        return [tokens_per_group] * groups
    if distribution in ("top2_cf1.0", "top1_cf1.25"):
        top_k, cf = (2, 1.0) if distribution == "top2_cf1.0" else (1, 1.25)
        return _routed(groups, total, min(top_k, groups), cf, gen)
    if distribution == "skewed":
        return _skewed(groups, total, gen)
    raise ValueError(f"unknown distribution {distribution!r}; expected one of {DISTRIBUTIONS}")


def _routed(groups: int, total: int, top_k: int, cf: float, gen: torch.Generator) -> list[int]:
    tokens = total // top_k
    scores = torch.rand(tokens, groups, generator=gen) ** 2  # squared: some experts run hot
    scores *= torch.rand(groups, generator=gen) + 0.5
    chosen = scores.topk(top_k, dim=1).indices.flatten()
    counts = torch.bincount(chosen, minlength=groups).tolist()
    capacity = math.ceil(cf * tokens * top_k / groups)
    return [min(c, capacity) for c in counts]


def _skewed(groups: int, total: int, gen: torch.Generator) -> list[int]:
    if groups < 3:
        raise ValueError("the skewed distribution needs at least 3 groups (one hot, one empty)")
    hot = math.ceil(0.6 * total)
    rest = torch.multinomial(torch.ones(groups - 2), total - hot, replacement=True, generator=gen)
    counts = torch.bincount(rest, minlength=groups - 2).tolist()
    return [hot, *counts, 0]
