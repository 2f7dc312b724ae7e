"""Gates written the way real projects run their tests (issue 26, item 1).

A user's first campaign with `test_command: python -m pytest -q tests` failed at baseline with
"git cat-file failed: fatal: git cat-file <sha>: bad file": freezing the gate's files read the
folder `tests` (a tree) as a blob. Each form below runs a whole baseline through the CLI on a
repository laid out as real projects are (a test folder with a conftest.py, pytest's settings in
pytest.ini or pyproject.toml), and the baseline says what it froze and what it cannot see into.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from tests.conftest import commit, git, run_kgit

# The project's own tests: unittest.TestCase, so that pytest and unittest both collect them.
TEST_KERNEL = """\
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class KernelTest(unittest.TestCase):
    def test_kernel_has_no_bug(self):
        self.assertNotIn("BUG", (ROOT / "kernel.txt").read_text())

    def test_kernel_names_a_speed(self):
        self.assertIn("speed", (ROOT / "kernel.txt").read_text())
"""
CONFTEST = """\
import pytest


@pytest.fixture(autouse=True)
def _seeded():
    yield
"""
PYTEST_INI = "[pytest]\ntestpaths = tests\nmarkers =\n    gpu: needs a GPU\n"
PYPROJECT = '[project]\nname = "kern"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'

# Stand-ins for tox and nox, which this machine lacks and which would build environments from
# the network: each runs the project's tests as its real counterpart's configuration would.
RUNNER = "#!/bin/sh\nexec {python} -m pytest -q tests\n"


def _layout(repo: Path, config: str) -> None:
    (repo / "tests").mkdir()
    (repo / "tests" / "test_kernel.py").write_text(TEST_KERNEL)
    (repo / "tests" / "conftest.py").write_text(CONFTEST)
    (repo / "tests" / "data.txt").write_text("fixture data the tests could read\n")
    (repo / "check.py").unlink()
    if config == "pytest.ini":
        (repo / "pytest.ini").write_text(PYTEST_INI)
    else:
        (repo / "pyproject.toml").write_text(PYPROJECT)
    py = sys.executable
    (repo / "Makefile").write_text(f"test:\n\t{py} -m pytest -q tests\n")
    (repo / "tox.ini").write_text("[tox]\nenvlist = py\n[testenv]\ncommands = pytest tests\n")
    (repo / "noxfile.py").write_text(
        "import nox\n\n@nox.session\ndef tests(s):\n    s.run('pytest')\n"
    )
    (repo / "scripts").mkdir()
    (repo / "scripts" / "test.sh").write_text(f"#!/bin/sh\nset -e\n{py} -m pytest -q tests\n")
    # ctest reads the CTestTestfile.cmake of the folder it runs in (CMake writes it at build).
    (repo / "CTestTestfile.cmake").write_text(
        f'add_test(kernel "{py}" "-m" "pytest" "-q" "tests")\n'
    )


FORMS = [
    # (test_command, config file, frozen paths the baseline must name, unseen words or None)
    ("{py} -m pytest -q tests", "pytest.ini", ["tests", "pytest.ini"], None),
    ("{py} -m pytest -q tests/", "pyproject.toml", ["tests", "pyproject.toml"], None),
    (
        "{py} -m pytest -q tests/test_kernel.py",
        "pytest.ini",
        ["tests/test_kernel.py", "tests/conftest.py"],
        None,
    ),
    (
        "{py} -m pytest -q tests/test_kernel.py::KernelTest::test_kernel_has_no_bug",
        "pytest.ini",
        ["tests/test_kernel.py", "tests/conftest.py"],
        None,
    ),
    ("{py} -m pytest -q tests -k 'no_bug or speed'", "pytest.ini", ["tests", "pytest.ini"], None),
    ("{py} -m pytest -q tests -m 'not gpu'", "pytest.ini", ["tests", "pytest.ini"], None),
    ("{py} -m pytest -q", "pytest.ini", ["tests", "pytest.ini"], None),
    ("{py} -m pytest -q", "pyproject.toml", ["tests", "pyproject.toml"], None),
    ("{py} -m unittest discover -s tests", "pytest.ini", ["tests"], None),
    ("make test", "pytest.ini", ["Makefile"], "make runs a recipe"),
    ("tox -e py", "pytest.ini", ["tox.ini"], "tox runs the commands"),
    ("nox -s tests", "pytest.ini", ["noxfile.py"], "nox runs the sessions"),
    ("bash scripts/test.sh", "pytest.ini", ["scripts/test.sh"], "run as a script"),
    ("ctest --output-on-failure", "pytest.ini", [], "ctest runs the tests CMake registered"),
]


@pytest.fixture
def stand_ins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("tox", "nox"):
        path = bin_dir / name
        path.write_text(RUNNER.format(python=sys.executable))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.parametrize(("command", "config", "frozen", "unseen"), FORMS)
def test_every_form_of_gate_passes_the_baseline_and_freezes_what_it_reads(
    kernel_repo: Path,
    stand_ins: None,
    command: str,
    config: str,
    frozen: list[str],
    unseen: str | None,
) -> None:
    repo = kernel_repo
    _layout(repo, config)
    git(repo, "add", "-A", "--", ".", ":!manifest.yaml")
    git(repo, "commit", "-q", "-m", "a project's layout: tests in a folder, a conftest.py")
    test_command = command.format(py=sys.executable)
    manifest = (repo / "manifest.yaml").read_text()
    manifest = manifest.replace(
        f"test_command: {sys.executable} check.py", f"test_command: {test_command}"
    )
    (repo / "manifest.yaml").write_text(manifest)
    assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
    done = run_kgit("baseline", "--json")
    assert done.code == 0, done
    result = done.json()
    assert isinstance(result, dict)
    protected = result["protected"]
    for path in frozen:
        assert protected.get(path), (path, protected)
    assert "harness.py" in protected  # the harness stays frozen beside the gate's files
    assert "kernel.txt" not in protected
    assert "frozen for the gate:" in done.err
    if unseen is None:
        assert result["gate_unseen"] == [], result["gate_unseen"]
    else:
        assert any(unseen in line for line in result["gate_unseen"]), result["gate_unseen"]
        assert "WARNING" in done.err and unseen in done.err


def test_a_round_that_adds_a_conftest_to_a_frozen_test_folder_is_rolled_back(
    kernel_repo: Path,
) -> None:
    """A folder is frozen whole: a new `conftest.py` that skips every test changes it, and the
    round is rolled back as a change of the gate, whatever its speed."""
    repo = kernel_repo
    _layout(repo, "pytest.ini")
    git(repo, "add", "-A", "--", ".", ":!manifest.yaml")
    git(repo, "commit", "-q", "-m", "layout")
    manifest = (repo / "manifest.yaml").read_text()
    manifest = manifest.replace(
        f"test_command: {sys.executable} check.py",
        f"test_command: {sys.executable} -m pytest -q tests",
    )
    (repo / "manifest.yaml").write_text(manifest)
    assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
    assert run_kgit("-q", "baseline").code == 0
    assert run_kgit("round", "start", "skip the slow tests").code == 0
    (repo / "tests" / "conftest.py").write_text(
        "import pytest\n\ndef pytest_collection_modifyitems(items):\n"
        "    for item in items:\n        item.add_marker(pytest.mark.skip)\n"
    )
    (repo / "kernel.txt").write_text("speed: 150\nBUG\n")
    done = commit(repo, "faster, and the tests are skipped")
    assert done.returncode == 0, done.stderr  # the hook ran the tests the new conftest skips
    verdict = run_kgit("-q", "round", "validate", "--json").json()
    assert isinstance(verdict, dict)
    assert verdict["decision"] == "ROLLED BACK", verdict
    # The freeze speaks first (before the kernel_source scope): the folder is named as changed.
    assert "protected path changed since baseline: tests " in verdict["reasons"][0], verdict
    assert run_kgit("round", "accept").code == 1


def test_a_helper_the_conftest_imports_is_frozen_and_a_round_changing_it_rolled_back(
    kernel_repo: Path,
) -> None:
    """A file-form gate froze the test file, the configuration and conftest.py, but not
    tests/utils.py that the conftest imports: a round could loosen the helper the test uses."""
    repo = kernel_repo
    _layout(repo, "pyproject.toml")
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "utils.py").write_text("def no_bug(text):\n    return 'BUG' not in text\n")
    (repo / "conftest.py").write_text("from tests.utils import no_bug  # noqa: F401\n")
    git(repo, "add", "-A", "--", ".", ":!manifest.yaml")
    git(repo, "commit", "-q", "-m", "layout, with a helper module beside the tests")
    manifest = (
        (repo / "manifest.yaml")
        .read_text()
        .replace(
            f"test_command: {sys.executable} check.py",
            f"test_command: {sys.executable} -m pytest -q tests/test_kernel.py",
        )
    )
    (repo / "manifest.yaml").write_text(manifest)
    assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
    done = run_kgit("baseline", "--json")
    assert done.code == 0, done
    protected = done.json()["protected"]  # type: ignore[index]
    assert protected.get("tests/utils.py") and protected.get("conftest.py"), protected
    assert "tests/utils.py" in done.err.split("frozen for the gate:")[1].splitlines()[0]
    assert run_kgit("round", "start", "a looser helper").code == 0
    (repo / "tests" / "utils.py").write_text("def no_bug(text):\n    return True\n")
    (repo / "kernel.txt").write_text("speed: 150\n")
    assert commit(repo, "faster, and a looser helper").returncode == 0
    verdict = run_kgit("-q", "round", "validate", "--json").json()
    assert isinstance(verdict, dict) and verdict["decision"] == "ROLLED BACK", verdict
    (reason,) = verdict["reasons"]
    assert reason.startswith("protected path changed since baseline: tests/utils.py")
    assert "new campaign" in reason and "kernel_source if" not in reason
