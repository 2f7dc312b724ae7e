"""The red-team corpus (tests/corpus/redteam.py) through the real CLI: every cheating candidate
is kept off the best line, by the mechanism its case names (under the seed's rule, and under the
default policy for the cheats that act on measuring); every control gets on it.

One repository with both campaigns baselined is built once per run (shared by pytest-xdist's
processes) and copied for each attempt.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import built_once_per_run, git
from tests.corpus.redteam import (
    ATTEMPTS,
    NEXT_VALIDATE,
    OUTSIDE_PATH_VALIDATE,
    PREFIX_VALIDATE,
    PRELOAD_VALIDATE,
    VALIDATE,
    WROTE,
    Attempt,
    Stop,
    build_template,
    run_attempt,
)

# Every attempt is a whole round through the CLI on copies of two baselined campaigns (~7 min):
# the full suite runs it, the quick one (`pytest -m "not slow"`) leaves it out.
pytestmark = pytest.mark.slow
# `plant-site-packages` and `fake-find-on-path` write a module into the interpreter's
# site-packages, and `venv-config` its pyvenv.cfg, which every measurement running beside them
# would find: they are marked
# `writes_site_packages`, and no other test runs while they do, under `-n` too (tests/conftest.py).


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_once_per_run(tmp_path_factory, "redteam", build_template) / "template"


def test_the_corpus_tries_every_cheat_the_issue_names() -> None:
    cheats = [a for a in ATTEMPTS if a.stop is not None]
    assert len(cheats) >= 14
    assert any(a.stop is None for a in ATTEMPTS)  # a control shows the script can accept
    assert len({a.id for a in ATTEMPTS}) == len(ATTEMPTS)


def test_every_attempt_that_plants_in_site_packages_runs_alone() -> None:
    planting = {a.id for a in ATTEMPTS if "kgit_corpus_planted" in repr(a) or "pyvenv" in repr(a)}
    assert planting >= {"plant-site-packages", "fake-find-on-path", "venv-config"}
    assert planting == {a.id for a in ATTEMPTS if a.writes_site_packages}


def _param(attempt: Attempt, known_holes: bool = True) -> object:
    marks: list[pytest.MarkDecorator] = []
    if attempt.xfail and known_holes:
        marks.append(pytest.mark.xfail(strict=True, reason=attempt.xfail))
    if attempt.writes_site_packages:
        marks.append(pytest.mark.writes_site_packages)
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
    assert attempt.moves_best_by_hand or not outcome.best_moved, transcript
    step = outcome.step(attempt.stop.step)
    assert step.code == attempt.stop.code, transcript
    assert attempt.stop.says in step.output, transcript
    assert outcome.step("kgit round accept").code == 1, transcript


@pytest.fixture(scope="session")
def default_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = built_once_per_run(
        tmp_path_factory, "redteam-default", lambda root: build_template(root, policy=None)
    )
    repo = root / "template"
    for campaign in ("gemm", "moe"):
        stored = git(repo, "show", f"refs/kgit/{campaign}/campaign:manifest.yaml")
        assert '"decision_policy": "interleaved"' in stored
    return repo


# Under the default policy (interleaved: both sides as resident harnesses, judged in blocks), the
# cheats that act on measuring, and the control that shows the same script can still accept.
UNDER_DEFAULT = {
    "control-honest", "lazy-output", "stopped-clock", "slow-clock", "atexit-double",
    "hidden-atexit-double", "hidden-slow-clock", "sitecustomize", "sitecustomize-committed",
    "amend-after-validate", "forged-note", "link-out", "flood-forged-digest",
    "pythonpath-sitecustomize", "idle-neighbour", "double-forked-neighbour",
    "knows-when-timed", "control-foreign-env", "ld-preload-clock", "pycache-prefix",
    "kgit-bytecode", "reference-bytecode", "memo-on-values", "commit-on-best",
    "best-moved-by-hand", "best-onto-rolled-back", "skip-worktree-harness",
    "plant-site-packages", "fake-find-on-path", "replace-best", "stop-the-reference",
    "venv-config",
}  # fmt: skip


# Where the default stops a cheat otherwise than `seed` does (every other one is stopped by the
# same step, with the same words): the exit handlers that double the CSV never reach a measuring
# worker's block replies, so the candidate is judged on its real speed, a little slower (the
# hidden handlers' kernels) or half (the sitecustomize one's).
DEFAULT_STOPS = {
    "hidden-atexit-double": Stop(VALIDATE, 0, "round-2: ROLLED BACK"),
    "flood-forged-digest": Stop(VALIDATE, 0, "round-2: ROLLED BACK"),
    "pythonpath-sitecustomize": Stop(OUTSIDE_PATH_VALIDATE, 0, "round-2: ROLLED BACK"),
    "sitecustomize": Stop(VALIDATE, 0, "the candidate is slower"),
    "ld-preload-clock": Stop(PRELOAD_VALIDATE, 0, "round-2: ROLLED BACK"),
    "pycache-prefix": Stop(PREFIX_VALIDATE, 0, "round-2: ROLLED BACK"),
    # Both sides' trees are watched here: the forgery in the reference's tree is found.
    "reference-bytecode": Stop(VALIDATE, 1, WROTE),
    "memo-on-values": Stop(VALIDATE, 0, "round-2: ROLLED BACK"),
    "skip-worktree-harness": Stop(NEXT_VALIDATE, 0, "round-2: ROLLED BACK"),
    # Both sides run at once here: the thread finds the reference's harness and stops it.
    "stop-the-reference": Stop(VALIDATE, 0, "the candidate is slower"),
}

assert {a.id for a in ATTEMPTS} >= UNDER_DEFAULT >= set(DEFAULT_STOPS)  # none can drop out


@pytest.mark.parametrize(
    "attempt", [_param(a, known_holes=False) for a in ATTEMPTS if a.id in UNDER_DEFAULT]
)
def test_a_cheat_never_reaches_the_best_line_under_the_default_policy(
    attempt: Attempt, default_template: Path, tmp_path: Path
) -> None:
    outcome = run_attempt(attempt, default_template, tmp_path)
    transcript = outcome.transcript()
    accept = outcome.step("kgit round accept")
    assert "Traceback" not in accept.output, transcript
    if attempt.stop is None:
        assert outcome.best_moved and accept.code == 0, transcript
        return
    assert (attempt.moves_best_by_hand or not outcome.best_moved) and accept.code == 1, transcript
    stop = DEFAULT_STOPS.get(attempt.id, attempt.stop)
    step = outcome.step(stop.step)
    assert step.code == stop.code and stop.says in step.output, transcript
