"""kgit's work trees for gate audits, `.git/kgit/worktrees/<campaign>/audit` (and `audit-2`,
`audit-3`... where mutants run side by side): one file swapped for a changed copy, the gate
run, the file restored, whatever the run left removed. The user's work tree is never used; one
audit at a time holds the trees."""

from __future__ import annotations

import fcntl
import os
import shlex
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kgit.engine.campaign import Campaign
from kgit.engine.measuring.isolation.sealed import gate_env as sealed_gate_env
from kgit.engine.measuring.sides.side_trees import measuring_tree
from kgit.engine.user_commands import CommandResult, run_command
from kgit.errors import KgitError
from kgit.gitdoor import open_repo
from kgit.progress import Voice
from kgit.resources import gpu_present

SIDE = "audit"


def gate_with(
    campaign: Campaign, tree: Path, path: str, changed: bytes, original: bytes, allowed: float
) -> tuple[CommandResult | None, bool]:
    """The gate on TREE with PATH holding CHANGED, then PATH restored: (result, built). With a
    rebuild step, a failed rebuild means the gate never ran (None, False)."""
    write_file(tree, path, changed)
    try:
        rebuild = campaign.manifest.rebuild_command
        if rebuild:
            built = run_command(
                rebuild,
                tree,
                campaign.manifest.timeout_s,
                tether=campaign.repo.common_dir,
                env=gate_env(campaign, tree),
            )
            if not built.ok:
                return None, False
        return run_gate(campaign, tree, allowed), True
    finally:
        write_file(tree, path, original)
        reset(tree)


def run_gate(campaign: Campaign, tree: Path, timeout_s: float) -> CommandResult:
    return run_command(
        campaign.manifest.test_command,
        tree,
        timeout_s,
        tether=campaign.repo.common_dir,
        env=gate_env(campaign, tree),
    )


def gate_env(campaign: Campaign, tree: Path) -> dict[str, str]:
    # The gate's world (kgit/engine/measuring/isolation/world.py): no bytecode cache is written, so a
    # mutant of the same size written within the same second as the file it replaced is never
    # read back from, nor leaves behind, a stale .pyc.
    return sealed_gate_env(campaign, tree)


def mutant_env(
    campaign: Campaign, tree: Path, leave_out: list[str] | None = None
) -> dict[str, str]:
    """A mutant's gate: pytest (wherever the gate starts it) stops at its first failure, since
    one failure catches the mutant; the rest of the suite would only spend the audit's time.
    LEAVE_OUT: tests (pytest node ids) the control's record shows cannot see the mutant."""
    env = gate_env(campaign, tree)
    skip = [f"--deselect {shlex.quote(test)}" for test in leave_out or []]
    env["PYTEST_ADDOPTS"] = " ".join(filter(None, [env.get("PYTEST_ADDOPTS"), "-x", *skip]))
    return env


def write_file(tree: Path, path: str, data: bytes) -> None:
    """PATH of kgit's TREE now holds DATA; never through a link out of the tree."""
    target = tree / path
    if target.is_symlink() or not target.resolve().is_relative_to(tree.resolve()):
        raise KgitError(f"gate audit: {path} in kgit's work tree is not a regular file of it")
    target.write_bytes(data)


def parallel_trees(campaign: Campaign) -> int:
    """How many trees mutants run in at once: several where the gate is CPU-bound (no GPU
    here, so kernels run in Triton's interpreter or on the CPU), one where a GPU or a rebuild
    step is shared by every gate run."""
    if gpu_present() or campaign.manifest.rebuild_command:
        return 1
    return max(1, min(4, os.cpu_count() or 1))


def extra_tree(campaign: Campaign, commit: str, index: int, voice: Voice) -> Path:
    """The INDEXth (2, 3, ...) audit tree at COMMIT, for mutants run side by side."""
    return measuring_tree(campaign, commit, f"{SIDE}-{index}", voice)


def reset(tree: Path) -> None:
    """Back to the commit's files: what a gate run wrote goes, ignored build outputs stay."""
    scratch = open_repo(tree)
    scratch.restore_from_index(force=True)
    scratch.clean(ignored=False)


def tree_path(campaign: Campaign) -> Path:
    return campaign.repo.kgit_dir() / "worktrees" / campaign.name / SIDE


@contextmanager
def scratch_tree(
    campaign: Campaign, commit: str, sources: Iterable[str], voice: Voice
) -> Iterator[Path]:
    """kgit's audit work tree at COMMIT, reset however the audit ends. After mutants were
    rebuilt there, its build no longer matches the commit: the next use rebuilds."""
    tree = measuring_tree(campaign, commit, SIDE, voice)
    for folder in {(tree / path).parent / "__pycache__" for path in sources}:
        shutil.rmtree(folder, ignore_errors=True)  # stale bytecode of an earlier, killed audit
    try:
        yield tree
    finally:
        if campaign.manifest.rebuild_command:
            (tree.parent / f"{SIDE}.built").unlink(missing_ok=True)
        reset(tree)


@contextmanager
def exclusive(campaign: Campaign) -> Iterator[None]:
    """One audit of a campaign at a time: two would mutate the same work tree."""
    folder = campaign.repo.kgit_dir() / "worktrees" / campaign.name
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{SIDE}.lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise KgitError(
                f"another gate audit of campaign {campaign.name} is running",
                hint="wait for it to end; kgit status shows the last audit",
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
