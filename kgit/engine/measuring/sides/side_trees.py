"""Where harnesses run: each side of a validation in a work tree of kgit's own,
`.git/kgit/worktrees/<campaign>/<side>` (`<campaign>/<work tree>/<side>` for a round run in a
linked work tree), holding exactly one commit's files. Nothing untracked or
ignored in the user's work tree reaches a measurement (a `sitecustomize.py` that rewrites the CSV
at exit, a stale build); the reference (the best line's tip, or the baseline for `kgit finish`)
and the candidate are set up alike, and rebuilt when the manifest has a rebuild step."""

from __future__ import annotations

import shutil
from pathlib import Path

from kgit.engine.campaign import Campaign
from kgit.engine.measuring.harness.passes import HarnessError
from kgit.engine.measuring.isolation.sealed import run_in_gate_world
from kgit.engine.measuring.isolation.watch import changed_under
from kgit.engine.measuring.sides.trees import mark_held
from kgit.errors import KgitError
from kgit.gitdoor import Repo, open_repo
from kgit.progress import Voice, phase


def measuring_tree(campaign: Campaign, commit: str, side: str, voice: Voice) -> Path:
    """COMMIT checked out alone in kgit's work tree for SIDE ("reference" or "candidate").

    Every time, the tree is made to hold exactly COMMIT's files: every untracked and ignored
    file goes (`git clean -ffdx`), bytecode caches included, whatever a pass or the gate left
    there. A campaign with a rebuild step keeps its build outputs while the tree holds the commit
    they were built for and nothing in it changed after the build (a file changed since, by
    anyone, means the tree is cleaned and built again)."""
    repo = campaign.repo
    folder = repo.kgit_dir() / "worktrees" / campaign.name
    linked = repo.linked_tree()
    if linked is not None:  # a round's own work tree measures in trees of its own: rounds in
        folder = folder / linked  # parallel never check out over each other's sides
    path, marker = folder / side, folder / f"{side}.built"
    mark_held(path)  # before the checkout: `kgit gc` leaves it while this process runs
    with phase("trees"):
        _checked_out(campaign, commit, path, marker)
    command = campaign.manifest.rebuild_command
    if command and (not marker.exists() or marker.read_text() != commit):
        with phase("rebuild"):
            _rebuild(campaign, side, path, voice)
        marker.write_text(commit)
    return path


def _checked_out(campaign: Campaign, commit: str, path: Path, marker: Path) -> None:
    repo, command = campaign.repo, campaign.manifest.rebuild_command
    if (path / ".git").exists() and not _tree_of(repo, path):
        shutil.rmtree(path)  # checked out again below, from nothing
        marker.unlink(missing_ok=True)
    if (path / ".git").exists():
        tree = open_repo(path)
        moved = tree.rev_parse("HEAD") != commit
        tree.force_detach(commit)
        tree.fresh_index()
        keep_build = bool(command) and not moved and built_untouched(path, marker, commit)
        tree.clean(ignored=not keep_build)
        if not keep_build:
            marker.unlink(missing_ok=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        repo.add_detached_worktree(path, commit)


def _tree_of(repo: Repo, path: Path) -> bool:
    """Whether PATH is a work tree of REPO. A repository copied or moved keeps trees whose `.git`
    names the first one's records, or records `kgit gc` or a finish removed since."""
    try:
        return open_repo(path).common_dir == repo.common_dir
    except KgitError:
        return False


def _rebuild(campaign: Campaign, side: str, path: Path, voice: Voice) -> None:
    command = campaign.manifest.rebuild_command or ""
    voice.say(f"rebuild ({side} work tree): `{command}`")
    # In the gate's world (kgit/engine/measuring/isolation/world.py): a loader shim in the caller's shell
    # could otherwise build each side's binary differently.
    result = run_in_gate_world(campaign, command, path, echo=voice.echo)
    if not result.ok:
        raise KgitError(f"the rebuild failed in the {side} work tree", details=result.tail)


def built_untouched(path: Path, marker: Path, commit: str) -> bool:
    """Whether PATH was built for COMMIT (its MARKER says so) and nothing in it changed after."""
    try:
        if marker.read_text() != commit:
            return False
        built = marker.stat().st_ctime_ns
    except OSError:
        return False
    # Files only: cleaning untracked files away changes their folders, and is no change of the
    # build; a file the build made, changed, or one added beside it (a forged .pyc) is.
    return not any(p.is_file() for p in changed_under(path, built))


def require_pristine(path: Path, side: str) -> None:
    """Refuse a measurement when SIDE's work tree no longer holds its commit's files: the other
    side's harness or kernel can reach it, and a candidate that slowed the reference's kernel
    down was once accepted at +80%. Bytecode caches count: measuring processes write none
    (kgit/engine/measuring/isolation/world.py), so one there was put there."""
    changed = open_repo(path).unclean_paths()
    if changed:
        shown = ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
        raise HarnessError(
            f"validation ERROR: the {side} work tree changed while measuring: {shown}",
            hint="a harness or kernel wrote into kgit's work trees; nothing was judged",
        )
