"""`kgit import` never reads through a symbolic link and is all or nothing (issue 12, item 8)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Built, git, run_kgit

SECRET = b"api-token: 5ecr3t-do-not-commit\n"


def kgit_refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "refs/kgit/", "refs/notes/", "refs/heads/kgit/")


def all_objects(repo: Path) -> bytes:
    return subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"], cwd=repo, capture_output=True
    ).stdout


@pytest.fixture
def exported(reviewed: Path, built: Built, tmp_path: Path) -> Path:
    """The reviewed campaign exported, and deleted from the repository it came from, so that
    importing it back under the same name is possible."""
    folder = tmp_path / "export"

    def build() -> None:
        assert run_kgit("export", str(folder)).code == 0
        git(reviewed, "checkout", "-q", "--detach", "HEAD")
        for ref in kgit_refs(reviewed).splitlines():
            git(reviewed, "update-ref", "-d", ref.split()[-1])

    built.lay("exported", tmp_path, build)
    return folder


def refused_without_trace(repo: Path, folder: Path, message: str) -> None:
    before = kgit_refs(repo)
    result = run_kgit("import", str(folder), "--name", "c1")
    assert result.code == 2, result
    assert message in result.err and "hint:" in result.err and "Traceback" not in result.err
    assert kgit_refs(repo) == before


@pytest.mark.parametrize(
    "link",
    [
        "rounds/round-2/kernel_snapshot/kernel.txt",  # a file replaced by a link
        "rounds/round-2/kernel_snapshot/extra.txt",  # a link added beside it
        "rounds/round-2/artifacts/benchmark.csv",  # goes into a note
        "quick_test_bench.py",  # goes into the campaign record
    ],
)
def test_a_link_to_a_secret_is_refused_and_never_read(
    reviewed: Path, exported: Path, tmp_path: Path, link: str
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_bytes(SECRET)
    (exported / link).unlink(missing_ok=True)
    os.symlink(secret, exported / link)
    refused_without_trace(reviewed, exported, "is a symbolic link")
    assert SECRET not in all_objects(reviewed)


def test_a_linked_snapshot_folder_is_refused(
    reviewed: Path, exported: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kernel.txt").write_bytes(SECRET)
    (exported / "rounds/round-2/kernel_snapshot/sub").symlink_to(outside)
    refused_without_trace(reviewed, exported, "is a symbolic link")
    assert SECRET not in all_objects(reviewed)


def test_a_bad_front_matter_writes_nothing_and_the_fixed_folder_imports(
    reviewed: Path, exported: Path
) -> None:
    summary = exported / "rounds/round-4/summary.md"
    good = summary.read_text()
    summary.write_text(good.replace("  hypothesis:", "  hypothesis_:", 1))
    refused_without_trace(reviewed, exported, "round-4/summary.md: the front matter is invalid")
    summary.write_text(good)
    result = run_kgit("import", str(exported), "--name", "c1")
    assert result.code == 0, result


def test_a_failure_while_writing_puts_every_ref_back(reviewed: Path, exported: Path) -> None:
    # git refuses a path under .git/ in a tree: round-2's commit fails after round-1's record,
    # best line and notes were written.
    bad = exported / "rounds/round-2/kernel_snapshot/.git"
    bad.mkdir()
    (bad / "config").write_text("x\n")
    before = kgit_refs(reviewed)
    result = run_kgit("import", str(exported), "--name", "c1")
    assert result.code == 1 and "Traceback" not in result.err, result
    assert kgit_refs(reviewed) == before
    (bad / "config").unlink()
    bad.rmdir()
    assert run_kgit("import", str(exported), "--name", "c1").code == 0
