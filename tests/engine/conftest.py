"""Fixtures of the engine's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Built
from tests.engine.remotes import accepted, kgit_in, make_remote, rolled_back


@pytest.fixture
def shared(campaign: Path, built: Built, tmp_path: Path) -> tuple[Path, Path]:
    """Campaign c1 (baseline, an accepted round-2, a rolled-back round-3) in `repo`, pushed to
    a bare `origin`: (repo, the bare remote)."""
    repo = campaign

    def build() -> None:
        accepted(repo, "bigger tiles", 120)
        rolled_back(repo, "smaller tiles", 90)
        make_remote(repo)
        pushed = kgit_in(repo, "push")
        assert pushed.code == 0, pushed

    built.lay("shared", tmp_path, build)
    return repo, repo.parent / "remote.git"
