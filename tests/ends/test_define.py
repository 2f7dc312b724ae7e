"""Defining the target: `kgit init` asks for what the manifest lacks, or lists it all."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgit.cli import cli
from kgit.engine.lifecycle.define import ask_missing
from kgit.gitdoor.repo import open_repo
from kgit.records.metrics import METRICS
from kgit.resources import data_dir
from tests.conftest import git, run_kgit
from tests.records.test_metrics import NAME, ROW

PY = sys.executable


def stored_manifest(repo: Path, name: str = "c1") -> dict[str, object]:
    return json.loads(git(repo, "show", f"refs/kgit/{name}/campaign:manifest.yaml"))  # type: ignore[no-any-return]


def kgit_refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/kgit/", "refs/heads/kgit/")


ANSWERS = [
    "gemm",  # target_op
    "FAKE",  # target_backend
    "CPU",  # target_gpu
    "kernel.txt",  # kernel_source
    f"{PY} check.py",  # test_command
    "Forward TFLOPS",  # primary_metric
    f"{PY} harness.py",  # quick_command
    "s64=64x64x64, s128=128x128x128 256x256x256",  # target_shapes
    "",  # execution_mode: the default
    "",  # rebuild_command: the default (none for this backend)
]


def test_init_asks_for_every_missing_field_then_confirms(kernel_repo: Path) -> None:
    (kernel_repo / "manifest.yaml").unlink()
    result = CliRunner().invoke(cli, ["init", "c1", "--ask"], input="\n".join([*ANSWERS, "y", ""]))
    assert result.exit_code == 0, result.output
    assert "target_op: gemm" in result.output and "create the campaign" in result.output
    manifest = stored_manifest(kernel_repo)
    assert manifest["kernel_source"] == ["kernel.txt"]
    assert [s["label"] for s in manifest["target_shapes"]] == ["s64", "s128", "gemm_256x256x256"]  # type: ignore[attr-defined]
    assert manifest["execution_mode"] == "repo-mode" and manifest["rebuild_command"] is None
    assert manifest["target_gpu"] == "CPU"
    # The campaign defined by answers works like one defined by a file.
    assert run_kgit("-q", "baseline").code == 0


def test_declining_the_target_writes_nothing(kernel_repo: Path) -> None:
    (kernel_repo / "manifest.yaml").unlink()
    result = CliRunner().invoke(cli, ["init", "c1", "--ask"], input="\n".join([*ANSWERS, "n", ""]))
    assert result.exit_code != 0
    assert "nothing written" in str(result.exception)
    assert kgit_refs(kernel_repo) == ""
    assert not (kernel_repo / ".git" / "hooks" / "pre-commit").exists()


def test_defaults_follow_the_backend_table(kernel_repo: Path) -> None:
    manifest = kernel_repo / "manifest.yaml"
    manifest.write_text(manifest.read_text().replace("kernel_source: kernel.txt\n", ""))
    args = ["init", "c1", "-m", "manifest.yaml", "--ask", "--target-backend", "HIP"]
    result = CliRunner().invoke(
        cli,
        [*args, "--target-gpu", "MI300X"],
        input="kernel.txt\n\n\ny\n",  # kernel_source; execution_mode and rebuild: defaults
    )
    assert result.exit_code == 0, result.output
    stored = stored_manifest(kernel_repo)
    assert stored["execution_mode"] == "repo-mode"
    assert stored["rebuild_command"] == "GPU_ARCHS=gfx942 pip install --no-build-isolation -e . -v"


def test_without_a_terminal_every_missing_field_is_listed(kernel_repo: Path) -> None:
    (kernel_repo / "manifest.yaml").unlink()
    result = run_kgit("init", "c1", "--target-op", "gemm")  # run_kgit's stdin is no terminal
    assert result.code == 2, result
    for name in (
        "target_backend",
        "kernel_source",
        "test_command",
        "primary_metric",
        "quick_command",
        "target_shapes",
    ):
        assert f"'{name}' is a required property" in result.err
    assert "'target_op'" not in result.err
    assert "hint:" in result.err and "--from-template" in result.err
    assert kgit_refs(kernel_repo) == ""
    # --no-input refuses even where a terminal could answer; one field missing, one listed.
    manifest = kernel_repo / "manifest.yaml"
    manifest.write_text(f"target_op: gemm\ntarget_backend: FAKE\nquick_command: {PY} harness.py\n")
    partial = run_kgit("init", "c1", "-m", "manifest.yaml", "--no-input")
    assert partial.code == 2 and "missing 4 field(s)" in partial.err


def test_from_template_writes_a_harness_and_a_draft_then_init_completes_it(
    kernel_repo: Path,
) -> None:
    (kernel_repo / "manifest.yaml").unlink()
    made = run_kgit("init", "c1", "--from-template", "gemm", "--target-backend", "TRITON")
    assert made.code == 0, made
    harness = kernel_repo / "bench" / "quick_test_bench.py"
    assert harness.read_bytes() == (data_dir("templates") / "gemm_harness.py").read_bytes()
    assert "commit it" in made.out and "kgit init c1 --manifest manifest.yaml" in made.out
    assert kgit_refs(kernel_repo) == ""
    again = run_kgit("init", "c1", "--from-template", "memory")
    assert again.code == 1 and "already exist" in again.err
    # The draft names what is known and leaves the rest for init to ask (or list).
    listed = run_kgit("init", "c1", "-m", "manifest.yaml")
    assert listed.code == 2
    assert "'kernel_source'" in listed.err and "'test_command'" in listed.err
    assert "'quick_command'" not in listed.err and "'target_shapes'" not in listed.err
    # target_gpu (blank), kernel_source, test_command, execution_mode and rebuild (defaults).
    answers = f"\nkernel.txt\n{PY} check.py\n\n\ny\n"
    uncommitted = CliRunner().invoke(
        cli, ["init", "c1", "-m", "manifest.yaml", "--ask"], input=answers
    )
    assert "bench/quick_test_bench.py" in str(uncommitted.exception)  # protected: commit it first
    git(kernel_repo, "add", "bench/quick_test_bench.py")
    git(kernel_repo, "commit", "-q", "-m", "quick harness from kgit's template")
    done = CliRunner().invoke(cli, ["init", "c1", "-m", "manifest.yaml", "--ask"], input=answers)
    assert done.exit_code == 0, done.output
    stored = stored_manifest(kernel_repo)
    assert stored["primary_metric"] == "Combined Step TFLOPS"
    assert stored["protected_paths"] == ["bench/quick_test_bench.py"]
    assert stored["target_backend"] == "TRITON" and stored["rebuild_command"] is None


def test_a_misspelt_required_key_is_named_beside_the_key_it_misses(kernel_repo: Path) -> None:
    """`target_shape:` for `target_shapes:` read only as "'target_shapes' is a required
    property", with no word of the key the user wrote (issue 26, item 4)."""
    manifest = kernel_repo / "manifest.yaml"
    manifest.write_text(manifest.read_text().replace("target_shapes:", "target_shape:"))
    result = run_kgit("init", "c1", "-m", "manifest.yaml")
    assert result.code == 2, result
    assert "'target_shapes' is a required property" in result.err
    assert "has 'target_shape:', did you mean 'target_shapes:'?" in result.err
    assert kgit_refs(kernel_repo) == ""


def _drafted_shapes(root: Path) -> list[dict[str, object]]:
    import yaml

    shapes = yaml.safe_load((root / "manifest.yaml").read_text())["target_shapes"]
    assert isinstance(shapes, list)
    return shapes


def test_from_template_drafts_shapes_the_machine_can_run(kernel_repo: Path) -> None:
    from kgit.resources import gpu_present

    (kernel_repo / "manifest.yaml").unlink()
    shapes_for = [] if not gpu_present() else ["--shapes-for", "cpu"]
    made = run_kgit("init", "c1", "--from-template", "memory", *shapes_for)
    assert made.code == 0, made
    assert "note: CPU-sized target_shapes in fp32" in made.out and "--shapes-for gpu" in made.out
    assert "# CPU-sized target_shapes" in (kernel_repo / "manifest.yaml").read_text()
    shapes = _drafted_shapes(kernel_repo)
    assert {s["dtype"] for s in shapes} == {"fp32"}  # the interpreter's bf16 is wrong
    assert max(int(str(s["M"])) * int(str(s["N"])) for s in shapes) <= 256 * 4096

    for path in ("manifest.yaml", "bench/quick_test_bench.py"):
        (kernel_repo / path).unlink()
    gpu = run_kgit("init", "c1", "--from-template", "memory", "--shapes-for", "gpu", "--json")
    assert gpu.code == 0 and gpu.json()["shapes_for"] == "gpu", gpu  # type: ignore[index]
    assert {"x_32768x8192"} <= {s["label"] for s in _drafted_shapes(kernel_repo)}
    assert "CPU-sized" not in (kernel_repo / "manifest.yaml").read_text()

    alone = run_kgit("init", "c1", "--shapes-for", "cpu")
    assert alone.code == 2 and "--from-template" in alone.err


def test_the_template_offered_is_the_metrics_own(
    kernel_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A metric of the table names the harness template a campaign of it starts from."""
    monkeypatch.setitem(METRICS, NAME, ROW)
    data = {
        "target_op": "rmsnorm",
        "target_backend": "TRITON",
        "primary_metric": NAME,
        "target_shapes": [{"label": "m", "M": 64, "N": 64}],
    }
    asked: list[str] = []

    def ask(question: str, default: str | None) -> str:
        asked.append(question)
        return default or "x"

    ask_missing(data, open_repo(kernel_repo), ask)
    (quick,) = [q for q in asked if q.startswith("quick_command")]
    assert "kgit init --from-template memory" in quick
