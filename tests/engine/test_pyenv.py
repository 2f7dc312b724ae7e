"""The gate and the harness run in an environment kgit isolates, and fingerprints where it
cannot (issue 27, item 2): a caller's PYTHONPATH, a user site-packages and the PYTHON* variables
do not reach them; a start-up file (`.pth`, `sitecustomize.py`) added to the interpreter's own
site-packages after the baseline is an environment change, refused like another GPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kgit.engine.measuring.device.pyenv import interpreter, isolated_env, python_facts
from tests.conftest import commit, git, run_kgit

# Doubles every figure of the CSV at exit: loaded from any folder on the import path.
DOUBLE = """\
import atexit, sys

def _double():
    if "--summary-csv" not in sys.argv:
        return
    path = sys.argv[sys.argv.index("--summary-csv") + 1]
    rows = [line.split(",") for line in open(path).read().splitlines()]
    for row in rows[1:]:
        row[2:] = [str(float(v) * 2) if v.replace(".", "").isdigit() else v for v in row[2:]]
    open(path, "w").write("\\n".join(",".join(r) for r in rows) + "\\n")

atexit.register(_double)
"""


def test_the_callers_python_variables_do_not_reach_a_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setenv("PYTHONSTARTUP", "/elsewhere/start.py")
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")
    env = isolated_env({"PYTHONPATH": "/the/tree"})
    assert env["PYTHONPATH"] == "/the/tree"
    assert "PYTHONSTARTUP" not in env and env["PYTHONNOUSERSITE"] == "1"
    assert env["PYTHONUNBUFFERED"] == "1"  # how output is buffered, not what runs
    assert interpreter(f"FOO=1 {sys.executable} bench.py") == sys.executable


def test_a_start_up_file_changes_the_fingerprint(tmp_path: Path) -> None:
    venv = _venv(tmp_path)
    before = python_facts(str(venv / "bin" / "python"))
    (_site_packages(venv) / "zz_patch.pth").write_text("import os\n")
    after = python_facts(str(venv / "bin" / "python"))
    assert before["python_startup"] != after["python_startup"]
    assert str(_site_packages(venv)) in after["python_path"].split(":")
    # Probed again only when something changed (a validation reads hundreds of blocks), and a
    # file rewritten in place is a change.
    assert python_facts(str(venv / "bin" / "python")) == after
    (_site_packages(venv) / "zz_patch.pth").write_text("import sys\n")
    assert python_facts(str(venv / "bin" / "python"))["python_startup"] != after["python_startup"]


def test_a_sitecustomize_on_the_callers_pythonpath_never_loads_in_the_harness(
    campaign: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sitecustomize.py outside the repository, on the PYTHONPATH kgit is run with, doubled
    the CSV of a slower kernel: no committed file, nothing for a scan to read."""
    repo = campaign
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(DOUBLE)
    assert run_kgit("round", "start", "slower").code == 0
    (repo / "kernel.txt").write_text("speed: 80\n")
    assert commit(repo, "slower").returncode == 0
    monkeypatch.setenv("PYTHONPATH", str(site))
    verdict = run_kgit("-q", "round", "validate", "--json").json()
    assert isinstance(verdict, dict)
    assert verdict["decision"] == "ROLLED BACK", verdict
    assert run_kgit("round", "accept").code == 1


def test_a_pth_file_added_after_the_baseline_is_an_environment_change(
    kernel_repo: Path, tmp_path: Path
) -> None:
    repo = kernel_repo
    venv = _venv(tmp_path)
    manifest = (repo / "manifest.yaml").read_text()
    manifest = manifest.replace(f"{sys.executable} harness.py", f"{venv}/bin/python harness.py")
    (repo / "manifest.yaml").write_text(manifest)
    assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
    done = run_kgit("-q", "baseline", "--json")
    assert done.code == 0, done
    result = done.json()
    assert isinstance(result, dict)
    assert result["fingerprint"]["python_startup"].startswith("0 files")
    assert result["fingerprint"]["python_executable"].startswith(str(venv))
    (_site_packages(venv) / "measure_patch.pth").write_text("import os\n")
    assert run_kgit("round", "start", "faster").code == 0
    (repo / "kernel.txt").write_text("speed: 120\n")
    assert commit(repo, "faster").returncode == 0
    refused = run_kgit("round", "validate")
    assert refused.code == 1, refused
    assert "the environment changed since the baseline: python_startup 0 files" in refused.err
    assert git(repo, "rev-parse", "kgit/c1/best") != git(repo, "rev-parse", "HEAD")


def _venv(tmp_path: Path) -> Path:
    """A bare virtual environment (no pip): its site-packages is the test's own to change."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return venv


def _site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python*/site-packages"))
