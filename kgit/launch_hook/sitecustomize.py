"""kgit's launch recorder: which `@triton.jit` functions a process launches.

kgit puts this folder first on PYTHONPATH, with KGIT_LAUNCH_LOG naming a file, only for the gate
audit's own runs of the gate and the harness (kgit/engine/measuring/harness/launches.py): Python imports
`sitecustomize` at start-up, so any Python process the gate command starts (pytest, a script,
make calling python) records its launches, with no change to the gate. It is never on the path
of a measured run: the wrapper costs the host a little on each launch.

It imports nothing at start-up beyond the standard library: when (if ever) the process imports
`triton.runtime.jit` or `triton.runtime.interpreter`, the `run` of its JIT function class is
wrapped (the GPU's JITFunction and the interpreter's InterpretedFunction: `kernel[grid](...)` and
the autotuner both go through `run`). Each (kernel, test) pair is logged once per process, one
JSON object a line, appended: {"kernel": name, "file": path, "test": pytest's current test}.
A line {"started": pid} says the recorder ran, {"patched": module} that triton was wrapped, and
{"error": ...} why it could not be: kgit tells "launched nothing" from "not recorded" by them.

With KGIT_TRACE_LINES naming files or folders (os.pathsep between them; relative to the
working directory), it also records which of their lines run: at start-up for the whole
process, through sys.monitoring on Python 3.12+ (each other code object seen once, each line
until it first runs), else sys.settrace (every other frame's call costs a dictionary lookup:
some 20-30% more time for a gate that runs Triton's interpreter). The lines are logged at exit:
{"lines": {path: [line, ...]}, "complete": bool}; `complete` is false when something else (a
coverage tool, a debugger) took the trace function over, and kgit then knows nothing of lines.
A harness on kgit.measure traces only its correctness check of each shape (`traced_lines`), so
no timed call pays for it.

A `sitecustomize` that this one hides (a distribution's, a virtual environment's) is run after it.

A harness built on kgit.measure calls `install(once=True)` itself (kgit/measure/harness.py), so
kgit's baseline pass records what the target shapes launch with no change to PYTHONPATH; once
each kernel's first launch is logged, its `run` is the original again (no cost on timed calls).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

LOG_ENV = "KGIT_LAUNCH_LOG"
TRACE_ENV = "KGIT_TRACE_LINES"
# "monitoring": trace the whole process only where sys.monitoring makes it cheap (Python
# 3.12+); under settrace a gate running Triton's interpreter takes 20-40% longer, more than the
# baseline's quick audit can pay for its control.
TRACE_HOW_ENV = "KGIT_TRACE_LINES_BY"
_TARGETS = ("triton.runtime.jit", "triton.runtime.interpreter")
_CLASSES = {
    "triton.runtime.jit": "JITFunction",
    "triton.runtime.interpreter": "InterpretedFunction",
}
_seen: set[tuple[str, str, str]] = set()
_once = False
_traced: dict[str, set[int]] = {}  # wanted path -> lines run
_matched: dict[str, str | None] = {}  # a code object's file name -> its wanted path, or None
_wanted: list[str] = []  # real paths of the files and folders to trace
_whole_process = False


def _write(record: dict[str, Any]) -> None:
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    # One write of one short line with O_APPEND: processes that log at once do not interleave.
    line = (json.dumps(record) + "\n").encode()
    try:
        handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError:
        return
    try:
        os.write(handle, line)
    finally:
        os.close(handle)


def _record(function: Any, original: Any) -> None:
    fn = getattr(function, "fn", None)
    code = getattr(fn, "__code__", None)
    if fn is None or code is None:
        return
    # pytest names the running test in this variable (inherited by the processes it starts).
    test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
    if _once:  # later launches call the original directly: timed calls pay nothing
        function.run = functools.partial(original, function)
    key = (code.co_filename, fn.__qualname__, test)
    if key in _seen:
        return
    _seen.add(key)
    record = {"kernel": fn.__qualname__, "file": code.co_filename, "test": test}
    _write({**record, "cwd": os.getcwd()})


def _patch(name: str, module: Any) -> None:
    cls = getattr(module, _CLASSES[name], None)
    original = getattr(cls, "run", None)
    if getattr(original, "_kgit_recorded", False):
        return
    if original is None:
        _write({"error": f"{name}.{_CLASSES[name]}.run not found: launches not recorded"})
        return

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not kwargs.get("warmup"):  # a warm-up compiles; it launches nothing
            _record(self, original)
        return original(self, *args, **kwargs)

    run._kgit_recorded = True  # type: ignore[attr-defined]
    cls.run = run  # type: ignore[union-attr]
    _write({"patched": name})


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds triton's JIT modules as the other finders do, and wraps `run` once they ran."""

    busy = False

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in _TARGETS or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.busy = False
        loader = getattr(spec, "loader", None)
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec
        execute = loader.exec_module

        def exec_module(module: Any) -> None:
            execute(module)
            try:
                _patch(name, module)
            except Exception as error:  # never break the user's import over a record
                _write({"error": f"{name}: {error!r}"})

        loader.exec_module = exec_module
        return spec


def _run_hidden_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or spec.origin == __file__:
        return
    module = importlib.util.module_from_spec(spec)
    # As Python itself does for a failing sitecustomize: go on.
    with contextlib.suppress(Exception):
        spec.loader.exec_module(module)


def _wanted_path(filename: str) -> str | None:
    if filename not in _matched:
        real = os.path.realpath(filename)
        hit = any(real == w or real.startswith(w + os.sep) for w in _wanted)
        _matched[filename] = real if hit else None
    return _matched[filename]


def _trace(frame: Any, event: str, arg: Any) -> Any:
    # Called on every Python call of the process: one dictionary lookup for a known file.
    filename = frame.f_code.co_filename
    path = _matched[filename] if filename in _matched else _wanted_path(filename)
    if path is None:
        return None  # no line events for this frame: its cost ends here
    lines = _traced.setdefault(path, set())
    lines.add(frame.f_lineno)

    def line(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            lines.add(frame.f_lineno)
        return line

    return line


def _start_tracing() -> None:
    sys.settrace(_trace)
    threading.settrace(_trace)


def _stop_tracing() -> bool:
    """Tracing off; whether the trace function was still ours (the lines are complete)."""
    complete = sys.gettrace() is _trace
    sys.settrace(None)
    threading.settrace(None)
    return complete


def _flush_lines(complete: bool) -> None:
    found = {path: sorted(_traced.get(path, ())) for path in {*_wanted, *_traced}}
    _traced.clear()
    _write({"lines": found, "complete": complete, "cwd": os.getcwd()})


def _trace_lines_setup() -> bool:
    """Whether lines are to be traced here (KGIT_TRACE_LINES, and a log to write them to)."""
    wanted = os.environ.get(TRACE_ENV, "")
    if not wanted or not os.environ.get(LOG_ENV):
        return False
    _wanted[:] = [os.path.realpath(p) for p in wanted.split(os.pathsep) if p]
    return bool(_wanted)


@contextlib.contextmanager
def traced_lines() -> Iterator[None]:
    """The lines of the wanted files run inside the block, logged at its end (a harness's
    correctness check of a shape); nothing when lines are not wanted or the whole process is
    traced already."""
    if _whole_process or not _wanted:
        yield
        return
    _start_tracing()
    try:
        yield
    finally:
        _flush_lines(_stop_tracing())


def _monitor_whole_process() -> bool:
    """The whole process's lines through sys.monitoring (Python 3.12+): each code object of
    another file is seen once, each line of a wanted file until it first runs, and no other
    tool's trace function can take ours over. False where it is not there, or no tool id is
    free (settrace then)."""
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is None:
        return False
    tool = next((t for t in (4, 3) if monitoring.get_tool(t) is None), None)
    if tool is None:
        return False
    monitoring.use_tool_id(tool, "kgit lines")
    events, disable = monitoring.events, monitoring.DISABLE

    def start(code: Any, offset: int) -> Any:
        if _wanted_path(code.co_filename) is not None:
            monitoring.set_local_events(tool, code, events.LINE)
        return disable

    def line(code: Any, number: int) -> Any:
        _traced.setdefault(_matched[code.co_filename] or "", set()).add(number)
        return disable

    monitoring.register_callback(tool, events.PY_START, start)
    monitoring.register_callback(tool, events.LINE, line)
    monitoring.set_events(tool, events.PY_START)
    return True


def _trace_whole_process() -> None:
    global _whole_process
    _whole_process = True
    if _monitor_whole_process():
        atexit.register(lambda: _flush_lines(True))
        return
    if os.environ.get(TRACE_HOW_ENV) == "monitoring":
        return  # no lines logged: kgit knows nothing of them, and places code by launches
    _start_tracing()
    atexit.register(lambda: _flush_lines(_stop_tracing()))


def install(*, once: bool = False) -> None:
    """Record this process's launches to KGIT_LAUNCH_LOG, if it names a file (else nothing).
    ONCE: only each kernel's first launch goes through the recorder."""
    global _once
    # By class name: the copy Python ran as `sitecustomize` and kgit.launch_hook.sitecustomize
    # (which a harness on kgit.measure imports) are two modules of one source, and only the
    # first to install records (two tracers would each take the other's trace function).
    if not os.environ.get(LOG_ENV) or any(
        type(f).__name__ == _AfterImport.__name__ for f in sys.meta_path
    ):
        return
    _once = once
    _write({"started": os.getpid()})
    if _trace_lines_setup() and not once:
        _trace_whole_process()
    for name in _TARGETS:  # a harness imports its kernels (and triton) before calling us
        if name in sys.modules:
            _patch(name, sys.modules[name])
    sys.meta_path.insert(0, _AfterImport())


if __name__ == "sitecustomize":  # run by Python at start-up, not imported by kgit.measure
    install()
    _run_hidden_sitecustomize()
