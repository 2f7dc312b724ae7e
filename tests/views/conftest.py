"""A small reviewed campaign, built the way a user builds one (real commits through the hook)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Built
from tests.views.helpers import play_rounds


@pytest.fixture
def reviewed(campaign: Path, built: Built, tmp_path: Path) -> Path:
    built.lay("reviewed", tmp_path, lambda: play_rounds(campaign))
    return campaign
