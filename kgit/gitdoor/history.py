"""History: what lies between commits (ancestry, changed paths, diffs, messages)."""

from __future__ import annotations

from collections.abc import Sequence

from kgit.gitdoor.runner import GitCore


class History(GitCore):
    """The history between commits."""

    def rev_list(self, tip: str, *, first_parent: bool = False) -> list[str]:
        """The commits reachable from TIP, newest first."""
        args = ["rev-list", *(["--first-parent"] if first_parent else []), tip]
        return self.git_text(*args).split()

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return self.succeeds("merge-base", "--is-ancestor", ancestor, descendant)

    def heads_of(self, commits: Sequence[str]) -> list[str]:
        """The COMMITS that no other of them leads to (`git merge-base --independent`)."""
        if len(commits) < 2:
            return list(commits)
        return self.git_text("merge-base", "--independent", *commits).split()

    def merge_base(self, first: str, second: str) -> str | None:
        """A best common ancestor of two commits, None when their histories are unrelated."""
        out = self.git("merge-base", first, second, check=False).decode().strip()
        return out or None

    def subjects(self, old: str, new: str, *, first_parent: bool = False) -> list[str]:
        """The subject line of each commit in OLD..NEW, newest first."""
        args = ["log", *(["--first-parent"] if first_parent else []), "-z", "--format=%s"]
        out = self.git(*args, f"{old}..{new}")
        return [s.decode(errors="replace") for s in out.split(b"\0") if s]

    def commits_touching(self, rev: str, path: str, *, limit: int | None = None) -> list[str]:
        """The commits reachable from REV that changed PATH, newest first (the LIMIT newest)."""
        count = [f"-{limit}"] if limit is not None else []
        return self.git_text("log", *count, "--format=%H", rev, "--", path).split()

    def commit_authors(self, shas: Sequence[str]) -> dict[str, tuple[str, str, str]]:
        """sha -> (name, email, raw date) of each commit's author, through one `git log
        --no-walk` process."""
        if not shas:
            return {}
        out = self.git(
            "log", "--no-walk=unsorted", "--stdin", "-z", "--date=raw",
            "--format=%H%x01%an%x01%ae%x01%ad",
            input="".join(f"{sha}\n" for sha in shas).encode(),
        )  # fmt: skip
        authors = {}
        for entry in out.decode(errors="replace").split("\0"):
            if entry.strip():
                sha, name, email, date = entry.strip().split("\x01")
                authors[sha] = (name, email, date)
        return authors

    def changed_paths(self, old: str, new: str) -> list[str]:
        out = self.git("diff", "--name-only", "-z", "--no-renames", old, new)
        return [p.decode() for p in out.split(b"\0") if p]

    def diffstats(
        self, pairs: Sequence[tuple[str, str]], paths: Sequence[str] = ()
    ) -> dict[str, str]:
        """`git diff --stat OLD NEW` of many (old, new) commit pairs through one `diff-tree
        --stdin` process, keyed by NEW (each NEW once); an empty diff gives ''."""
        if not pairs:
            return {}
        lines = "".join(f"{new} {old}\n" for old, new in pairs)
        out = self.git(
            "diff-tree", "--stdin", "--stat=100", "--no-renames", "--", *paths, input=lines.encode()
        )
        stats: dict[str, list[str]] = {new: [] for _, new in pairs}
        current: list[str] | None = None
        for line in out.decode(errors="replace").splitlines():
            if len(line) == 40 and not line.startswith(" "):  # diff-tree's header: NEW's sha
                current = stats.get(line)
            elif current is not None and line:
                current.append(line)
        return {new: "\n".join(stat) for new, stat in stats.items()}

    def diff_text(self, old: str, new: str, context: int = 0) -> str:
        """The unified diff OLD..NEW (no colour, no external diff driver, no renames)."""
        out = self.git(
            "diff", f"-U{context}", "--no-color", "--no-ext-diff", "--no-renames", old, new
        )
        return out.decode(errors="replace")

    def commit_messages(self, shas: Sequence[str]) -> dict[str, str]:
        """The full message of each commit, through one `git log --no-walk` process."""
        if not shas:
            return {}
        out = self.git(
            "log", "--no-walk=unsorted", "--stdin", "-z", "--format=%H%n%B",
            input="".join(f"{sha}\n" for sha in dict.fromkeys(shas)).encode(),
        )  # fmt: skip
        messages: dict[str, str] = {}
        for entry in out.decode(errors="replace").split("\0"):
            sha, _, body = entry.partition("\n")
            if sha:
                messages[sha] = body
        return messages
