"""The CLI as a user and an agent meet it: a subprocess, light imports, help that teaches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_kgit


def kgit_process(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kgit", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )


def test_status_json_as_a_subprocess(campaign: Path) -> None:
    result = kgit_process("status", "--json", cwd=campaign)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["campaign"] == "c1" and data["baselined"] is True


def test_errors_in_json_mode_are_json(kernel_repo: Path) -> None:
    result = kgit_process("-c", "nope", "status", "--json", cwd=kernel_repo)
    assert result.returncode == 2
    error = json.loads(result.stdout)
    assert error["exit_code"] == 2 and error["hint"]


@pytest.mark.parametrize("args", [["--help"], ["status"], ["log"]])
def test_the_cli_never_imports_torch_or_triton(campaign: Path, args: list[str]) -> None:
    probe = (
        "import sys, runpy; sys.argv = ['kgit', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('kgit', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'triton', 'git', 'numpy'))\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, *args], cwd=campaign, capture_output=True, text=True
    )
    assert "HEAVY []" in result.stderr, result.stderr[-2000:]


@pytest.mark.parametrize("args", [["--help"], ["status"], ["log"]])
def test_the_read_path_imports_no_gate_audit_machinery(campaign: Path, args: list[str]) -> None:
    """The mutation and reach machinery (regexes compiled at import) serves the gate audit only:
    it cost the read path about 30 ms when a view of the audit's summary imported it. Rule 11's
    scanners serve the verdicts and `kgit show`, not status or log."""
    probe = (
        "import sys, runpy; sys.argv = ['kgit', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('kgit', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('AUDIT', sorted(m for m in sys.modules if m.startswith(("
        "'kgit.judge.mutant', 'kgit.judge.mutation', 'kgit.judge.reach', "
        "'kgit.judge.audit_coverage', 'kgit.judge.rule11', 'kgit.judge.tampering'))), "
        "file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, *args], cwd=campaign, capture_output=True, text=True
    )
    assert "AUDIT []" in result.stderr, result.stderr[-2000:]


# What `kgit status` and `kgit log` do not run, once their rows are cached, and once cost them time
# to load (~40 ms of ~125 at 100 campaigns x 100 rounds, docs/measured.md): click and the command
# modules (kgit/cli/quick.py runs these two without them), the figures' arithmetic and the notes
# refs' comparison (only a listing computed anew needs them), the gate audit's records, the
# policies, a push's classes, and what only writers, a commit's gate or a manifest with a mistake
# use. A module that turns up here was imported by something status or log never calls: import
# it where it is used.
NOT_ON_THE_READ_PATH = (
    "click",
    "kgit.cli.app",
    "kgit.cli.cmd_guards",
    "kgit.cli.cmd_lifecycle",
    "kgit.cli.cmd_review",
    "kgit.cli.cmd_rounds",
    "kgit.cli.cmd_sharing",
    "kgit.engine.guards.seal",
    "kgit.engine.measuring",
    "kgit.gitdoor.pushes",
    "kgit.judge.figures",
    "kgit.records.gate_audit",
    "datetime",
    "difflib",
    "shutil",
    "tempfile",
    "yaml",
)


# ... and what status alone does not run (the log's reading of its baseline figures).
NOT_IN_STATUS = ("kgit.judge.scoring",)


@pytest.mark.parametrize("args", [["status"], ["status", "--json"], ["log"], ["log", "--json"]])
def test_the_read_path_loads_only_what_it_runs(campaign: Path, args: list[str]) -> None:
    # the rows cached first, as a user finds them
    assert kgit_process(*args, cwd=campaign).returncode == 0
    unused = NOT_ON_THE_READ_PATH + (NOT_IN_STATUS if args[0] == "status" else ())
    probe = (
        "import sys, runpy; sys.argv = ['kgit', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('kgit', run_name='__main__')\n"
        "except SystemExit as done:\n    assert not done.code, done.code\n"
        f"unused = {unused!r}\n"
        "print('UNUSED', sorted(m for m in sys.modules "
        "if any(m == u or m.startswith(u + '.') for u in unused)), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, *args], cwd=campaign, capture_output=True, text=True
    )
    assert "UNUSED []" in result.stderr, result.stderr[-2000:]
    assert "c1" in result.stdout or "BASELINE" in result.stdout  # it ran, and said so


def test_help_teaches_the_loop() -> None:
    text = run_kgit("--help").out
    for step in (
        "kgit init",
        "kgit baseline",
        "kgit round start",
        "git commit",
        "kgit round validate",
    ):
        assert step in text
    assert "--full" in run_kgit("round", "validate", "--help").out


def test_init_help_says_what_the_docs_say_of_notes_and_rebase() -> None:
    """`kgit init --help` said git would carry kgit's notes through amend and rebase; kgit
    removes that setting, and a rewritten commit has no verdict until it is validated."""
    text = " ".join(run_kgit("init", "--help").out.split())
    assert "notes do not follow an amend or a rebase" in text
    assert "carry kgit's notes" not in text


def test_usage_errors_exit_2() -> None:
    assert run_kgit("round", "frobnicate").code == 2
    assert run_kgit("show").code == 2


def test_show_needs_a_round_number(campaign: Path) -> None:
    assert run_kgit("show", "abc").code == 2
    missing = run_kgit("show", "42")
    assert missing.code == 2 and "kgit log" in missing.err
    assert "BASELINE" in run_kgit("show", "round-1").out
