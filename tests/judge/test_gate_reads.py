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


LIGER = {
    "src/liger/__init__.py",
    "src/liger/ops/__init__.py",
    "src/liger/ops/layer_norm.py",
    "src/liger/ops/utils.py",
    "test/__init__.py",
    "test/utils.py",
    "test/transformers/__init__.py",
    "test/transformers/test_layer_norm.py",
    "test/transformers/helpers.py",
    "conftest.py",
    "pyproject.toml",
    "setup.py",
}
LIGER_TEXTS = {
    "conftest.py": "import pytest\nfrom test.utils import set_seed\n",
    "test/utils.py": "import torch\nfrom liger.ops.utils import ensure\nfrom . import shared\n",
    "test/transformers/test_layer_norm.py": (
        "import torch\n"
        "from liger.ops.layer_norm import LayerNormFunction\n"
        "from test.utils import assert_verbose_allclose\n"
        "from .helpers import make_inputs\n"
        "def test_ln():\n    import setup\n"
    ),
    "pyproject.toml": "[tool.pytest.ini_options]\n",
}


def test_the_modules_a_frozen_test_or_conftest_imports_are_frozen_too() -> None:
    command = "python -m pytest test/transformers/test_layer_norm.py"
    found = gate_reads(command, LIGER, LIGER_TEXTS.get, ["src/liger/ops/layer_norm.py"])
    assert found.frozen == [
        "test/transformers/test_layer_norm.py",
        "pyproject.toml",
        "conftest.py",
        "test/__init__.py",
        "test/utils.py",
        "test/transformers/helpers.py",
        "setup.py",
    ]


def test_imports_into_the_kernel_or_its_package_are_never_frozen() -> None:
    texts = {**LIGER_TEXTS, "conftest.py": "from src.liger.ops import layer_norm, utils\n"}
    found = gate_reads(
        "pytest test/transformers", LIGER, texts.get, ["src/liger/ops/layer_norm.py"]
    )
    assert not [p for p in found.frozen if p.startswith("src/")]
    assert "test/utils.py" in found.frozen  # the test folder's own module, imported from within


def test_with_no_kernel_source_only_modules_under_a_test_folder_are_followed() -> None:
    texts = {"tests/test_k.py": "import kern.rmsnorm\nfrom tests import util\n"}
    files = {"kern/__init__.py", "kern/rmsnorm.py", "tests/test_k.py", "tests/util.py"}
    found = gate_reads("pytest tests/test_k.py", files, texts.get, [])
    assert found.frozen == ["tests/test_k.py", "tests/util.py"]


def test_a_frozen_folder_s_imports_outside_it_are_followed() -> None:
    texts = {"tests/test_a.py": "from helpers.check import close\n", "helpers/check.py": "x = 1\n"}
    files = {"tests/test_a.py", "helpers/__init__.py", "helpers/check.py", "kern/k.py"}
    found = gate_reads("pytest tests", files, texts.get, ["kern/k.py"])
    assert found.frozen == ["tests", "helpers/__init__.py", "helpers/check.py"]


def test_the_kernel_s_whole_package_is_left_out_but_a_test_s_own_folder_is_followed() -> None:
    files = {
        "pkg/__init__.py",
        "pkg/ops/ln.py",
        "pkg/transformers/functional.py",
        "pkg/tests/test_ln.py",
        "pkg/tests/helpers.py",
    }
    texts = {
        "pkg/tests/test_ln.py": (
            "from pkg.ops.ln import f\nfrom pkg.transformers.functional import g\n"
            "from pkg.tests.helpers import h\n"
        )
    }
    found = gate_reads("pytest pkg/tests/test_ln.py", files, texts.get, ["pkg/ops/ln.py"])
    assert found.frozen == ["pkg/tests/test_ln.py", "pkg/tests/helpers.py"]
