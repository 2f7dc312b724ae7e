"""CI runs exactly the README's full-suite command, and that command spreads the tests over two
processes (tests that must run alone hold a lock: tests/conftest.py, site_packages_held)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readmes_full_command_on_two_processes() -> None:
    command = (ROOT / ".ci" / "run").read_text().rstrip("\n").splitlines()[-1]
    assert command.endswith(" && pytest -n 2"), command
    assert command in (ROOT / "README.md").read_text().splitlines()
