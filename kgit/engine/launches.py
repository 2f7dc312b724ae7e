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
from pathlib import Path

from kgit.judge.reach import Launches, parse_launches
from kgit.resources import launch_hook_dir

LAUNCH_LOG_ENV = "KGIT_LAUNCH_LOG"  # the recorder's own name for it: kgit/launch_hook/


def recording(env: dict[str, str], log: Path) -> dict[str, str]:
    """ENV with the recorder first on PYTHONPATH, logging to LOG (emptied first)."""
    log.write_text("")
    path = os.pathsep.join(filter(None, [str(launch_hook_dir()), env.get("PYTHONPATH")]))
    return {**env, "PYTHONPATH": path, LAUNCH_LOG_ENV: str(log)}


def read_launches(log: Path, tree: Path) -> Launches:
    """What the run that logged to LOG launched from TREE's files."""
    text = log.read_text(errors="replace") if log.is_file() else ""
    return parse_launches(text, {str(tree), os.path.realpath(tree)})
