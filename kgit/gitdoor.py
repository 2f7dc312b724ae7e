"""The one door to git: refs, objects, notes, branches and the write lock.

Every other module speaks in campaign terms and calls the small typed functions here.

Why `git` plumbing through `subprocess` rather than GitPython: importing GitPython costs
110-150 ms on the CI machine (half of the 0.3 s budget of `kgit status`), it keeps `git cat-file`
processes alive until `Repo.close()`, and its own README says it is in maintenance mode and unsuited
to long-running processes. kgit needs byte-exact stdin/stdout for notes and NUL-separated output,
which plain `subprocess` gives directly. Each call is logged as a user could type it
(`KGIT_TRACE=1`).
"""

from __future__ import annotations

import fcntl
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kgit.errors import GitError, KgitError

ZERO_SHA = "0" * 40

# Variables a hook inherits from `git commit` that would point a spawned git at the wrong
# repository or index (pytest's temp repos, a harness that calls git).
_GIT_LOCAL_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_PREFIX",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_QUARANTINE_PATH",
    "GIT_REFLOG_ACTION",
    "GIT_EDITOR",
    "GIT_EXEC_PATH",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_CONFIG_PARAMETERS",
)


# Kill-point testing (tests/engine/test_killpoints.py): `KGIT_TEST_KILL_AT_GIT_CALL=N` makes this
# process die with `os._exit(137)` right before its Nth git call, `N:after` right after it, as a
# SIGKILL or a power cut would. Read here because every git call of kgit goes through `_spawn`;
# stripped from the environment of anything kgit spawns, so only kgit itself is armed.
KILL_ENV = "KGIT_TEST_KILL_AT_GIT_CALL"
_calls = 0


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for anything kgit spawns: no git variables inherited from a hook."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCAL_ENV and k != KILL_ENV}
    if extra:
        env.update(extra)
    return env


def _trace(args: Sequence[str], cwd: Path) -> None:
    if os.environ.get("KGIT_TRACE"):
        print(f"+ (cd {shlex.quote(str(cwd))} && {shlex.join(args)})", file=sys.stderr)


def _kill_point() -> tuple[int, bool] | None:
    armed = os.environ.get(KILL_ENV)
    if not armed:
        return None
    number, _, when = armed.partition(":")
    return int(number), when == "after"


def _spawn(
    cmd: Sequence[str],
    cwd: Path,
    input: bytes | None,
    env: Mapping[str, str],
    timeout: float | None = None,
    detached: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """Run one git command: the single runner of every git call kgit makes. TIMEOUT (seconds)
    only for calls that may wait on a network (raises subprocess.TimeoutExpired); DETACHED runs
    it without the terminal, so that ssh cannot stop to ask on it (a hint is not worth a
    prompt)."""
    global _calls
    _calls += 1
    kill = _kill_point()
    if kill == (_calls, False):
        os._exit(137)
    _trace(cmd, cwd)
    proc = subprocess.run(
        list(cmd),
        cwd=cwd,
        input=input,
        capture_output=True,
        env=dict(env),
        timeout=timeout,
        start_new_session=detached,
    )
    if kill == (_calls, True):
        os._exit(137)
    return proc


@dataclass(frozen=True)
class Repo:
    """A work tree of a git repository. `index_file` is set only inside a commit hook."""

    root: Path
    git_dir: Path
    common_dir: Path
    index_file: str | None = None

    # -- running git ---------------------------------------------------------------------------

    def _run(
        self,
        args: Sequence[str],
        input: bytes | None = None,
        env_extra: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """The one place git runs: clean environment, the hook's index (unless the caller names
        its own, e.g. a private index), every call traced as a user could type it."""
        env = clean_env({"GIT_INDEX_FILE": self.index_file} if self.index_file else None)
        env.update(env_extra or {})
        return _spawn(["git", *args], self.root, input, env)

    def git(
        self,
        *args: str,
        input: bytes | None = None,
        check: bool = True,
        env_extra: Mapping[str, str] | None = None,
    ) -> bytes:
        """Run `git ARGS` in the work tree and return stdout as bytes."""
        proc = self._run(args, input, env_extra)
        if check and proc.returncode != 0:
            raise GitError(
                f"git {args[0]} failed: {proc.stderr.decode(errors='replace').strip()}",
                hint=f"command: {shlex.join(['git', *args])}",
            )
        return proc.stdout

    def text(self, *args: str, check: bool = True) -> str:
        return self.git(*args, check=check).decode().strip()

    def succeeds(self, *args: str) -> bool:
        return self._run(args).returncode == 0

    # -- refs ----------------------------------------------------------------------------------

    def rev_parse(self, rev: str) -> str | None:
        """The full sha of REV, or None when it does not resolve."""
        out = self.git("rev-parse", "-q", "--verify", f"{rev}^{{object}}", check=False)
        sha = out.decode().strip()
        return sha or None

    def update_ref(self, ref: str, new: str, old: str | None, message: str = "kgit") -> None:
        """Compare-and-swap: move REF to NEW only if it still points at OLD (None: must not exist)."""
        expected = old if old is not None else ZERO_SHA
        proc = self._run(["update-ref", "-m", message, ref, new, expected])
        if proc.returncode != 0:
            raise KgitError(
                f"{ref} moved while kgit was updating it",
                hint="another kgit or git process changed it; run the command again",
                details=proc.stderr.decode(errors="replace").strip(),
            )

    def delete_ref(self, ref: str, old: str) -> None:
        self.git("update-ref", "-d", ref, old)

    def refs(self, prefix: str) -> dict[str, str]:
        """All refs under PREFIX, name -> sha."""
        out = self.git("for-each-ref", "--format=%(objectname) %(refname)", prefix)
        result: dict[str, str] = {}
        for line in out.decode().splitlines():
            sha, name = line.split(" ", 1)
            result[name] = sha
        return result

    def checked_out_branches(self) -> set[str]:
        """The branches (full refs) checked out in any work tree of the repository."""
        out = self.git("worktree", "list", "--porcelain", "-z")
        fields = out.decode(errors="replace").split("\0")
        return {f.removeprefix("branch ") for f in fields if f.startswith("branch ")}

    def current_branch(self) -> str | None:
        """The checked-out branch as a full ref, or None on a detached HEAD."""
        out = self.git("symbolic-ref", "-q", "HEAD", check=False).decode().strip()
        return out or None

    # -- objects -------------------------------------------------------------------------------

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

    def read_tree_files(self, treeish: str) -> dict[str, bytes]:
        """Every file of a tree, path -> bytes (small kgit-owned trees only)."""
        shas = {path: sha for path, (_mode, sha) in self.ls_tree(treeish).items()}
        blobs = self.read_blobs(list(shas.values()))
        return {path: blobs[sha] for path, sha in shas.items()}

    def commit_tree(self, tree: str, parents: Sequence[str], message: str) -> str:
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        return self.git(*args, input=message.encode(), env_extra=_KGIT_IDENT).decode().strip()

    def write_tree(self) -> str:
        """The tree of the index (inside a hook: the snapshot being committed)."""
        return self.text("write-tree")

    def tree_of(self, commit: str) -> str:
        return self.text("rev-parse", f"{commit}^{{tree}}")

    def path_blobs(self, commit: str, paths: Sequence[str]) -> dict[str, str | None]:
        """Blob sha of each path at COMMIT (None when absent)."""
        result: dict[str, str | None] = dict.fromkeys(paths)
        if paths:
            for path, (_mode, sha) in self.ls_tree(commit, paths, recursive=False).items():
                result[path] = sha
        return result

    def rev_list(self, tip: str, *, first_parent: bool = False) -> list[str]:
        """The commits reachable from TIP, newest first."""
        args = ["rev-list", *(["--first-parent"] if first_parent else []), tip]
        return self.text(*args).split()

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return self.succeeds("merge-base", "--is-ancestor", ancestor, descendant)

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

    def update_refs(self, moves: Sequence[tuple[str, str, str | None]], message: str) -> None:
        """Compare-and-swap of several refs in one transaction: each (REF, NEW, OLD) moves only
        if every REF still points at its OLD (None: must not exist), else none moves. One git
        process, so a kill leaves all of them moved or none."""
        lines = "".join(f"update {ref} {new} {old or ZERO_SHA}\n" for ref, new, old in moves)
        proc = self._run(["update-ref", "-m", message, "--stdin"], lines.encode())
        if proc.returncode != 0:
            raise KgitError(
                f"{', '.join(ref for ref, _, _ in moves)} moved while kgit was updating them",
                hint="another kgit or git process changed them; run the command again",
                details=proc.stderr.decode(errors="replace").strip(),
            )

    def delete_refs(self, refs: Mapping[str, str], message: str) -> None:
        """Delete every REF that still points at its sha, in one transaction (all or none)."""
        lines = "".join(f"delete {ref} {sha}\n" for ref, sha in refs.items())
        proc = self._run(["update-ref", "-m", message, "--stdin"], lines.encode())
        if proc.returncode != 0:
            raise KgitError(
                "refs moved while kgit was deleting them",
                hint="another kgit or git process changed them; run the command again",
                details=proc.stderr.decode(errors="replace").strip(),
            )

    # -- notes ---------------------------------------------------------------------------------

    def note_write(self, notes_ref: str, target: str, data: bytes) -> None:
        """Attach DATA byte-exact to TARGET. `notes add -m/-F` would strip CRs and trailing blanks,
        so the blob is written first and attached with `-C`. Callers hold `write_lock()`: two
        concurrent `git notes` writers on one ref silently lose notes."""
        blob = self.write_blob(data)
        self.git(
            "notes", f"--ref={notes_ref}", "add", "-f", "-C", blob, target, env_extra=_KGIT_IDENT
        )

    def notes_commit(self, notes_ref: str, notes: Mapping[str, str]) -> tuple[str | None, str]:
        """(old, new): a commit of NOTES_REF's notes with NOTES (target -> blob sha) attached,
        built with plumbing and not yet on the ref, so that it can move in one transaction with
        other refs (`update_refs`). A target's existing note is replaced where it lies; a new
        one follows the tree's fan-out (`ab/cdef...` once git has fanned it out), as `git
        notes` reads either and rewrites its own layout on its next write."""
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
        return old, self.commit_tree(tree, [old] if old else [], message)

    def note_read(self, notes_ref: str, target: str) -> bytes | None:
        out = self.git("notes", f"--ref={notes_ref}", "list", target, check=False).decode().strip()
        return self.read_blob(out) if out else None

    def notes_list(self, notes_ref: str) -> dict[str, str]:
        """Annotated object sha -> note blob sha, for every note under NOTES_REF."""
        result: dict[str, str] = {}
        # A notes ref that does not exist yet lists nothing (and exits non-zero).
        for line in self.text("notes", f"--ref={notes_ref}", "list", check=False).splitlines():
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
        """A notes commit holding exactly NOTES (target -> blob), on PARENTS: a merge of two
        notes histories keeps both reachable. The tree is flat; `git notes` reads any fan-out
        and rewrites its own layout on its next write."""
        entries = "".join(f"100644 blob {blob}\t{target}\0" for target, blob in notes.items())
        tree = self.git("mktree", "-z", input=entries.encode()).decode().strip()
        return self.commit_tree(tree, parents, message)

    # -- remotes -------------------------------------------------------------------------------

    def remote_names(self) -> list[str]:
        return self.text("remote").split()

    def upstream_remote(self) -> str | None:
        """The remote of the checked-out branch's upstream (None: no upstream, or a local one)."""
        branch = self.current_branch()
        if branch is None:
            return None
        found = self.config_get(f"branch.{branch.removeprefix('refs/heads/')}.remote")
        return found[-1] if found and found[-1] != "." else None

    def fetch(self, remote: str, refspecs: Sequence[str]) -> None:
        """`git fetch --prune` of REFSPECS only (no tags, no submodules, no FETCH_HEAD)."""
        self.git(
            "fetch", "--quiet", "--prune", "--no-tags", "--no-write-fetch-head",
            "--recurse-submodules=no", remote, *refspecs,
        )  # fmt: skip

    def ls_remote(
        self, remote: str, patterns: Sequence[str], timeout: float
    ) -> dict[str, str] | None:
        """Ref -> sha of REMOTE's refs matching PATTERNS, or None when the remote cannot be asked
        within TIMEOUT seconds without a prompt (for hints: never worth a hang)."""
        try:
            proc = _spawn(
                ["git", "ls-remote", remote, *patterns],
                self.root,
                None,
                clean_env({"GIT_TERMINAL_PROMPT": "0"}),
                timeout=timeout,
                detached=True,
            )
        except subprocess.TimeoutExpired:
            return None
        if proc.returncode != 0:
            return None
        found: dict[str, str] = {}
        for line in proc.stdout.decode(errors="replace").splitlines():
            sha, _, ref = line.partition("\t")
            found[ref] = sha
        return found

    def push(
        self, remote: str, updates: Sequence[RefPush], *, atomic: bool = True
    ) -> tuple[bool, list[PushedRef], str]:
        """Push each update as a compare-and-swap: REF moves to NEW (None: deleted) only if it is
        still at EXPECT on the remote (None: must not exist), `--force-with-lease=REF:EXPECT`.
        Returns (all pushed, git's word on each ref, stderr)."""
        args = ["push", "--porcelain", "--no-recurse-submodules", *(["--atomic"] if atomic else [])]
        for update in updates:
            args.append(f"--force-with-lease={update.ref}:{update.expect or ''}")
        args += [remote, *(f"{u.new or ''}:{u.ref}" for u in updates)]
        proc = self._run(args)
        results = []
        for line in proc.stdout.decode(errors="replace").splitlines():
            flag, sep, rest = line.partition("\t")
            if not sep or len(flag) != 1:
                continue
            spec, _, summary = rest.partition("\t")
            results.append(PushedRef(spec.rpartition(":")[2], flag != "!", summary))
        return proc.returncode == 0, results, proc.stderr.decode(errors="replace").strip()

    def merge_base(self, first: str, second: str) -> str | None:
        """A best common ancestor of two commits, None when their histories are unrelated."""
        out = self.git("merge-base", first, second, check=False).decode().strip()
        return out or None

    def move_work_tree(self, old: str, new: str) -> None:
        """Bring this work tree's index and files from commit OLD to commit NEW (its branch ref
        was just moved from OLD to NEW): a two-tree `read-tree -m -u`, which refuses to overwrite
        local changes."""
        self.git("read-tree", "-m", "-u", old, new)

    # -- work tree -----------------------------------------------------------------------------

    def dirty_paths(self) -> list[str]:
        """Tracked files with staged or unstaged changes (untracked files are the user's)."""
        out = self.git("status", "--porcelain=v1", "-z", "--untracked-files=no")
        paths = []
        for entry in out.split(b"\0"):
            if len(entry) > 3:
                paths.append(entry[3:].decode())
        return paths

    def unclean_paths(self) -> list[str]:
        """Tracked files that differ from HEAD, and untracked files git does not ignore."""
        out = self.git("status", "--porcelain=v1", "-z", "--untracked-files=all")
        return [entry[3:].decode() for entry in out.split(b"\0") if len(entry) > 3]

    def switch(self, branch_ref: str) -> None:
        """Check out a local branch (full ref) in this work tree."""
        self.git("checkout", "-q", branch_ref.removeprefix("refs/heads/"))

    def detach(self, commit: str) -> None:
        """Check out COMMIT without a branch in this work tree."""
        self.git("checkout", "-q", "--detach", commit)

    def add_worktree(self, path: Path, branch_ref: str) -> None:
        """A new linked work tree at PATH with the local branch BRANCH_REF checked out."""
        self.git("worktree", "prune")
        self.git("worktree", "add", "-q", str(path), branch_ref.removeprefix("refs/heads/"))

    def config_get(self, key: str) -> list[str]:
        out = self.git("config", "--get-all", key, check=False).decode()
        return [line for line in out.splitlines() if line]

    def config_local(self, key: str) -> str | None:
        """KEY from this repository's own config file only (not the user's global one, not an
        include, not the environment): what git never transfers between clones."""
        out = self.git("config", "--local", "--get", key, check=False).decode().strip()
        return out or None

    def config_set_local(self, key: str, value: str) -> None:
        self.git("config", "--local", "--replace-all", key, value)

    def config_add(self, key: str, value: str) -> None:
        if value not in self.config_get(key):
            self.git("config", "--add", key, value)

    def hooks_dir(self) -> Path:
        """Where git looks for hooks (honours core.hooksPath)."""
        return (self.root / self.text("rev-parse", "--git-path", "hooks")).resolve()

    def linked_tree(self) -> str | None:
        """This work tree's name under .git/worktrees/ when it is a linked one (git worktree
        add), None for the main work tree."""
        return self.git_dir.name if self.git_dir.resolve() != self.common_dir.resolve() else None

    def kgit_dir(self) -> Path:
        """kgit's scratch space: locks, crash logs, saved patches. Shared by all work trees."""
        path = self.common_dir / "kgit"
        path.mkdir(parents=True, exist_ok=True)
        return path

    @contextmanager
    def write_lock(self) -> Iterator[None]:
        """Serialize kgit's writes across processes and work trees of this repository."""
        with open(self.kgit_dir() / "lock", "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass(frozen=True)
class RefPush:
    """One ref of a push: REF to NEW (None: delete it) if the remote still has EXPECT there."""

    ref: str
    new: str | None
    expect: str | None


@dataclass(frozen=True)
class PushedRef:
    """What `git push --porcelain` said of one ref."""

    ref: str
    ok: bool
    summary: str  # git's words: "[new branch]", "[rejected] (stale info)", "(fetch first)"...


# kgit's own commits (campaign records, notes) get a fixed identity so that they work in a
# repository with no user.name configured, and so they are recognisable as kgit's.
_KGIT_IDENT = {
    "GIT_AUTHOR_NAME": "kgit",
    "GIT_AUTHOR_EMAIL": "kgit@localhost",
    "GIT_COMMITTER_NAME": "kgit",
    "GIT_COMMITTER_EMAIL": "kgit@localhost",
}


def open_repo(start: Path | None = None, *, index_file: str | None = None) -> Repo:
    """The repository containing START (default: the current directory)."""
    cwd = (start or Path.cwd()).resolve()
    cmd = ["git", "rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"]
    proc = _spawn(cmd, cwd, None, clean_env())
    if proc.returncode != 0:
        raise KgitError(
            f"{cwd} is not inside a git work tree",
            hint="run kgit from the kernel repository (git init first if it has none)",
        )
    top, git_dir, common = proc.stdout.decode().splitlines()[:3]
    # --git-common-dir is relative to the current directory, not to the top of the work tree.
    common_path = Path(common) if os.path.isabs(common) else cwd / common
    return Repo(Path(top), Path(git_dir), common_path.resolve(), index_file)
