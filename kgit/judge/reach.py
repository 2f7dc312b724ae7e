"""What the gate and the target shapes run: the gate audit's map of the kernel.

A kernel often has several launch paths chosen by shape (a row kernel for wide rows, a block
kernel for narrow ones). A mutant in a path nobody launches survives any gate, and says nothing
about the gate: the audit mutates what runs first, and names what never runs as unreached.

The facts come from kgit's launch recorder (kgit/launch_hook/sitecustomize.py), run in the
audit's own gate and harness runs: one JSON object a line. This module reads them and ranks
the kernel's functions; pure functions over text, no files, no processes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kgit.judge.mutants_python import KernelFunction
from kgit.judge.mutation import Mutant

# Where a function stands, in the order the audit mutates: code the campaign's target shapes
# run first (the code a round edits), then code only the gate runs, then code whose reach is
# not known (no record: a C++ source, a plain Python function, a gate started with `python -I`),
# and never code that neither runs (reported as unreached, not run).
SHAPES, GATE, UNKNOWN, UNREACHED = "shapes", "gate", "unknown", "unreached"
TIERS = (SHAPES, GATE, UNKNOWN, UNREACHED)


@dataclass
class Launches:
    """What one run launched, as the recorder logged it."""

    recorded: bool = False  # the recorder started in some process and wrapped triton's run
    kernels: set[tuple[str, str]] = field(default_factory=set)  # (path in the tree, name)
    tests: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # kernel -> tests
    outside: set[str] = field(default_factory=set)  # kernels' files outside the tree
    errors: list[str] = field(default_factory=list)
    # The lines of the traced files that ran (path in the tree -> line numbers), and the files
    # whose every trace was complete (no other tool took the trace function over): only for
    # those is a line that did not run known not to have run.
    lines: dict[str, set[int]] = field(default_factory=dict)
    traced: set[str] = field(default_factory=set)


def parse_launches(text: str, roots: Iterable[str]) -> Launches:
    """The recorder's log TEXT; ROOTS: the tree's folder as the processes may have spelt it
    (as given, resolved). A record's own `cwd` counts as a root too: the baseline's harness pass
    runs in another of kgit's trees than the audit's."""
    found = Launches()
    prefixes = [root.rstrip("/") + "/" for root in roots]
    started = patched = False
    partial: set[str] = set()
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line cut by a killed process
        if not isinstance(record, dict):
            continue
        started |= "started" in record
        patched |= "patched" in record
        if "error" in record:
            found.errors.append(str(record["error"]))
        own = [str(record["cwd"]).rstrip("/") + "/"] if record.get("cwd") else []
        if isinstance(record.get("lines"), dict):
            _read_lines(found, partial, record, [*prefixes, *own])
        if "kernel" not in record:
            continue
        path = str(record.get("file", ""))
        inside = next((path[len(p) :] for p in [*prefixes, *own] if path.startswith(p)), None)
        if inside is None:
            found.outside.add(path)
            continue
        key = (inside, str(record["kernel"]))
        found.kernels.add(key)
        found.tests.setdefault(key, set()).add(str(record.get("test") or ""))
    found.recorded = started and patched
    found.traced -= partial
    return found


def _read_lines(
    found: Launches, partial: set[str], record: dict[str, Any], prefixes: list[str]
) -> None:
    for path, lines in record["lines"].items():
        inside = next((path[len(p) :] for p in prefixes if str(path).startswith(p)), None)
        if inside is None or not isinstance(lines, list):
            continue
        (found.traced if record.get("complete") is True else partial).add(inside)
        found.lines.setdefault(inside, set()).update(n for n in lines if isinstance(n, int))


@dataclass(frozen=True)
class Reach:
    """One kernel function and who runs it: True, False, or None (not known)."""

    path: str
    function: str
    line: int
    shapes: bool | None
    gate: bool | None
    # Whether SHAPES and GATE were read from the lines that ran (one mutant's lines, LINE its
    # first), not from the function's launches.
    by_line: bool = False

    @property
    def tier(self) -> str:
        if self.shapes:
            return SHAPES
        if self.gate:
            return GATE
        if self.shapes is False and self.gate is False:
            return UNREACHED
        return UNKNOWN

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def unrun(self) -> str:
        """What never runs, in words: the kernel (never launched) or the line."""
        if self.by_line:
            return f"line {self.where} (in {self.function}) never runs"
        return f"{self.function} ({self.where}) is never launched"


def reach_of(
    functions: dict[str, list[KernelFunction]],
    shapes: Launches | None,
    gate: Launches | None,
) -> list[Reach]:
    """Each function of FUNCTIONS (per path) with whether the harness's run of the target shapes
    (SHAPES) and the gate (GATE) ran it; None where that run was not recorded or the function
    is no Triton kernel (only kernels' launches are recorded)."""
    ran_by_shapes = _running(functions, shapes)
    ran_by_gate = _running(functions, gate)
    return [
        Reach(
            path,
            f.name,
            f.line,
            (path, f.name) in ran_by_shapes if _known(f, shapes) else None,
            (path, f.name) in ran_by_gate if _known(f, gate) else None,
        )
        for path, listed in functions.items()
        for f in listed
    ]


def _known(function: KernelFunction, launches: Launches | None) -> bool:
    return function.jit and launches is not None and launches.recorded


def _running(
    functions: dict[str, list[KernelFunction]], launches: Launches | None
) -> set[tuple[str, str]]:
    """The launched kernels and, transitively, the `@jit` helpers they call by name (a helper
    is compiled into the kernel that calls it; it is never launched itself)."""
    if launches is None or not launches.recorded:
        return set()
    jit = _jit(functions)
    return _closure(jit, {key for key in jit if key in launches.kernels})


def _jit(functions: dict[str, list[KernelFunction]]) -> dict[tuple[str, str], KernelFunction]:
    return {(p, f.name): f for p, listed in functions.items() for f in listed if f.jit}


def _closure(
    jit: dict[tuple[str, str], KernelFunction], start: set[tuple[str, str]]
) -> set[tuple[str, str]]:
    running, todo = set(start), list(start)
    while todo:
        called = jit[todo.pop()].calls
        for key in jit:
            if key[1] in called and key not in running:
                running.add(key)
                todo.append(key)
    return running


def unrelated_tests(
    functions: dict[str, list[KernelFunction]], gate: Launches | None, path: str, name: str
) -> list[str]:
    """The pytest tests of the gate's recorded run that launched no kernel running NAME of
    PATH (itself or a kernel that calls it): they cannot see a mutant there, so its gate run
    may leave them out. [] when nothing is known (no record, no test named, none that runs it:
    a gate run leaving everything out would pass for the wrong reason)."""
    if gate is None or not gate.recorded:
        return []
    jit = _jit(functions)
    seeing: set[str] = set()
    for kernel, tests in gate.tests.items():
        if kernel in jit and (path, name) in _closure(jit, {kernel}):
            seeing |= tests
    named = {t for tests in gate.tests.values() for t in tests}
    if not seeing or "" in seeing or "" in named:
        return []
    return sorted(named - seeing)


def describe(reach: list[Reach]) -> list[str]:
    """What the target shapes and the gate each run, in words, for the audit's output."""
    if not any(r.shapes is not None or r.gate is not None for r in reach):
        return []

    def named(rows: list[Reach]) -> str:
        return ", ".join(f"{r.function} ({r.where})" for r in rows) or "none of the kernels"

    known = [r for r in reach if r.shapes is not None or r.gate is not None]
    lines = [
        f"the target shapes run {named([r for r in known if r.shapes])}",
        f"the gate runs {named([r for r in known if r.gate])}",
    ]
    gateless = [r for r in known if r.shapes and r.gate is False]
    if gateless:
        lines.append(f"the gate never runs {named(gateless)}, which the target shapes run")
    lines += [
        f"unreached by the gate and by the target shapes: {r.unrun}"
        for r in known
        if r.tier == UNREACHED
    ]
    return lines


@dataclass
class ReachMap:
    """Who runs each mutant's code: its function's launches, refined to the mutant's own lines
    where a run traced them (Python code: a plain torch kernel, a Triton kernel under the
    interpreter, the launcher around a GPU kernel). SOURCES: each file's bytes, for the lines
    a mutant spans."""

    functions: dict[str, list[KernelFunction]]
    sources: dict[str, bytes]
    shapes: Launches | None
    gate: Launches | None

    def __post_init__(self) -> None:
        self.kernels = reach_of(self.functions, self.shapes, self.gate)
        self._reach = {(r.path, r.function): r for r in self.kernels}
        self._defs = {(p, f.name): f for p, listed in self.functions.items() for f in listed}

    def of(self, mutant: Mutant) -> Reach | None:
        function = self._reach.get((mutant.path, mutant.function or ""))
        if function is None:
            return None
        source = self.sources.get(mutant.path, b"")
        span = range(mutant.line, source[: mutant.end].count(b"\n") + 2)
        kernel = self._defs.get((mutant.path, function.function))
        body = range(kernel.line + 1, kernel.end + 1) if kernel and kernel.end else range(0)
        shapes, by_shapes = _line_ran(function.shapes, self.shapes, mutant.path, span, body)
        gate, by_gate = _line_ran(function.gate, self.gate, mutant.path, span, body)
        if not (by_shapes or by_gate) or (shapes, gate) == (function.shapes, function.gate):
            return function  # the lines tell no more than the launches: the kernel's words
        return Reach(mutant.path, function.function, mutant.line, shapes, gate, by_line=True)


def _line_ran(
    launched: bool | None, run: Launches | None, path: str, span: range, body: range
) -> tuple[bool | None, bool]:
    """Whether RUN ran a line of SPAN, and whether its lines tell (else LAUNCHED stands)."""
    if run is None or path not in run.traced:
        return launched, False
    ran = run.lines.get(path, set())
    if launched and not ran.intersection(body):
        return launched, False  # launched, its body not run as Python: a kernel on a GPU
    return not ran.isdisjoint(span), True


def describe_lines(mutants: list[Mutant], reach: ReachMap) -> list[str]:
    """The lines with mutation sites, per file, that the target shapes run and the gate never
    does (not checked by the gate), and that neither runs (unreached), in words."""
    found: dict[tuple[str, str], set[int]] = {}
    for mutant in mutants:
        r = reach.of(mutant)
        if r is None or not r.by_line:
            continue
        if r.shapes and r.gate is False:
            found.setdefault((mutant.path, NOT_CHECKED_WORDS), set()).add(mutant.line)
        elif r.tier == UNREACHED:
            found.setdefault(
                (mutant.path, "unreached: run by neither the gate nor the target shapes"), set()
            ).add(mutant.line)
    return [
        f"{path} lines {spans(sorted(lines))}: {words}"
        for (path, words), lines in sorted(found.items())
    ]


NOT_CHECKED_WORDS = "not checked by the gate: the target shapes run them, the gate never does"


def spans(lines: list[int]) -> str:
    """Sorted LINES as runs: [3, 4, 5, 9] -> "3-5, 9"."""
    runs: list[list[int]] = []
    for line in lines:
        if runs and line == runs[-1][1] + 1:
            runs[-1][1] = line
        else:
            runs.append([line, line])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
