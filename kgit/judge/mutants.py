"""Small mutations of a kernel's source, for auditing its correctness gate (`kgit gate audit`).

A gate that does not exercise the kernel passes anything. The audit plants one small bug at a time
(a mutant) and runs the gate on it: a mutant the gate passes has *survived*, and names a bug the
gate cannot see. The mutations are the bugs kernel rounds actually make:

- `sign`: an input's term of a sum with its sign turned (`+ b` -> `- b`: passes tests that use
  a zero bias, as upstream LayerNorm tests do);
- `denominator`: a reduction divided by the wrong count (`tl.sum(x * x) / N` -> `/ BLOCK_N`, the
  padded block width: right only when N is a power of two; seen passing a real project's gate);
- `operand`: an input dropped from a sum or a product (`x * w` -> `x`: passes unit weights);
- `bound`: a mask's or a bound's limit off by one (`cols < N` -> `cols < N - 1`);
- `arith`: an arithmetic operator swapped (`+` <-> `-`, `*` -> `+`, `/` -> `*`);
- `boundary`: a bounds check off by one (`rows < M` -> `rows <= M`);
- `mask`: a load or store without its mask (and `other=`): an out-of-bounds access;
- `swap`: two arguments swapped (`where(c, a, b)` -> `where(c, b, a)`, `a - b` -> `b - a`);
- `constant`: an integer constant off by one, a float 0.0 <-> 1.0;
- `other`: masked-off lanes of a load that feeds a reduction or a dot read another value
  (`other=0.0` -> `other=1.0`).

Why our own mutator rather than cosmic-ray or mutmut: both are built to run a whole test suite
over hundreds of generic mutants (cosmic-ray rewrites the files of the tree it is given, in place),
neither knows Triton's masks or a reduction's denominator, and neither reads C++/HIP. kgit needs a
handful of kernel-shaped mutants, chosen deterministically, spliced into a copy of one file.

Python (Triton) sources are mutated through their AST (kgit/judge/mutants_python.py), C, C++, CUDA
and HIP sources by tokens (kgit/judge/mutants_cpp.py); this module picks the mutator and draws the
mutants an audit runs. Pure functions over text: no git, no files, no processes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import PurePosixPath

from kgit.judge.mutants_cpp import cpp_mutants
from kgit.judge.mutants_python import python_mutants
from kgit.judge.mutation import Mutant, NotMutable

__all__ = [
    "KINDS",
    "TAIL_KINDS",
    "Mutant",
    "NotMutable",
    "choose",
    "cpp_mutants",
    "draw",
    "mutants_of",
    "python_mutants",
]

# The order in which kinds are drawn: the first mutants of an audit are the most telling ones,
# the holes real tests were seen to have first (a zero bias, power-of-two widths, a unit weight,
# no ragged edge); a quick audit may judge only one or two.
KINDS = ("sign", "denominator", "operand", "bound", "arith", "boundary", "mask", "swap",
         "constant", "other")  # fmt: skip
# The kinds whose harm lives in a tail (a ragged edge, the padded lanes): shapes without one
# cannot show it, so a harness run on such shapes cannot vouch for them.
TAIL_KINDS = frozenset({"denominator", "bound", "boundary", "mask", "other"})

PYTHON_SUFFIXES = (".py",)
CPP_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".hip", ".inl")


def mutants_of(path: str, source: bytes) -> list[Mutant]:
    """Every mutant kgit can make of PATH's SOURCE, in file order; NotMutable when it has no
    mutator for that kind of file or the file does not parse."""
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in PYTHON_SUFFIXES:
        return python_mutants(path, source)
    if suffix in CPP_SUFFIXES:
        return cpp_mutants(path, source)
    raise NotMutable(
        f"no mutator for {suffix or 'extension-less'} files (kgit mutates Python/Triton and "
        "C/C++/CUDA/HIP sources)"
    )


def choose(mutants: list[Mutant], count: int) -> list[Mutant]:
    """COUNT mutants drawn with the kinds in turn (so a handful covers each kind), each kind's
    sites in a fixed pseudo-random order (a hash of the site): the same source gives the same
    choice, and the choice spreads over the file rather than taking its first lines."""
    return _in_turn(mutants)[:count]


def draw(mutants: list[Mutant], count: int, tiers: Callable[[Mutant], int]) -> list[Mutant]:
    """COUNT mutants, tier by tier (TIERS(mutant): 0 first; the gate audit's tiers are where the
    code runs, kgit/judge/reach.py); in each tier the kernels take turns (two kernels the
    target shapes run both get a mutant before either gets a second), each taking the kind of
    its own drawn least so far across the tier, in KINDS' order (four kernels do not give four
    mutants of one kind), each kind's sites in `choose`'s order."""
    by_tier: dict[int, list[Mutant]] = {}
    for mutant in mutants:
        by_tier.setdefault(tiers(mutant), []).append(mutant)
    chosen: list[Mutant] = []
    for tier in sorted(by_tier):
        chosen += _in_turn(by_tier[tier])
    return chosen[:count]


def _in_turn(mutants: list[Mutant]) -> list[Mutant]:
    """Every mutant of MUTANTS, in the draw's order (see `draw`)."""
    queues: dict[str, dict[str, list[Mutant]]] = {}
    for mutant in sorted(mutants, key=_site_key):
        kinds = queues.setdefault(f"{mutant.path}:{mutant.function}", {})
        kinds.setdefault(mutant.kind, []).append(mutant)
    drawn = dict.fromkeys(KINDS, 0)
    order: list[Mutant] = []
    while len(order) < len(mutants):
        for kernel in sorted(queues):
            ready = [kind for kind in KINDS if queues[kernel].get(kind)]
            if ready:
                kind = min(ready, key=lambda k: (drawn[k], KINDS.index(k)))
                drawn[kind] += 1
                order.append(queues[kernel][kind].pop(0))
    return order


def _site_key(mutant: Mutant) -> str:
    text = f"{mutant.path}:{mutant.start}:{mutant.end}:{mutant.description}"
    return hashlib.sha1(text.encode()).hexdigest()
