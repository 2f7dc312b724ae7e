"""The staged snapshot the commit gate tests: inside it the work tree holds what git would check
out of the index, and afterwards the user's files are back byte for byte, in the cases
pre-commit's staged_files_only.py knows: line-ending conversion, intent-to-add files,
submodules."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgit.gitdoor import Repo, open_repo
from tests.conftest import git


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "kernel.py").write_bytes(b"a\nb\nc\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def checkout_bytes(root: Path, path: str, tmp_path: Path) -> bytes:
    """What git writes for PATH's staged version when it checks it out."""
    folder = tmp_path / "checkout"
    git(root, "checkout-index", "-f", f"--prefix={folder}/", "--", path)
    return (folder / path).read_bytes()


def inside(repo: Repo, *paths: str) -> dict[str, bytes | None]:
    with repo.staged_snapshot():
        return {
            p: (repo.root / p).read_bytes() if (repo.root / p).exists() else None for p in paths
        }


def no_patch_left(repo: Repo) -> bool:
    return not list((repo.common_dir / "kgit" / "patches").glob("*"))


def test_unstaged_lines_are_set_aside_and_put_back(root: Path) -> None:
    kernel = root / "kernel.py"
    kernel.write_bytes(b"a\nB\nc\n")
    git(root, "add", "kernel.py")
    kernel.write_bytes(b"a\nB\nC\n")
    repo = open_repo(root)
    assert inside(repo, "kernel.py") == {"kernel.py": b"a\nB\nc\n"}
    assert kernel.read_bytes() == b"a\nB\nC\n" and no_patch_left(repo)


def test_autocrlf_input_gates_the_lf_bytes_git_checks_out(root: Path, tmp_path: Path) -> None:
    # The editor wrote CRLF; with core.autocrlf=input git stores and checks out LF, and
    # `git diff` shows nothing, so setting the unstaged edits aside alone leaves CRLF in place.
    git(root, "config", "core.autocrlf", "input")
    kernel = root / "kernel.py"
    kernel.write_bytes(b"a\r\nB\r\nc\r\n")
    git(root, "add", "kernel.py")
    repo = open_repo(root)
    staged = checkout_bytes(root, "kernel.py", tmp_path)
    assert staged == b"a\nB\nc\n"
    assert inside(repo, "kernel.py") == {"kernel.py": staged}
    assert kernel.read_bytes() == b"a\r\nB\r\nc\r\n" and no_patch_left(repo)


def test_autocrlf_true_gates_the_crlf_bytes_git_checks_out(root: Path, tmp_path: Path) -> None:
    # A checkout made before core.autocrlf=true keeps LF files that git would now write as CRLF.
    git(root, "config", "core.autocrlf", "true")
    kernel = root / "kernel.py"
    kernel.write_bytes(b"a\nB\nc\n")
    git(root, "add", "kernel.py")
    kernel.write_bytes(b"a\nB\nC\n")  # and an unstaged edit on top
    repo = open_repo(root)
    assert inside(repo, "kernel.py") == {"kernel.py": checkout_bytes(root, "kernel.py", tmp_path)}
    assert kernel.read_bytes() == b"a\nB\nC\n" and no_patch_left(repo)


def test_an_intent_to_add_file_is_not_in_the_snapshot_and_stays_intended(root: Path) -> None:
    kernel = root / "kernel.py"
    kernel.write_bytes(b"a\nB\nc\n")
    git(root, "add", "kernel.py")
    kernel.write_bytes(b"a\nB\nC\n")
    (root / "new.py").write_bytes(b"new\n")
    git(root, "add", "-N", "new.py")
    repo = open_repo(root)
    seen = inside(repo, "kernel.py", "new.py")
    assert seen["kernel.py"] == b"a\nB\nc\n"
    assert seen["new.py"] == b"new\n"  # left in place like any file the commit does not hold
    assert kernel.read_bytes() == b"a\nB\nC\n" and (root / "new.py").read_bytes() == b"new\n"
    assert git(root, "diff", "--name-only", "--diff-filter=A") == "new.py"  # still intent-to-add
    assert no_patch_left(repo)


def test_a_submodule_is_neither_touched_nor_copied(root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    for text in ("one\n", "two\n"):
        (other / "s.txt").write_text(text)
        git(other, "add", "-A")
        git(other, "commit", "-q", "-m", text)
    git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(other), "sub")
    git(root, "commit", "-q", "-m", "submodule")
    git(root / "sub", "checkout", "-q", "HEAD~1")  # an unstaged gitlink change
    (root / "sub" / "s.txt").write_text("dirty\n")  # and a dirty submodule
    kernel = root / "kernel.py"
    kernel.write_bytes(b"a\nB\nc\n")
    git(root, "add", "kernel.py")
    kernel.write_bytes(b"a\nB\nC\n")
    repo = open_repo(root)
    seen = inside(repo, "kernel.py", "sub/s.txt")
    assert seen == {"kernel.py": b"a\nB\nc\n", "sub/s.txt": b"dirty\n"}
    assert kernel.read_bytes() == b"a\nB\nC\n" and (root / "sub" / "s.txt").read_text() == "dirty\n"
    assert git(root / "sub", "rev-parse", "HEAD") == git(other, "rev-parse", "HEAD~1")
    assert no_patch_left(repo)
