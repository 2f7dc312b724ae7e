"""Notes: kgit's metadata attached to commits, read and written byte-exact."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from kgit.gitdoor.objects import Objects
from kgit.gitdoor.refs import Refs
from kgit.gitdoor.runner import KGIT_IDENT, ZERO_SHA


class Notes(Refs, Objects):
    """Notes under kgit's notes refs."""

    def note_write(self, notes_ref: str, target: str, data: bytes) -> None:
        """Attach DATA byte-exact to TARGET. `notes add -m/-F` would strip CRs and trailing blanks,
        so the blob is written first and attached with `-C`. Callers hold `write_lock()`: two
        concurrent `git notes` writers on one ref silently lose notes."""
        blob = self.write_blob(data)
        self.git(
            "notes", f"--ref={notes_ref}", "add", "-f", "-C", blob, target, env_extra=KGIT_IDENT
        )

    def notes_commit(self, notes_ref: str, notes: Mapping[str, str]) -> tuple[str | None, str]:
        """(old, new): a commit of NOTES_REF's notes with NOTES (target -> blob sha) attached,
        built with plumbing and not yet on the ref, so that it can move in one transaction with
        other refs (`update_refs`). A target's existing note is replaced where it lies; a new
        one follows the tree's fan-out (`ab/cdef...` once git has fanned it out), as `git
        notes` reads either and rewrites its own layout on its next write.

        The commit has no parent: a notes ref holds one commit, not a history. `git log --all`
        lists every commit a ref reaches, and a chain of notes commits put one "Notes added by
        kgit" there per write; what the notes were is kept by the campaign record (each record
        commit holds the notes as they stood). The new commit is built on OLD's tree, so what
        git or the user added to the ref since kgit's last write stays."""
        import tempfile

        old = self.rev_parse(notes_ref)
        found = self.ls_tree(old, recursive=False) if old else {}
        fanned = any(len(name) == 2 for name in found)
        if fanned:
            assert old is not None
            paths = [p for t in notes for p in (f"{t[:2]}/{t[2:]}", f"{t[:2]}/{t[2:4]}/{t[4:]}")]
            found = {**found, **self.ls_tree(old, [*notes, *paths])}
        lines = []
        for target, blob in notes.items():
            here = [p for p in found if p.replace("/", "") == target]
            lines += [f"0 {ZERO_SHA}\t{path}" for path in here]
            path = here[0] if here else (f"{target[:2]}/{target[2:]}" if fanned else target)
            lines.append(f"100644 {blob}\t{path}")
        with tempfile.TemporaryDirectory(prefix="kgit-notes-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            if old:
                self.git("read-tree", old, env_extra=env)
            self._index_info(lines, env)
            tree = self.git("write-tree", env_extra=env).decode().strip()
        message = "Notes added by kgit\n"
        return old, self.commit_tree(tree, [], message)

    def note_read(self, notes_ref: str, target: str) -> bytes | None:
        out = self.git("notes", f"--ref={notes_ref}", "list", target, check=False).decode().strip()
        return self.read_blob(out) if out else None

    def notes_list(self, notes_ref: str) -> dict[str, str]:
        """Annotated object sha -> note blob sha, for every note under NOTES_REF."""
        result: dict[str, str] = {}
        # A notes ref that does not exist yet lists nothing (and exits non-zero).
        for line in self.git_text("notes", f"--ref={notes_ref}", "list", check=False).splitlines():
            blob, target = line.split()
            result[target] = blob
        return result

    def notes_at(self, commit: str) -> dict[str, str]:
        """Annotated object sha -> note blob sha of the notes commit COMMIT (a ref's value, a
        remote-tracking copy), whatever its fan-out: the path without its slashes is the sha."""
        return {
            path.replace("/", ""): sha
            for path, (_mode, sha) in self.ls_tree(commit).items()
            if len(path.replace("/", "")) == 40
        }

    def notes_tree_commit(
        self, notes: Mapping[str, str], parents: Sequence[str], message: str
    ) -> str:
        """A notes commit holding exactly NOTES (target -> blob), on PARENTS (none, as every
        notes commit of kgit's, or the remote's notes commit whose notes a pull did not take:
        the push that replaces them is then a fast-forward). The tree is flat; `git notes`
        reads any fan-out and rewrites its own layout on its next write."""
        entries = "".join(f"100644 blob {blob}\t{target}\0" for target, blob in notes.items())
        tree = self.git("mktree", "-z", input=entries.encode()).decode().strip()
        return self.commit_tree(tree, parents, message)
