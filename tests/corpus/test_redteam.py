"""The red-team corpus (tests/corpus/redteam.py) through the real CLI: every cheating candidate
is kept off the best line, by the mechanism its case names; every control gets on it.

One repository with both campaigns baselined is built per session and copied for each attempt.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.corpus.redteam import ATTEMPTS, Attempt, build_template, run_attempt


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield build_template(tmp_path_factory.mktemp("redteam"))


def test_the_corpus_tries_every_cheat_the_issue_names() -> None:
    cheats = [a for a in ATTEMPTS if a.stop is not None]
    assert len(cheats) >= 14
    assert any(a.stop is None for a in ATTEMPTS)  # a control shows the script can accept
    assert len({a.id for a in ATTEMPTS}) == len(ATTEMPTS)


def _param(attempt: Attempt) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=attempt.xfail)] if attempt.xfail else []
    return pytest.param(attempt, id=attempt.id, marks=marks)


@pytest.mark.parametrize("attempt", [_param(a) for a in ATTEMPTS])
def test_a_cheat_never_reaches_the_best_line(
    attempt: Attempt, template: Path, tmp_path: Path
) -> None:
    outcome = run_attempt(attempt, template, tmp_path)
    transcript = outcome.transcript()
    assert "Traceback" not in outcome.step("kgit round accept").output, transcript
    if attempt.stop is None:
        assert outcome.best_moved, transcript
        assert outcome.step("kgit round accept").code == 0, transcript
        return
    assert not outcome.best_moved, transcript
    step = outcome.step(attempt.stop.step)
    assert step.code == attempt.stop.code, transcript
    assert attempt.stop.says in step.output, transcript
    assert outcome.step("kgit round accept").code == 1, transcript
