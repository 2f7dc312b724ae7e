"""History: what lies between commits (ancestry, changed paths, diffs, messages)."""

from __future__ import annotations

from collections.abc import Sequence

from kgit.gitdoor.runner import GitCore


class History(GitCore):
    """The history between commits."""

    def rev_list(self, tip: str, *, first_parent: bool = False) -> list[str]:
        """The commits reachable from TIP, newest first."""
        args = ["rev-list", *(["--first-parent"] if first_parent else []), tip]
        return self.text(*args).split()

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return self.succeeds("merge-base", "--is-ancestor", ancestor, descendant)

    def merge_base(self, first: str, second: str) -> str | None:
        """A best common ancestor of two commits, None when their histories are unrelated."""
        out = self.git("merge-base", first, second, check=False).decode().strip()
        return out or None

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
