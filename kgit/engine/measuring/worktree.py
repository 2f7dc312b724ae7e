"""Where harnesses run: each side of a validation in a work tree of kgit's own,
`.git/kgit/worktrees/<campaign>/<side>` (`<campaign>/<work tree>/<side>` for a round run in a
linked work tree), holding exactly one commit's files. Nothing untracked or
ignored in the user's work tree reaches a measurement (a `sitecustomize.py` that rewrites the CSV
at exit, a stale build); the reference (the best line's tip, or the baseline for `kgit finish`)
and the candidate are set up alike, and rebuilt when the manifest has a rebuild step."""

from __future__ import annotations

from pathlib import Path

from kgit.engine.campaign import Campaign
from kgit.engine.measuring.passes import HarnessError
from kgit.engine.runner import run_command
from kgit.errors import KgitError
from kgit.gitdoor import open_repo
from kgit.progress import Say


def measuring_tree(campaign: Campaign, commit: str, side: str, say: Say, *, echo: bool) -> Path:
    """COMMIT checked out alone in kgit's work tree for SIDE ("reference" or "candidate").

    Moving to another commit removes every untracked and ignored file (`git clean -ffdx`); on
    the same commit, ignored files (build outputs) stay and untracked ones go. The rebuild step
    runs whenever the tree holds a commit it was not built for."""
    repo = campaign.repo
    folder = repo.kgit_dir() / "worktrees" / campaign.name
    linked = repo.linked_tree()
    if linked is not None:  # a round's own work tree measures in trees of its own: rounds in
        folder = folder / linked  # parallel never check out over each other's sides
    path, marker = folder / side, folder / f"{side}.built"
    if (path / ".git").exists():
        tree = open_repo(path)
        moved = tree.rev_parse("HEAD") != commit
        tree.force_detach(commit)
        tree.clean(ignored=moved)
    else:
        folder.mkdir(parents=True, exist_ok=True)
        repo.add_detached_worktree(path, commit)
    command = campaign.manifest.rebuild_command
    if command and (not marker.exists() or marker.read_text() != commit):
        say(f"rebuild ({side} work tree): `{command}`")
        result = run_command(
            command, path, campaign.manifest.timeout_s, tether=repo.common_dir, echo=echo
        )
        if not result.ok:
            raise KgitError(f"the rebuild failed in the {side} work tree", details=result.tail)
        marker.write_text(commit)
    return path


def require_pristine(path: Path, side: str) -> None:
    """Refuse a measurement when SIDE's work tree no longer holds its commit's files: the other
    side's harness or kernel can reach it (the trees are siblings), and a candidate that slowed
    the reference's kernel down was once accepted at +80%."""
    # Python's bytecode caches are written by any import in a repository that does not ignore
    # them; a .pyc is only read back for its own source, which the check covers.
    changed = [
        p
        for p in open_repo(path).unclean_paths()
        if "__pycache__/" not in f"/{p}" and not p.endswith(".pyc")
    ]
    if changed:
        shown = ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
        raise HarnessError(
            f"validation ERROR: the {side} work tree changed while measuring: {shown}",
            hint="a harness or kernel wrote into kgit's work trees; nothing was judged",
        )
