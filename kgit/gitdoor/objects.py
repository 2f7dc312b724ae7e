"""Objects: blobs and trees read and written byte-exact, trees built in a private index,
commits made with plumbing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from kgit.errors import GitError
from kgit.gitdoor.runner import KGIT_IDENT, ZERO_SHA, GitCore


class Objects(GitCore):
    """Blobs, trees and commits."""

    def write_blob(self, data: bytes) -> str:
        """Store DATA byte-exact (no CR or whitespace rewriting) and return its sha."""
        return self.git("hash-object", "-w", "--stdin", input=data).decode().strip()

    def read_blob(self, sha: str) -> bytes:
        return self.git("cat-file", "blob", sha)

    def read_objects(self, names: Sequence[str]) -> list[tuple[str, bytes] | None]:
        """(sha, content) of each object name (a sha, `ref`, `rev:path`), None where missing,
        through one `git cat-file --batch` process."""
        if not names:
            return []
        out = self.git("cat-file", "--batch", input="".join(f"{n}\n" for n in names).encode())
        objects: list[tuple[str, bytes] | None] = []
        pos = 0
        for _ in names:
            end = out.index(b"\n", pos)
            header = out[pos:end].decode().split()
            if len(header) < 3 or header[-1] == "missing":
                objects.append(None)
                pos = end + 1
                continue
            size = int(header[2])
            objects.append((header[0], out[end + 1 : end + 1 + size]))
            pos = end + 1 + size + 1
        return objects

    def read_blobs(self, shas: Sequence[str]) -> dict[str, bytes]:
        """Many blobs through one `git cat-file --batch` process."""
        blobs: dict[str, bytes] = {}
        for sha, found in zip(shas, self.read_objects(shas), strict=True):
            if found is None:
                raise GitError(f"object {sha} is missing from the repository")
            blobs[sha] = found[1]
        return blobs

    @staticmethod
    def parse_tree(data: bytes) -> dict[str, tuple[str, str]]:
        """name -> (mode, sha) of a raw tree object (as `cat-file --batch` returns it): a
        listing read in the same process as other objects, with no `ls-tree` of its own."""
        entries: dict[str, tuple[str, str]] = {}
        pos = 0
        while pos < len(data):
            space, nul = data.index(b" ", pos), data.index(b"\0", pos)
            sha = data[nul + 1 : nul + 21].hex()
            entries[data[space + 1 : nul].decode()] = (data[pos:space].decode(), sha)
            pos = nul + 21
        return entries

    def ls_tree(
        self, treeish: str, paths: Sequence[str] = (), *, recursive: bool = True
    ) -> dict[str, tuple[str, str]]:
        """path -> (mode, sha) of the entries of TREEISH (limited to PATHS when given)."""
        args = ["ls-tree", "-z", *(["-r"] if recursive else []), treeish]
        out = self.git(*args, "--", *paths) if paths else self.git(*args)
        entries: dict[str, tuple[str, str]] = {}
        for entry in out.split(b"\0"):
            if entry:
                meta, path = entry.split(b"\t", 1)
                mode, _kind, sha = meta.decode().split()
                entries[path.decode()] = (mode, sha)
        return entries

    def symlinks(self, treeish: str, paths: Sequence[str] = ()) -> dict[str, str]:
        """path -> target of the symbolic links (mode 120000) of TREEISH, under PATHS if given."""
        links = {
            p: sha for p, (mode, sha) in self.ls_tree(treeish, paths).items() if mode == "120000"
        }
        blobs = self.read_blobs(list(links.values()))
        return {path: blobs[sha].decode(errors="replace") for path, sha in links.items()}

    def read_tree_files(self, treeish: str) -> dict[str, bytes]:
        """Every file of a tree, path -> bytes (small kgit-owned trees only)."""
        shas = {path: sha for path, (_mode, sha) in self.ls_tree(treeish).items()}
        blobs = self.read_blobs(list(shas.values()))
        return {path: blobs[sha] for path, sha in shas.items()}

    def make_tree(self, files: Mapping[str, bytes]) -> str:
        """A tree holding FILES (nested paths allowed), built with mktree."""
        entries: dict[str, dict[str, bytes]] = {}
        leaves: list[str] = []
        for path, data in files.items():
            head, _, rest = path.partition("/")
            if rest:
                entries.setdefault(head, {})[rest] = data
            else:
                leaves.append(f"100644 blob {self.write_blob(data)}\t{head}")
        for name, sub in entries.items():
            leaves.append(f"040000 tree {self.make_tree(sub)}\t{name}")
        return self.git("mktree", "-z", input="\0".join(leaves).encode() + b"\0").decode().strip()

    def write_tree(self) -> str:
        """The tree of the index (inside a hook: the snapshot being committed)."""
        return self.git_text("write-tree")

    def tree_of(self, commit: str) -> str:
        return self.git_text("rev-parse", f"{commit}^{{tree}}")

    def path_blobs(self, commit: str, paths: Sequence[str]) -> dict[str, str | None]:
        """Blob sha of each path at COMMIT (None when absent)."""
        result: dict[str, str | None] = dict.fromkeys(paths)
        if paths:
            for path, (_mode, sha) in self.ls_tree(commit, paths, recursive=False).items():
                result[path] = sha
        return result

    def tree_with(self, commit: str, files: Mapping[str, bytes | str | None]) -> str:
        """The tree of COMMIT with FILES replaced: bytes are new contents, a str is the sha of a
        blob already stored, None removes the path. Built in a private index, so the user's
        index and work tree are never touched, with one `update-index` for all the paths (a
        campaign record holds thousands of note entries: nothing per unchanged file)."""
        import tempfile

        listed = self.ls_tree(commit, list(files)) if files else {}
        modes = {path: mode for path, (mode, _sha) in listed.items()}
        lines = []
        for path, data in files.items():
            if data is None:
                lines.append(f"0 {ZERO_SHA}\t{path}")
                continue
            blob = data if isinstance(data, str) else self.write_blob(data)
            lines.append(f"{modes.get(path, '100644')} {blob}\t{path}")
        with tempfile.TemporaryDirectory(prefix="kgit-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            self.git("read-tree", commit, env_extra=env)
            if lines:
                self._index_info(lines, env)
            return self.git("write-tree", env_extra=env).decode().strip()

    def _index_info(self, lines: Sequence[str], env: Mapping[str, str]) -> None:
        """`update-index --index-info` of LINES into the index ENV names. It skips a path git
        refuses (`.git/config`, `../x`) with a warning and exit 0, where `--cacheinfo` fails:
        that warning is an error here, or a refused path would silently vanish from a tree."""
        stdin = "".join(f"{line}\0" for line in lines).encode()
        proc = self._run(["update-index", "-z", "--index-info"], stdin, env)
        refused = proc.stderr.decode(errors="replace").strip()
        if proc.returncode != 0 or refused:
            raise GitError(
                f"git update-index refused a path: {refused}",
                hint="command: git update-index -z --index-info",
            )

    def commit_tree(
        self,
        tree: str,
        parents: Sequence[str],
        message: str,
        author: tuple[str, str, str] | None = None,
    ) -> str:
        """A commit of TREE on PARENTS, committed by kgit; AUTHOR (name, email, date as `git log
        --date=raw` gives it) keeps a round author's name on a commit kgit rewrites."""
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        ident = dict(KGIT_IDENT)
        if author is not None:
            name, email, date = author
            ident |= {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": date}
        return self.git(*args, input=message.encode(), env_extra=ident).decode().strip()
