"""Links out of the repository (issue 27, item 3): a kernel_source file committed as a symbolic
link to a file outside the repository was measured through the link while the scans read the
link's text, and the best line's code was not in git (accepted at +55%)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kgit.judge.scope import links_out_of_repo
from tests.conftest import commit, git, run_kgit, without_policy


def test_links_that_leave_the_repository_are_named() -> None:
    found = links_out_of_repo(
        {
            "kern/a.py": "/home/me/fast.py",
            "kern/b.py": "../../outside.py",
            "kern/c.py": "../inside.py",
            "d.py": "kern/a.py",
            "e.py": "..",
        }
    )
    assert found == ["e.py -> ..", "kern/a.py -> /home/me/fast.py", "kern/b.py -> ../../outside.py"]


@pytest.mark.parametrize("policy", ["seed", "default"])
def test_a_kernel_replaced_by_a_link_out_of_the_repository_is_never_accepted(
    kernel_repo: Path, tmp_path: Path, policy: str
) -> None:
    repo = kernel_repo
    if policy == "default":
        (repo / "manifest.yaml").write_text(without_policy(repo / "manifest.yaml"))
    assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
    assert run_kgit("-q", "baseline").code == 0
    outside = tmp_path / "fast_kernel.txt"
    outside.write_text("speed: 300\n")
    assert run_kgit("round", "start", "a faster kernel, kept elsewhere").code == 0
    (repo / "kernel.txt").unlink()
    os.symlink(outside, repo / "kernel.txt")
    done = commit(repo, "faster")
    assert done.returncode == 0, done.stderr
    assert git(repo, "ls-tree", "HEAD", "kernel.txt").startswith("120000")
    result = run_kgit("-q", "round", "validate", "--json")
    verdict = result.json()
    assert isinstance(verdict, dict), result
    assert verdict["decision"] == "ROLLED BACK", verdict
    assert verdict["cause"] == "link-out-of-repo", verdict
    assert f"kernel.txt -> {outside}" in verdict["reasons"][0]
    refused = run_kgit("round", "accept")
    assert refused.code == 1, refused
    assert "speed: 100" in git(repo, "show", "kgit/c1/best:kernel.txt")


def test_a_baseline_whose_kernel_is_a_link_out_of_the_repository_is_refused(
    kernel_repo: Path, tmp_path: Path
) -> None:
    repo = kernel_repo
    outside = tmp_path / "kernel_elsewhere.txt"
    outside.write_text("speed: 100\n")
    (repo / "kernel.txt").unlink()
    os.symlink(outside, repo / "kernel.txt")
    git(repo, "commit", "-qam", "the kernel lives elsewhere")
    assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
    refused = run_kgit("baseline")
    assert refused.code == 2, refused
    assert "kernel_source links out of the repository: kernel.txt ->" in refused.err
