"""The staged snapshot a commit hook tests: the work tree made to hold what git would check out
of the index, then given back to the user byte for byte.

The cases are those of pre-commit's staged_files_only.py, with one step further on line endings:
- unstaged edits are set aside as a patch under .git/kgit/patches/ (a kill leaves it there, and
  `kgit status` names it), the staged version is checked out, the patch goes back on after;
- line endings: with core.autocrlf or `text`/`eol` attributes, git checks files out converted,
  and a file that differs from its checkout only by its line endings shows no diff at all
  (core.autocrlf=input with a CRLF editor; a checkout made before core.autocrlf=true). Those
  files get the bytes git would write, and every file touched gets its own bytes back after;
- intent-to-add files (`git add -N`) are in no commit: they leave the index for the gate, stay
  in the work tree like any untracked file, and are marked intent-to-add again after;
- submodules (gitlinks) are neither diffed, nor checked out, nor copied: a commit records only
  their commit, which the gate cannot change.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from kgit.gitdoor.worktree import WorkTree

_REGULAR = ("100644", "100755")  # not a symlink (120000) nor a gitlink (160000)
_TEXT_EOLS = ("lf", "crlf", "mixed", "none")  # `git ls-files --eol`; "-text" is binary


class Snapshot(WorkTree):
    """The staged snapshot (see the module's docstring)."""

    @contextmanager
    def staged_snapshot(self) -> Iterator[None]:
        """Make the work tree hold exactly what is being committed, for the block's duration."""
        with self._intent_to_add_cleared(), self._unstaged_cleared():
            yield

    def intent_to_add_paths(self) -> list[str]:
        out = self.git(
            "diff", "--no-ext-diff", "--ignore-submodules", "--diff-filter=A", "--name-only", "-z"
        )
        return _paths(out)

    @contextmanager
    def _intent_to_add_cleared(self) -> Iterator[None]:
        paths = self.intent_to_add_paths()
        if not paths:
            yield
            return
        listed = b"\0".join(p.encode() for p in paths)
        pathspec = ("--pathspec-from-file=-", "--pathspec-file-nul")
        self.git("rm", "-q", "--cached", *pathspec, input=listed)
        try:
            yield
        finally:
            self.git("add", "--intent-to-add", *pathspec, input=listed)

    @contextmanager
    def _unstaged_cleared(self) -> Iterator[None]:
        diff = ("--ignore-submodules", "--no-color", "--no-ext-diff")
        patch = self.git("diff", "--binary", *diff)
        edited = _paths(self.git("diff", "--name-only", "-z", *diff)) if patch.strip() else []
        import tempfile  # here and below: only a commit's gate runs this, not the read path

        with tempfile.TemporaryDirectory(prefix="kgit-checkout-") as tmp:
            converted = self._converted_checkouts(Path(tmp), set(edited))
            if not patch.strip() and not converted:
                yield
                return
            stamp = f"unstaged-{time.strftime('%Y%m%d-%H%M%S')}-{time.monotonic_ns()}"
            folder = self.kgit_dir() / "patches"
            folder.mkdir(exist_ok=True)
            saved = _save_files(self.root, [*edited, *converted], folder / f"{stamp}.files")
            patch_path = folder / f"{stamp}.patch" if patch.strip() else None
            if patch_path is not None:
                patch_path.write_bytes(patch)
                self.restore_from_index()
            for path, checkout in converted.items():
                (self.root / path).write_bytes(checkout.read_bytes())
        try:
            yield
        finally:
            self._give_back(patch_path, folder / f"{stamp}.files", saved)

    def _converted_checkouts(self, tmp: Path, edited: set[str]) -> dict[str, Path]:
        """path -> its checkout (written under TMP) for each text file outside EDITED whose
        bytes differ from what git would check out: only line-ending conversion does that."""
        autocrlf = (self.config_get("core.autocrlf") or ["false"])[-1].lower()
        wanted = []
        for entry in _paths(self.git("ls-files", "--stage", "--eol", "-z")):
            info, eol, path = entry.split("\t", 2)
            mode, _sha, stage = info.split(" ")
            index, work, attr = (field.split("/", 1)[1] for field in eol.split())
            if mode not in _REGULAR or stage != "0" or path in edited:
                continue
            text = index in _TEXT_EOLS and work in _TEXT_EOLS
            if text and (autocrlf == "true" or attr or index != work):
                wanted.append(path)
        if not wanted:
            return {}
        listed = b"\0".join(p.encode() for p in wanted)
        self.git("checkout-index", "-f", f"--prefix={tmp}/", "-z", "--stdin", input=listed)
        return {
            path: tmp / path
            for path in wanted
            if (tmp / path).read_bytes() != (self.root / path).read_bytes()
        }

    def _give_back(self, patch: Path | None, folder: Path, saved: dict[str, Path]) -> None:
        """Put the unstaged edits back (modes, deletions, symlinks: through the patch), then each
        saved file's own bytes (the patch applied over the checkout's line endings)."""
        if patch is not None and not self.succeeds("apply", "--whitespace=nowarn", str(patch)):
            print(
                f"kgit: could not re-apply your unstaged changes; they are saved in {patch} "
                f"(and your files as they were, in {folder})\nhint: git apply {patch}",
                file=sys.stderr,
            )
            return
        for path, copy in saved.items():
            target = self.root / path
            if not target.is_file() or target.read_bytes() != copy.read_bytes():
                target.write_bytes(copy.read_bytes())
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        if patch is not None:
            patch.unlink()


def _save_files(root: Path, paths: Sequence[str], folder: Path) -> dict[str, Path]:
    """A copy under FOLDER of each regular file of PATHS: what the user had, byte for byte."""
    import shutil

    saved = {}
    for path in paths:
        source = root / path
        if source.is_file() and not source.is_symlink():
            saved[path] = folder / path
            saved[path].parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, saved[path])
    return saved


def _paths(out: bytes) -> list[str]:
    return [p.decode() for p in out.split(b"\0") if p]
