"""The fixtures' copies of a built campaign (tests/conftest.py: Built) are repositories of their
own: a copy that still pointed into the first build would let one test's rounds land in every
later test's campaign. A folder built once per run (built_once_per_run) is built by one process
of pytest-xdist's for all of them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Built, built_once_per_run, git


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


# Two pytest-xdist processes asking for one folder: each its own basetemp, under one parent.
_ASK = """
import os, sys, time
from pathlib import Path
from tests.conftest import built_once_per_run

class Factory:
    def getbasetemp(self):
        return Path(sys.argv[1])

def build(folder):
    with open(sys.argv[2], "a") as log:
        log.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
    time.sleep(1)  # the other process asks meanwhile
    (folder / "made").write_text("whole")

print(built_once_per_run(Factory(), "thing", build))
"""


def test_a_folder_built_once_per_run_is_built_by_one_process_for_all(tmp_path: Path) -> None:
    log = tmp_path / "builds"
    asks = []
    for worker in ("gw0", "gw1"):
        (tmp_path / worker).mkdir()
        env = {**os.environ, "PYTEST_XDIST_WORKER": worker}
        argv = [sys.executable, "-c", _ASK, str(tmp_path / worker), str(log)]
        asks.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True))
    answers = [ask.communicate(timeout=60)[0].strip() for ask in asks]
    assert [ask.returncode for ask in asks] == [0, 0]
    assert answers == [str(tmp_path / "thing")] * 2
    assert len(log.read_text().splitlines()) == 1
    assert (tmp_path / "thing" / "made").read_text() == "whole"


def test_a_failed_build_is_tried_again_from_an_empty_folder(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    def fail(folder: Path) -> None:
        (folder / "half").write_text("")
        raise RuntimeError("the build failed")

    with pytest.raises(RuntimeError):
        built_once_per_run(tmp_path_factory, "flaky", fail)
    folder = built_once_per_run(tmp_path_factory, "flaky", lambda f: (f / "made").touch())
    assert sorted(p.name for p in folder.iterdir()) == ["made"]
    again = built_once_per_run(tmp_path_factory, "flaky", lambda f: pytest.fail("built twice"))
    assert again == folder


_LAY = """
import os, sys, time
from pathlib import Path
from tests.conftest import Built

here = Path(sys.argv[2])

def build():
    with open(sys.argv[3], "a") as log:
        log.write(f"{here}\\n")
    time.sleep(1)  # the other process asks meanwhile
    (here / "made").write_text(str(here))

os.chdir(here)
Built(Path(sys.argv[1])).lay("key", here, build)
"""


def test_a_key_is_built_by_one_process_and_laid_in_the_others(tmp_path: Path) -> None:
    log, kept = tmp_path / "builds", tmp_path / "kept"
    kept.mkdir()
    lays = []
    for worker in ("gw0", "gw1"):
        (tmp_path / worker).mkdir()
        argv = [sys.executable, "-c", _LAY, str(kept), str(tmp_path / worker), str(log)]
        lays.append(subprocess.Popen(argv))
    assert [lay.wait(timeout=60) for lay in lays] == [0, 0]
    [builder] = log.read_text().splitlines()
    for worker in ("gw0", "gw1"):
        assert (tmp_path / worker / "made").read_text() == builder
