"""kgit's launch recorder (kgit/launch_hook/sitecustomize.py) in a real Python process under
Triton's interpreter: what it logs, what it leaves alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kgit.engine.measuring.harness.launches import LAUNCH_LOG_ENV, read_launches, recording
from kgit.gitdoor import clean_env

KERNELS = """\
import os
os.environ["TRITON_INTERPRET"] = "1"
import torch
import triton
import triton.language as tl


@triton.jit
def launched(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)


@triton.jit
def never(x_ptr):
    tl.store(x_ptr, 0)
"""

MAIN = """\
import torch
import kernels
x = torch.zeros(8)
kernels.launched[(1,)](x, BLOCK=8)
kernels.launched[(1,)](x, BLOCK=8)
assert float(x[0]) == 2.0
import sitecustomize_was_here
"""


def test_the_recorder_logs_what_a_process_launches(tmp_path: Path) -> None:
    (tmp_path / "kernels.py").write_text(KERNELS)
    (tmp_path / "main.py").write_text(MAIN)
    # A sitecustomize the recorder hides (a distribution's) still runs after it.
    hidden = tmp_path / "site"
    hidden.mkdir()
    (hidden / "sitecustomize.py").write_text("import sys, types\n"
                                             "sys.modules['sitecustomize_was_here'] = "
                                             "types.ModuleType('x')\n")  # fmt: skip
    log = tmp_path / "launches.jsonl"
    env = recording(clean_env({"PYTHONPATH": f"{tmp_path}:{hidden}"}), log)
    assert env[LAUNCH_LOG_ENV] == str(log)
    proc = subprocess.run([sys.executable, "main.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    found = read_launches(log, tmp_path)
    assert found.recorded and found.kernels == {("kernels.py", "launched")}
    assert log.read_text().count('"kernel"') == 1  # once per kernel and test, not per launch
    assert found.errors == []


def test_without_the_log_variable_it_does_nothing(tmp_path: Path) -> None:
    (tmp_path / "kernels.py").write_text(KERNELS)
    (tmp_path / "main.py").write_text(MAIN.replace("import sitecustomize_was_here\n", ""))
    env = recording(clean_env({"PYTHONPATH": str(tmp_path)}), tmp_path / "log.jsonl")
    del env[LAUNCH_LOG_ENV]
    proc = subprocess.run([sys.executable, "main.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "log.jsonl").read_text() == ""
