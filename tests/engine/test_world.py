"""The world a measuring process runs in (kgit/engine/measuring/isolation/world.py): an environment built
from an allowlist, kgit's measuring code from a copy kgit made, a private home; and the manifest's
`env:` that declares what a harness needs beyond it (issue 35, items 1 and 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kgit.engine.measuring.isolation.world import (
    env_changes,
    open_world,
    recorded_env,
    unpassed_hint,
)
from kgit.errors import KgitError, UsageError
from kgit.records.manifest import parse_manifest
from tests.conftest import MANIFEST


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller's shell as a hostile agent sets it."""
    for name, value in {
        "LD_PRELOAD": "/tmp/slow_clock.so",
        "LD_AUDIT": "/tmp/audit.so",
        "PYTHONPYCACHEPREFIX": "/tmp/forged",
        "PYTHONSTARTUP": "/tmp/start.py",
        "PYTHONPATH": "/tmp/site",
        "TRITON_INTERPRET": "1",
        "SOMETHING_ELSE": "x",
        "LANG": "C.UTF-8",
    }.items():
        monkeypatch.setenv(name, value)


def test_only_the_allowlist_and_the_declared_reach_a_process(shell: None, tmp_path: Path) -> None:
    world = open_world(tmp_path, {"TORCH_LOGS": "+dynamo"}, {"KGIT_RUN": "1"})
    try:
        env = world.env
        for name in ("LD_PRELOAD", "LD_AUDIT", "PYTHONPYCACHEPREFIX", "PYTHONSTARTUP",
                     "TRITON_INTERPRET", "SOMETHING_ELSE"):  # fmt: skip
            assert name not in env, name
        assert env["PATH"] and env["LANG"] == "C.UTF-8"
        assert env["TORCH_LOGS"] == "+dynamo" and env["KGIT_RUN"] == "1"
        assert env["PYTHONDONTWRITEBYTECODE"] == "1" and env["PYTHONNOUSERSITE"] == "1"
        assert env["PYTHONPATH"].split(":") == [str(world.lib), str(tmp_path)]
        for name in ("HOME", "TMPDIR", "TRITON_CACHE_DIR", "CUDA_CACHE_PATH"):
            assert Path(env[name]).is_relative_to(world.root), name
        # The recorded environment leaves out kgit's per-process paths, keeps what was passed.
        kept = json.loads(recorded_env(env))
        assert kept["TORCH_LOGS"] == "+dynamo" and "HOME" not in kept and "PYTHONPATH" not in kept
        assert "KGIT_RUN" not in kept
    finally:
        world.close()
    assert not world.root.exists()


def test_a_process_in_the_world_runs_kgits_copy_and_writes_no_bytecode(tmp_path: Path) -> None:
    world = open_world(tmp_path, {})
    try:
        sources = sorted(world.lib.rglob("*.py"))
        compiled = {p: p.read_bytes() for p in world.lib.rglob("*.pyc")}
        assert (world.lib / "kgit/measure/timing.py") in sources and len(compiled) == len(sources)
        probe = (
            "import kgit.measure.timing_core as m, sys; print(m.__file__, sys.dont_write_bytecode)"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe],
            env=world.env,
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        where, no_bytecode = done.stdout.split()
        assert Path(where).is_relative_to(world.lib) and no_bytecode == "True", done.stderr
        # Only the bytecode kgit compiled itself, unchanged by the process.
        assert {p: p.read_bytes() for p in world.lib.rglob("*.pyc")} == compiled
        assert len(world.digest) == 16 and world.digest == open_world(tmp_path, {}).digest
    finally:
        world.close()


def test_a_tree_that_would_shadow_kgit_is_refused(tmp_path: Path) -> None:
    (tmp_path / "kgit").mkdir()
    with pytest.raises(KgitError, match="replace kgit's measuring library"):
        open_world(tmp_path, {})


def test_a_changed_environment_is_said_variable_by_variable() -> None:
    before = recorded_env({"PATH": "/usr/bin", "TRITON_INTERPRET": "1"})
    now = recorded_env({"PATH": "/tmp/evil:/usr/bin", "TRITON_INTERPRET": "1", "X": "y"})
    assert env_changes(before, now) == [
        "PATH '/usr/bin' -> '/tmp/evil:/usr/bin'",
        "X (unset) -> 'y'",
    ]


def test_a_variable_set_in_the_shell_and_not_declared_is_named(shell: None) -> None:
    hint = unpassed_hint({})
    assert hint is not None and "TRITON_INTERPRET" in hint and "env:" in hint
    assert "SOMETHING_ELSE" not in hint and "LD_PRELOAD" not in hint
    assert unpassed_hint({"TRITON_INTERPRET": "1"}) is None


def test_the_manifest_declares_env_and_cannot_declare_kgits_own() -> None:
    text = MANIFEST.format(python="python3")
    manifest, _ = parse_manifest(text + 'env: {TRITON_INTERPRET: "1"}\n')
    assert manifest.env == {"TRITON_INTERPRET": "1"}
    for name in ("LD_PRELOAD", "PYTHONPATH", "HOME", "KGIT_RUN", "TRITON_CACHE_DIR"):
        with pytest.raises(UsageError, match=f"env.{name}: kgit sets this itself"):
            parse_manifest(text + f'env: {{{name}: "x"}}\n')
    with pytest.raises(UsageError, match="env"):
        parse_manifest(text + "env: {TRITON_INTERPRET: 1}\n")  # a number, not a string


NEEDS_INTERPRETER = """\
import os, runpy, sys
if os.environ.get("TRITON_INTERPRET") != "1":
    print("no GPU here and TRITON_INTERPRET is not set: the kernel cannot run")
    sys.exit(3)
runpy.run_path("fake_harness.py", run_name="__main__")
"""


def test_a_variable_the_harness_needs_is_named_with_the_manifest_key(
    kernel_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CPU campaign's harness needs TRITON_INTERPRET=1, set in the user's shell: kgit does not
    pass it (only what the manifest declares), and says so, naming it and `env:`."""
    from tests.conftest import git, run_kgit

    repo = kernel_repo
    (repo / "fake_harness.py").write_text((repo / "harness.py").read_text())
    (repo / "harness.py").write_text(NEEDS_INTERPRETER)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "a harness that needs the interpreter")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    manifest = repo / "manifest.yaml"
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    failed = run_kgit("-q", "baseline")
    assert failed.code == 1 and "harness exited 3" in failed.err, failed
    assert "set in your shell but not passed to the harness or the gate: TRITON_INTERPRET" in (
        failed.err
    )
    assert 'env: {TRITON_INTERPRET: "1"}' in failed.err
    declared = repo.parent / "declared.yaml"
    declared.write_text(manifest.read_text() + 'env: {TRITON_INTERPRET: "1"}\n')
    assert run_kgit("init", "c2", "-m", str(declared)).code == 0
    assert run_kgit("-q", "-c", "c2", "baseline").code == 0


def test_the_processes_of_one_commit_share_a_compile_cache_and_no_others_do(
    tmp_path: Path,
) -> None:
    """The baseline's processes all run one commit and share the block's compile cache; any
    other two worlds (a round's two sides) never do, and the shared cache goes with its block."""
    from types import SimpleNamespace

    from kgit.engine.measuring.isolation.sealed import harness_world, one_commit_cache

    campaign = SimpleNamespace(manifest=SimpleNamespace(env={}))
    tree = tmp_path / "tree"
    tree.mkdir()

    def caches() -> list[str]:
        worlds = [harness_world(campaign, tree) for _ in range(2)]  # type: ignore[arg-type]
        try:
            return [w.env["TRITON_CACHE_DIR"] for w in worlds]
        finally:
            for world in worlds:
                world.close()

    apart = caches()
    assert apart[0] != apart[1]
    with one_commit_cache():
        shared = caches()
        assert shared[0] == shared[1]
        assert Path(shared[0]).parent.is_dir()
    assert not Path(shared[0]).parent.exists()
    assert len(set(caches())) == 2


def test_a_src_layout_is_found_by_its_command_and_kgits_copy_stays_first(tmp_path: Path) -> None:
    """docs/your-kernel.md: a measuring process has kgit's copy and the tree's root on its
    PYTHONPATH, so a package at the root imports and one under `src/` does not, until the command
    adds it after kgit's copy (the manifest's `env:` may not set PYTHONPATH: the test above)."""
    (tmp_path / "src" / "kpkg").mkdir(parents=True)
    (tmp_path / "src" / "kpkg" / "__init__.py").write_text("")
    (tmp_path / "rootpkg").mkdir()
    (tmp_path / "rootpkg" / "__init__.py").write_text("")
    probe = "import kgit.measure as m, kpkg; print(m.__file__); print(kpkg.__file__)"
    world = open_world(tmp_path, {})
    try:

        def run(command: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                command, shell=True, env=world.env, cwd=tmp_path, capture_output=True, text=True
            )

        assert run(f"{sys.executable} -c 'import rootpkg'").returncode == 0
        assert "No module named 'kpkg'" in run(f"{sys.executable} -c '{probe}'").stderr
        done = run(f"PYTHONPATH=\"$PYTHONPATH:src\" {sys.executable} -c '{probe}'")
        measure, kpkg = done.stdout.split()
        assert Path(measure).is_relative_to(world.lib), done.stderr
        assert Path(kpkg) == tmp_path / "src" / "kpkg" / "__init__.py"
    finally:
        world.close()


@pytest.mark.parametrize("key", ["acceptance_command", "rebuild_command"])
def test_finish_and_validate_run_their_commands_with_the_manifests_env(
    kernel_repo: Path, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    """`kgit finish`'s suite and a round's rebuild step run in the world the gate runs in: a
    command that needs the manifest's `env:` (TRITON_INTERPRET=1 on a CPU) passes there as the
    gate did, whatever the shell holds (both ran with the caller's environment, and failed)."""
    from tests.conftest import run_kgit
    from tests.engine.test_gc import faster_round

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    probe = "import os, sys; sys.exit(os.environ.get('TRITON_INTERPRET') != '1')"
    manifest = kernel_repo / "manifest.yaml"
    manifest.write_text(
        manifest.read_text()
        + f'{key}: {sys.executable} -c "{probe}"\n'
        + 'env: {TRITON_INTERPRET: "1"}\n'
    )
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    assert run_kgit("-q", "baseline").code == 0
    faster_round(kernel_repo)  # its validate rebuilds first
    finished = run_kgit("-q", "finish")  # finish rebuilds, then runs the suite
    assert finished.code == 0, finished
