"""What a gate's command reads (kgit/judge/gate_reads.py), on file lists alone."""

from __future__ import annotations

from kgit.judge.gate_reads import gate_reads

FILES = {
    "kern/rmsnorm.py",
    "kern/__init__.py",
    "tests/test_rmsnorm.py",
    "tests/conftest.py",
    "tests/ops/test_deep.py",
    "conftest.py",
    "test_root.py",
    "setup.cfg",
    "pyproject.toml",
    "Makefile",
}
SOURCES = ["kern/rmsnorm.py"]


def reads(command: str, texts: dict[str, str] | None = None, sources: list[str] = SOURCES):
    return gate_reads(command, FILES, (texts or {}).get, sources)


def test_a_folder_is_frozen_whole_with_the_conftest_above_it() -> None:
    found = reads("python -m pytest -q tests/")
    assert found.frozen == ["tests", "conftest.py"]
    assert found.unseen == []


def test_a_test_id_freezes_its_file_and_every_conftest_on_the_way_down() -> None:
    found = reads("pytest tests/ops/test_deep.py::test_x -k 'a and not b'")
    assert found.frozen == ["tests/ops/test_deep.py", "tests/conftest.py", "conftest.py"]


def test_a_bare_pytest_takes_testpaths_from_the_file_pytest_reads_first() -> None:
    setup_cfg = "[tool:pytest]\ntestpaths = tests\n"
    pyproject = '[tool.pytest.ini_options]\ntestpaths = ["test_root.py"]\n'
    # setup.cfg comes after pyproject.toml in pytest's order: pyproject's section wins.
    found = reads("pytest", {"setup.cfg": setup_cfg, "pyproject.toml": pyproject})
    assert found.frozen == ["test_root.py", "pyproject.toml", "conftest.py"]
    found = reads("pytest", {"setup.cfg": setup_cfg, "pyproject.toml": "[project]\n"})
    assert found.frozen == ["tests", "setup.cfg", "conftest.py"]


def test_the_root_or_a_folder_holding_the_kernel_is_frozen_test_file_by_test_file() -> None:
    found = reads("pytest -q .")
    assert "kern/rmsnorm.py" not in found.frozen
    assert set(found.frozen) == {
        "conftest.py",
        "test_root.py",
        "tests/conftest.py",
        "tests/test_rmsnorm.py",
        "tests/ops/test_deep.py",
    }
    assert "kern" not in reads("pytest kern", sources=["kern"]).frozen


def test_unittest_forms() -> None:
    assert reads("python -m unittest discover -s tests -p 'test*.py'").frozen == ["tests"]
    assert reads("python3 -m unittest tests.test_rmsnorm").frozen == ["tests/test_rmsnorm.py"]
    assert "test_root.py" in reads("python -m unittest discover").frozen


def test_wrappers_freeze_their_own_file_and_say_what_they_hide() -> None:
    make = reads("make -j2 test")
    assert make.frozen == ["Makefile"]
    assert "make runs a recipe (Makefile is frozen)" in make.unseen[0]
    script = reads("CUDA_VISIBLE_DEVICES=0 bash ./scripts/test.sh")
    assert script.frozen == []
    assert "./scripts/test.sh (not in the repository)" in script.unseen[0]
    assert "tox.ini" not in reads("tox -e py").frozen  # absent from FILES: nothing to freeze
    assert reads("tox -e py").unseen
