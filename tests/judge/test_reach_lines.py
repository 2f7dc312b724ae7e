"""Reach by line (kgit/judge/reach.py ReachMap), what an audit covered
(kgit/judge/audit_coverage.py), and the recorder's line tracing (kgit/launch_hook/) in a real
Python process: which lines of a kernel the gate and the target shapes run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kgit.judge.audit_coverage import coverage, covered_words
from kgit.judge.mutants import mutants_of
from kgit.judge.mutants_python import kernel_functions
from kgit.judge.reach import SHAPES, UNREACHED, ReachMap, describe_lines, parse_launches, spans
from kgit.records.gate_audit import CAUGHT, MutantResult
from kgit.resources import launch_hook_dir

# Two paths chosen by size in one plain Python function: its lines tell what runs.
SOURCE = b"""\
def norm(xs, n):
    if n >= 4:
        return [x / n for x in xs]
    out = []
    for x in xs:
        out.append(x * 2 + 1)
    return out
"""
WIDE, NARROW = range(3, 4), range(4, 8)


def _lines(*records: dict[str, object]) -> str:
    return "".join(json.dumps({"cwd": "/t", **r}) + "\n" for r in records)


def _map(shapes: str | None, gate: str | None) -> ReachMap:
    functions = {"k.py": kernel_functions(SOURCE)}
    read = {name: parse_launches(text, ["/t"]) if text is not None else None
            for name, text in (("shapes", shapes), ("gate", gate))}  # fmt: skip
    return ReachMap(functions, {"k.py": SOURCE}, read["shapes"], read["gate"])


def test_lines_split_one_function_into_what_runs_and_what_never_does() -> None:
    ran = {"lines": {"/t/k.py": [1, 2, 3]}, "complete": True}
    reach = _map(_lines(ran), _lines(ran))
    mutants = mutants_of("k.py", SOURCE)
    for mutant in mutants:
        found = reach.of(mutant)
        assert found is not None and found.by_line
        assert found.tier == (SHAPES if mutant.line in WIDE or mutant.line == 2 else UNREACHED)
    assert "line k.py:6 (in norm) never runs" in [
        r.unrun for m in mutants if (r := reach.of(m)) and m.line == 6
    ]
    assert describe_lines(mutants, reach) == [
        "k.py lines 6: unreached: run by neither the gate nor the target shapes"
    ]  # line 5 (`for x in xs:`) has no mutation site


def test_lines_the_shapes_run_and_the_gate_never_does_are_not_checked_by_it() -> None:
    shapes = _lines({"lines": {"/t/k.py": [1, 2, 4, 5, 6, 7]}, "complete": True})
    gate = _lines({"lines": {"/t/k.py": [1, 2, 3]}, "complete": True})
    words = describe_lines(mutants_of("k.py", SOURCE), _map(shapes, gate))
    assert words == [
        "k.py lines 6: not checked by the gate: the target shapes run them, the gate never does",
    ]  # line 3: only the gate runs it, drawn after what the shapes run


def test_an_incomplete_trace_tells_nothing_of_lines() -> None:
    # Another tool took the trace function over: a line not seen may have run.
    partial = _lines({"lines": {"/t/k.py": [1, 2, 3]}, "complete": False})
    reach = _map(partial, partial)
    assert all(not (r := reach.of(m)) or not r.by_line for m in mutants_of("k.py", SOURCE))


def test_a_launched_kernel_whose_body_never_ran_as_python_keeps_its_launch() -> None:
    source = b"@triton.jit\ndef k(p):\n    tl.store(p, 1)\n"
    launch = {"kernel": "k", "file": "/t/k.py", "test": ""}
    log = _lines({"started": 1}, {"patched": "triton.runtime.jit"}, launch,
                 {"lines": {"/t/k.py": [1, 2]}, "complete": True})  # fmt: skip
    run = parse_launches(log, ["/t"])
    reach = ReachMap({"k.py": kernel_functions(source)}, {"k.py": source}, run, run)
    (mutant,) = mutants_of("k.py", source)
    found = reach.of(mutant)  # on a GPU: launched, its lines compiled, never traced
    assert found is not None and not found.by_line and found.tier == SHAPES


def test_coverage_counts_lines_and_kinds_the_shapes_run() -> None:
    ran = _lines({"lines": {"/t/k.py": [1, 2, 3]}, "complete": True})
    reach = _map(ran, ran)
    mutants = mutants_of("k.py", SOURCE)
    one = next(m for m in mutants if m.line == 3)
    judged = [MutantResult(one.where, one.kind, one.description, CAUGHT, 1.0)]
    covered = coverage(mutants, reach, judged)
    in_scope = [m for m in mutants if m.line in (2, 3)]
    assert covered["lines"] == 1 and covered["lines_of"] == len({m.line for m in in_scope})
    assert covered["kinds"] == [one.kind] and one.kind in covered["kinds_of"]
    assert covered_words(covered).startswith(f"1 of {covered['lines_of']} lines and 1 of ")
    assert spans([3, 4, 5, 9]) == "3-5, 9"


def _run_traced(
    tmp_path: Path, script: str, *, whole: bool, python: str = sys.executable
) -> list[dict[str, object]]:
    (tmp_path / "k.py").write_bytes(SOURCE)
    (tmp_path / "main.py").write_text(script)
    log = tmp_path / "log.jsonl"
    env = {**os.environ, "KGIT_LAUNCH_LOG": str(log), "KGIT_TRACE_LINES": "k.py"}
    if whole:
        env["PYTHONPATH"] = str(launch_hook_dir())
    subprocess.run([python, "main.py"], cwd=tmp_path, env=env, check=True)
    return [json.loads(line) for line in log.read_text().splitlines()]


# sys.monitoring on 3.12+, sys.settrace before: the recorder needs nothing but the interpreter.
def _runs(python: str) -> bool:
    found = shutil.which(python)
    return (
        bool(found) and subprocess.run([python, "-c", "pass"], capture_output=True).returncode == 0
    )


OTHER_PYTHONS = [p for p in ("python3.12", "python3.13") if _runs(p)]


@pytest.mark.parametrize("python", [sys.executable, *OTHER_PYTHONS])
def test_the_recorder_traces_a_whole_process(tmp_path: Path, python: str) -> None:
    records = _run_traced(tmp_path, "import k\nk.norm([1.0], 8)\n", whole=True, python=python)
    (lines,) = [r for r in records if "lines" in r]
    assert lines["complete"] is True
    ran = set(lines["lines"][str((tmp_path / "k.py").resolve())])  # type: ignore[index]
    assert {2, 3} <= ran and not ran & set(NARROW)


def test_a_tracer_taken_over_marks_the_lines_incomplete(tmp_path: Path) -> None:
    script = "import sys, k\nsys.settrace(lambda *a: None)\nk.norm([1.0], 2)\n"
    records = _run_traced(tmp_path, script, whole=True)
    assert [r["complete"] for r in records if "lines" in r] == [False]


def test_a_harness_traces_only_its_checks(tmp_path: Path) -> None:
    script = (
        "from kgit.launch_hook.sitecustomize import install, traced_lines\n"
        "import k\ninstall(once=True)\nk.norm([1.0], 2)\n"
        "with traced_lines():\n    k.norm([1.0], 8)\n"
    )
    records = _run_traced(tmp_path, script, whole=False)
    (lines,) = [r for r in records if "lines" in r]
    ran = set(lines["lines"][str((tmp_path / "k.py").resolve())])  # type: ignore[index]
    assert 3 in ran and not ran & set(NARROW)  # the untraced narrow call is not there


def test_cheap_tracing_logs_no_lines_where_only_settrace_could(tmp_path: Path) -> None:
    os.environ["KGIT_TRACE_LINES_BY"] = "monitoring"
    try:
        records = _run_traced(tmp_path, "import k\nk.norm([1.0], 8)\n", whole=True)
    finally:
        del os.environ["KGIT_TRACE_LINES_BY"]
    has_monitoring = hasattr(sys, "monitoring")
    assert any("lines" in r for r in records) == has_monitoring
