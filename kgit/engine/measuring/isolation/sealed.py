"""A sealed measurement: the device held, and the folders no measuring process may write
watched from before its processes start until after they are gone (kgit/engine/measuring/isolation/watch.py);
the worlds those processes run in (kgit/engine/measuring/isolation/world.py) for the harness and the gate.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from kgit.engine.campaign import Campaign
from kgit.engine.measuring.device.devicelock import measuring
from kgit.engine.measuring.device.pyenv import command_facts
from kgit.engine.measuring.isolation.watch import (
    Watch,
    drain_world_writes,
    interpreter_configs,
    no_bytecode_here,
    refuse_writes,
    require_untainted,
    unimported,
    watched_folders,
)
from kgit.engine.measuring.isolation.world import (
    World,
    open_world,
    recorded_env,
    require_no_shadow,
    sealed_env,
)
from kgit.engine.user_commands import CommandResult, run_command
from kgit.progress import Say, phase
from kgit.records.protocol import RUN_ENV

# kgit's own knobs a user may set for the measuring processes (both sides alike).
_KGIT_PASSED = ("KGIT_LAUNCH_LOG", "KGIT_TRACE_LINES", "KGIT_MEMORY_SHARE", "KGIT_BLOCK_UNITS")


def taint_file(campaign: Campaign) -> Path:
    return campaign.repo.kgit_dir() / "tainted.json"


@contextmanager
def watched(campaign: Campaign, trees: Sequence[Path], what: str) -> Iterator[None]:
    """Refuse what the processes started inside the block wrote to kgit's code, the
    interpreter's libraries or TREES (checked once the block is over, whatever ended it)."""
    require_untainted(taint_file(campaign))
    manifest = campaign.manifest
    facts = [command_facts(command) for command in (manifest.quick_command, manifest.test_command)]
    libraries = [p for f in facts for p in f.get("python_libraries", "").split(os.pathsep)]
    imported = [p for f in facts for p in f.get("python_path", "").split(os.pathsep)]
    # The repository's own hooks and configuration too: git runs what they name.
    git_dir = campaign.repo.common_dir
    folders = watched_folders([*libraries, str(git_dir / "hooks"), str(git_dir / "info")], trees)
    scratch = Path(tempfile.mkdtemp(prefix="kgit-watch-"))
    # What neither the harness's Python nor the gate's imports from (nothing, unless both known).
    known = all("python_path" in f for f in facts)
    skipped = unimported(libraries, imported) if known else []
    configs = interpreter_configs(f.get("python_executable", "") for f in facts)
    watch = Watch(folders, scratch / "mark", [git_dir / "config", *configs], skipped)
    reset = tuple(Path(tree).resolve() for tree in trees)
    drain_world_writes()  # what an earlier, unwatched world found is not this block's
    with no_bytecode_here():
        watch.start()
        try:
            yield
        except BaseException:
            # A write explains the failure better than what it caused.
            with phase("watch"):
                refuse_writes(watch, taint_file(campaign), what, reset)
            raise
        with phase("watch"):
            refuse_writes(watch, taint_file(campaign), what, reset)


@contextmanager
def sealed(campaign: Campaign, trees: Sequence[Path], what: str, say: Say) -> Iterator[None]:
    """The device's measuring lock held and TREES watched while the block measures."""
    with measuring(campaign.repo, what, say), watched(campaign, trees, what):
        yield


def harness_world(campaign: Campaign, tree: Path, extra: dict[str, str] | None = None) -> World:
    """A fresh world for one harness process in TREE (the caller closes it); inside
    `one_commit_cache`, its compile caches are the block's."""
    knobs = {**_kgit_knobs(), RUN_ENV: "1", **(extra or {})}
    return open_world(tree, campaign.manifest.env, knobs, _one_commit[-1] if _one_commit else None)


_one_commit: list[Path] = []


@contextmanager
def one_commit_cache() -> Iterator[None]:
    """Inside, every harness process shares one compile cache, removed when the block ends. Only
    for a block whose processes all run one commit (the baseline's pass and its calibration: on
    an H100 each of its six processes compiled the RMSNorm's kernels again, 5-6 s on its first
    shape). One commit's code could already tell its processes apart by the tree each runs in,
    so a shared cache gives it nothing new; a round's two sides never share one."""
    folder = Path(tempfile.mkdtemp(prefix="kgit-one-commit-cache-"))
    _one_commit.append(folder)
    try:
        yield
    finally:
        _one_commit.remove(folder)
        shutil.rmtree(folder, ignore_errors=True)


def world_facts(world: World) -> dict[str, str]:
    """What a measurement's fingerprint records of its world: the environment (compared with
    the baseline's, variable by variable) and the digest of kgit's measuring code it ran."""
    return {"environment": recorded_env(world.env), "kgit_measuring": world.digest}


_gate_worlds: list[World] = []


def _gate_world(tree: Path) -> World:
    """One world for all of this kgit process's gate runs in TREE and elsewhere, removed when
    it exits (a tree whose root would shadow kgit is refused, as for the harness)."""
    require_no_shadow(tree)
    if not _gate_worlds:
        world = open_world(tree, {})
        atexit.register(world.close)
        _gate_worlds.append(world)
    return _gate_worlds[0]


def gate_lib(tree: Path) -> list[Path]:
    """The gate runs' copy of kgit's code, made before a watch over it starts."""
    return [_gate_world(tree).lib]


def gate_env(campaign: Campaign, tree: Path) -> dict[str, str]:
    """The environment of a gate run (the test command, the audit's runs) in TREE."""
    env = sealed_env(_gate_world(tree), tree, campaign.manifest.env, _kgit_knobs())
    # No .pytest_cache left in the tree: a gate's run writes nothing a later pass could read.
    env["PYTEST_ADDOPTS"] = " ".join(
        filter(None, [env.get("PYTEST_ADDOPTS"), "-p no:cacheprovider"])
    )
    return env


def run_in_gate_world(
    campaign: Campaign, command: str, folder: Path, *, echo: bool
) -> CommandResult:
    """COMMAND (the gate's tests, the rebuild step) in FOLDER, in the gate's world."""
    return run_command(
        command,
        folder,
        campaign.manifest.timeout_s,
        tether=campaign.repo.common_dir,
        echo=echo,
        env=gate_env(campaign, folder),
    )


def _kgit_knobs() -> dict[str, str]:
    return {name: os.environ[name] for name in _KGIT_PASSED if name in os.environ}
