"""Recording which Triton kernels a command launches, for the gate audit (kgit/judge/reach.py).

The recorder is a `sitecustomize.py` of kgit's (kgit/launch_hook/), which any Python process
imports at start-up from the first folder of PYTHONPATH that has one: so it works for a gate that
is any command (pytest, a script, make), and needs nothing from the harness either. It is put
there explicitly, and only in the environment of the audit's own runs of the gate and the
harness: every other run of them (the commit hook, a validation's timed passes) keeps the
environment it had (issue 27 keeps those runs isolated from what an inherited PYTHONPATH adds),
and no timed run pays the recorder's cost on each launch.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kgit.engine.campaign import Campaign
from kgit.judge.reach import Launches, parse_launches
from kgit.resources import launch_hook_dir

LAUNCH_LOG_ENV = "KGIT_LAUNCH_LOG"  # the recorder's own names for them: kgit/launch_hook/
TRACE_LINES_ENV = "KGIT_TRACE_LINES"
TRACE_HOW_ENV = "KGIT_TRACE_LINES_BY"


def recording(
    env: dict[str, str], log: Path, trace: list[Path] | None = None, *, cheap: bool = False
) -> dict[str, str]:
    """ENV with the recorder first on PYTHONPATH, logging to LOG (emptied first); TRACE: the
    files whose lines it records as they run (the kernel's Python sources); CHEAP: only where
    it costs next to nothing (sys.monitoring, Python 3.12+)."""
    log.write_text("")
    # The recorder from kgit's copy in the process's world (kgit/engine/measuring/isolation/world.py):
    # never the installed one, whose bytecode a kernel may have rewritten.
    lib = env.get("PYTHONPATH", "").split(os.pathsep)[0]
    hook = Path(lib) / "kgit" / "launch_hook"
    if not lib or not (hook / "sitecustomize.py").is_file():
        hook = launch_hook_dir()
    path = os.pathsep.join(filter(None, [str(hook), env.get("PYTHONPATH")]))
    traced = {TRACE_LINES_ENV: os.pathsep.join(map(str, trace))} if trace else {}
    traced |= {TRACE_HOW_ENV: "monitoring"} if trace and cheap else {}
    return {**env, "PYTHONPATH": path, LAUNCH_LOG_ENV: str(log), **traced}


def traced_sources(sources: list[str]) -> list[str]:
    """What the recorder traces for KERNEL_SOURCE entries: each path, or for a glob the folder
    before its first wildcard (more than the kernel is traced then; only its files are read)."""
    traced = []
    for source in sources:
        cut = min((source.index(c) for c in "*?[" if c in source), default=None)
        traced.append(source if cut is None else posixpath.dirname(source[:cut]) or ".")
    return traced


def read_launches(log: Path, tree: Path) -> Launches:
    """What the run that logged to LOG launched from TREE's files."""
    text = log.read_text(errors="replace") if log.is_file() else ""
    return parse_launches(text, {str(tree), os.path.realpath(tree)})


def baseline_log(campaign: Campaign) -> Path:
    """Where the baseline's harness pass logs what the target shapes launch."""
    return campaign.repo.kgit_dir() / "worktrees" / campaign.name / "baseline-launches.jsonl"


@contextmanager
def harness_records(log: Path, trace: list[str]) -> Iterator[None]:
    """The harness processes started inside the block log their launches to LOG: a harness
    built on kgit.measure records in-process, only each kernel's first launch, when
    KGIT_LAUNCH_LOG is set (kgit/measure/harness.py), and the lines of TRACE (paths relative to
    the harness's tree) that each shape's correctness check runs; PYTHONPATH is left as it is.
    Every kgit command's environment for what it spawns is a copy of its own (gitdoor's
    clean_env)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    wanted = {LAUNCH_LOG_ENV: str(log), TRACE_LINES_ENV: os.pathsep.join(trace)}
    before = {name: os.environ.get(name) for name in wanted}
    os.environ.update({name: value for name, value in wanted.items() if value})
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def stop_recording() -> None:
    """Harness processes started from here to the end of `harness_records`' block record
    nothing. The baseline's calibration processes run shapes its first pass ran and logged
    already; recording, each of them traced its first check of a shape, the kernel's compile
    included, under settrace."""
    for name in (LAUNCH_LOG_ENV, TRACE_LINES_ENV):
        os.environ.pop(name, None)
