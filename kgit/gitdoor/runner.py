"""The process runner and the core of a repository: the single place a git command runs (a
clean environment, the kill points of the tests, each call traced as a user could type it),
the repository's paths, its config, kgit's scratch space and its write lock."""

from __future__ import annotations

import fcntl
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kgit.errors import GitError, KgitError
from kgit.gitdoor import locks

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
# SIGKILL or a power cut would. Read here because every git call of kgit goes through `spawn`;
# stripped from the environment of anything kgit spawns, so only kgit itself is armed.
KILL_ENV = "KGIT_TEST_KILL_AT_GIT_CALL"
_calls = 0

# kgit's own commits (campaign records, notes) get a fixed identity so that they work in a
# repository with no user.name configured, and so they are recognisable as kgit's.
KGIT_IDENT = {
    "GIT_AUTHOR_NAME": "kgit",
    "GIT_AUTHOR_EMAIL": "kgit@localhost",
    "GIT_COMMITTER_NAME": "kgit",
    "GIT_COMMITTER_EMAIL": "kgit@localhost",
}


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for anything kgit spawns: no git variables inherited from a hook, and
    git's replace refs off: `git replace` of the best line's commit by one with a 4x slower
    kernel made every read of the reference's commit return the slow tree, and a 2x slower
    candidate was accepted at +48.7% (corpus case `replace-best`)."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCAL_ENV and k != KILL_ENV}
    env["GIT_NO_REPLACE_OBJECTS"] = "1"
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


def spawn(
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
class GitCore:
    """A work tree of a git repository. `index_file` is set only inside a commit hook."""

    root: Path
    git_dir: Path
    common_dir: Path
    index_file: str | None = None
    hooks: Path | None = None  # where git looks for hooks, as read when the repository opened
    # HEAD as `git rev-parse --symbolic-full-name HEAD` printed it when the repository opened
    # (a branch's full ref, or "HEAD" when detached); None when it could not (an unborn branch).
    # Not part of the value: the same repository, opened on another branch, is the same.
    head_at_open: str | None = field(default=None, compare=False)

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
        return spawn(["git", *args], self.root, input, env)

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

    def git_text(self, *args: str, check: bool = True) -> str:
        return self.git(*args, check=check).decode().strip()

    def succeeds(self, *args: str) -> bool:
        return self._run(args).returncode == 0

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

    def config_unset_local(self, key: str, value_pattern: str | None = None) -> None:
        """Remove KEY (only its values matching the regex VALUE_PATTERN, when given) from this
        repository's config; nothing to remove is not an error."""
        pattern = [value_pattern] if value_pattern is not None else []
        self.git("config", "--local", "--unset-all", key, *pattern, check=False)

    def hooks_dir(self) -> Path:
        """Where git looks for hooks (honours core.hooksPath)."""
        if self.hooks is not None:
            return self.hooks
        return (self.root / self.git_text("rev-parse", "--git-path", "hooks")).resolve()

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
        """Serialize kgit's writes across processes and work trees of this repository. The
        holder is written into the lock file; a waiter says once whom it waits for, and gives
        up after KGIT_LOCK_TIMEOUT_S (the kernel frees the lock when its holder dies)."""
        with self._held(self.kgit_dir() / "lock", "this repository's write lock"):
            yield

    @contextmanager
    def worktree_lock(self) -> Iterator[None]:
        """One kgit process at a time adds, prunes or removes linked work trees (see
        WorkTree._add); waits and gives up as the write lock does."""
        with self._held(self.kgit_dir() / "worktrees.lock", "this repository's work-tree lock"):
            yield

    @contextmanager
    def _held(self, path: Path, what: str) -> Iterator[None]:
        with open(path, "a+") as handle:
            locks.take(
                handle,
                locks.seconds_from_env(LOCK_TIMEOUT_ENV, LOCK_TIMEOUT_S),
                waiting=lambda: print(
                    f"kgit: waiting for {what}, held by {_holder(path)}",
                    file=sys.stderr,
                    flush=True,
                ),
                give_up=lambda waited: KgitError(
                    f"{what} has been held for {waited:.0f} s by {_holder(path)}",
                    hint="let that command end (a stopped one: `kill -CONT <pid>`, or end it: "
                    f"the lock is freed with its process), or wait longer ({LOCK_TIMEOUT_ENV}"
                    "=SECONDS)",
                ),
                say_after_s=LOCK_SAY_AFTER_S,
            )
            command = shlex.join(sys.argv[1:])[:200]
            locks.write_holder(handle, {"command": command, "since": time.strftime("%H:%M:%S")})
            try:
                yield
            finally:
                handle.truncate(0)
                fcntl.flock(handle, fcntl.LOCK_UN)


LOCK_TIMEOUT_ENV = "KGIT_LOCK_TIMEOUT_S"
LOCK_TIMEOUT_S = 300.0  # writes under the lock take milliseconds; a holder this long is stuck
LOCK_SAY_AFTER_S = 1.0


def _holder(path: Path) -> str:
    found = locks.holder(path)
    if found is None:
        return "another kgit process"
    return f"pid {found['pid']} (kgit {found.get('command', '')}, since {found.get('since', '?')})"
