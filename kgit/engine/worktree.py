"""The reference's work tree: kgit keeps the commit an A/B validation compares with (the best
line's tip, or the baseline for `kgit finish`) checked out in a work tree of its own,
`.git/kgit/worktrees/<campaign>/best`, rebuilt when the manifest has a rebuild step."""

from __future__ import annotations

from pathlib import Path

from kgit.engine.measure import Say
from kgit.engine.runner import run_command
from kgit.engine.store import Campaign
from kgit.errors import KgitError
from kgit.gitdoor import open_repo


def best_tree(campaign: Campaign, commit: str, say: Say, *, echo: bool) -> Path:
    """The best line's tip in kgit's own work tree (created or moved there; rebuilt if needed)."""
    repo = campaign.repo
    path = repo.kgit_dir() / "worktrees" / campaign.name / "best"
    if (path / ".git").exists():
        tree = open_repo(path)
        tree.git("checkout", "-q", "-f", "--detach", commit)
        tree.git("clean", "-q", "-f", "-d")
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        repo.git("worktree", "prune")
        repo.git("worktree", "add", "-q", "-f", "--detach", str(path), commit)
    command = campaign.manifest.rebuild_command
    marker = path / ".git-kgit-built"
    if command and (not marker.exists() or marker.read_text() != commit):
        say(f"rebuild (best line work tree): `{command}`")
        result = run_command(command, path, campaign.manifest.timeout_s, echo=echo)
        if not result.ok:
            raise KgitError("the rebuild failed in the best line's work tree", details=result.tail)
        marker.write_text(commit)
    return path
