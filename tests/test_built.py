"""The fixtures' copies of a built campaign (tests/conftest.py: Built) are repositories of their
own: a copy that still pointed into the first build would let one test's rounds land in every
later test's campaign."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Built, git


def _linked_trees(repo: Path) -> list[Path]:
    listing = git(repo, "worktree", "list", "--porcelain").splitlines()
    return [
        Path(line.removeprefix("worktree ")) for line in listing if line.startswith("worktree ")
    ]


def test_a_campaign_laid_again_is_linked_to_its_own_folder(
    campaign: Path, built: Built, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    built.lay("campaign", other, lambda: pytest.fail("a campaign built twice in one session"))
    for folder in (tmp_path, other):
        repo = folder / "repo"
        trees = _linked_trees(repo)
        assert len(trees) > 1  # the baseline measured in kgit's own work tree
        for tree in trees:
            assert tree.is_relative_to(repo), tree
            common = git(tree, "rev-parse", "--path-format=absolute", "--git-common-dir")
            assert Path(common) == repo / ".git"
    git(other / "repo", "commit", "-q", "--no-verify", "--allow-empty", "-m", "only in the copy")
    assert git(campaign, "log", "-1", "--format=%s") != "only in the copy"
