"""Shared fixtures: real git repositories in tmp_path with a fake kernel, test and harness."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

MANIFEST = """\
target_op: gemm
target_backend: FAKE
target_gpu: CPU
primary_metric: Forward TFLOPS
kernel_source: kernel.txt
test_command: {python} check.py
quick_command: {python} harness.py
timeout_s: 30
decision_policy: seed
target_shapes:
  - {{label: s64, M: 64, N: 64, K: 64}}
  - {{label: s128, M: 128, N: 128, K: 128}}
  - {{label: s256, M: 256, N: 256, K: 256}}
  - {{label: s512, M: 512, N: 512, K: 512}}
  - {{label: s1024, M: 1024, N: 1024, K: 1024}}
  - {{label: s2048, M: 2048, N: 2048, K: 2048}}
"""

CHECK = """\
import sys
from pathlib import Path
text = Path("kernel.txt").read_text()
if "BUG" in text:
    print("test_kernel: FAILED (kernel.txt has a BUG)")
    sys.exit(1)
print("test_kernel: passed")
"""


# The fixture's rounds are judged by the seed's rule, whose outcome on the fake harness's figures
# is exact; tests of the interleaved policy (the default) take the line out (without_policy).
SEED_POLICY = "decision_policy: seed\n"
assert SEED_POLICY in MANIFEST


# Some red-team cases (marked `writes_site_packages`) write a module into this interpreter's
# site-packages, where every gate and measurement running beside them would find it (kgit's walk
# for writes would blame their kernels). The full suite runs on several processes (pytest-xdist),
# so each test holds this interpreter's site-packages lock, shared, from its set-up to its
# tear-down (the session's fixtures it builds included), and a marked one holds it alone. The
# lock is named by the folder, so two pytest runs on one interpreter also keep out of each
# other's way. A writer first takes the turnstile and keeps it while it waits: no new reader
# gets in, so a writer is never starved by readers taking turns.
_SITE_PACKAGES = sysconfig.get_paths()["purelib"]
_SITE_LOCKS = Path(tempfile.gettempdir()) / (
    "kgit-tests-site-packages-" + hashlib.sha256(_SITE_PACKAGES.encode()).hexdigest()[:16]
)


@contextmanager
def site_packages_held(alone: bool, folder: Path = _SITE_LOCKS) -> Iterator[None]:
    """This interpreter's site-packages lock (its files in FOLDER), held shared (ALONE: held by
    this test only)."""
    folder.mkdir(exist_ok=True)
    with open(folder / "turnstile", "a") as turnstile, open(folder / "lock", "a") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    with site_packages_held(alone=item.get_closest_marker("writes_site_packages") is not None):
        yield


def interruptible() -> None:
    """A child's preexec_fn: SIGINT back to its default, so that the child (Python) turns it into
    KeyboardInterrupt. A shell's background job (`pytest &`, CI under nohup) inherits SIGINT
    ignored, and Python keeps it ignored: a test that interrupts kgit then waits in vain."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def without_policy(manifest: Path) -> str:
    """The fixture's manifest text without its `decision_policy: seed` line."""
    return manifest.read_text().replace(SEED_POLICY, "")


def git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout.strip()


# The baseline's gate audit inline, as most tests read its result when the baseline returns;
# tests of the background audit take this out (tests/engine/test_audit_background.py).
os.environ["KGIT_AUDIT_INLINE"] = "1"


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never read the developer's git config, and always have an identity."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    (tmp_path / "gitconfig").write_text(
        "[user]\n\tname = Kernel Engineer\n\temail = dev@example.com\n"
        "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
    )


@pytest.fixture
def kernel_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with a fake kernel, its test, the fake harness and a manifest (untracked)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "kernel.txt").write_text("speed: 100\n")
    (repo / "check.py").write_text(CHECK)
    shutil.copy(HERE / "fake_harness.py", repo / "harness.py")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "kernel, test and harness")
    (repo / "manifest.yaml").write_text(MANIFEST.format(python=sys.executable))
    monkeypatch.chdir(repo)
    return repo


def record_note(repo: Path, kind: str, target: str, data: bytes | None, name: str = "c1") -> None:
    """Change a note in the campaign record and on its notes ref, as kgit itself would write it
    (DATA None: remove it). kgit reads its notes from the record, so a hand edit of the notes
    ref no longer makes the states some tests need (a verdict written again, a gate never run):
    this does."""
    from kgit.engine.campaign import Campaign
    from kgit.gitdoor import open_repo
    from kgit.records.names import NOTES_DIR

    kgit_repo, sha = open_repo(repo), git(repo, "rev-parse", target)
    with kgit_repo.write_lock():
        campaign = Campaign.load(kgit_repo, name)
        if data is not None:
            campaign.save("test: a note written", notes=[campaign.note(kind, sha, data)])
            return
        tree = kgit_repo.tree_with(campaign.record_sha, {f"{NOTES_DIR}/{kind}/{sha}": None})
        new = kgit_repo.commit_tree(tree, [campaign.record_sha], "test: a note removed\n")
        kgit_repo.update_ref(campaign.refs.record, new, campaign.record_sha)
    git(repo, "notes", f"--ref=refs/notes/kgit/{name}/{kind}", "remove", "--ignore-missing", sha)


class KgitResult:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def json(self) -> object:
        import json

        return json.loads(self.out)

    def __repr__(self) -> str:
        return f"<exit {self.code}\nstdout:\n{self.out}\nstderr:\n{self.err}>"


def run_kgit(*args: str) -> KgitResult:
    """kgit in process, through click's runner, with the CLI's own error handling (main)."""
    from click.testing import CliRunner

    from kgit.cli import main

    with CliRunner().isolation() as (out, err, _):
        code = main(list(args))
    return KgitResult(code, out.getvalue().decode(), err.getvalue().decode())


def commit(
    repo: Path, message: str, *extra: str, all_files: bool = True
) -> subprocess.CompletedProcess[str]:
    """A real `git commit [-a]` (hooks run), as a user would type it."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GIT_") or k.startswith("GIT_CONFIG")
    }
    return subprocess.run(
        ["git", "commit", "-q", *(["-a"] if all_files else []), "-m", message, *extra],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
    )


def baselined(repo: Path, kernel: str, policy: str) -> Path:
    """Campaign c1 on REPO (a kernel_repo) with KERNEL committed and the fixture's manifest under
    POLICY (the `decision_policy` lines), its baseline recorded."""
    (repo / "kernel.txt").write_text(kernel)
    git(repo, "commit", "-qam", "kernel")
    manifest = repo / "manifest.yaml"
    manifest.write_text(without_policy(manifest) + policy)
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    result = run_kgit("-q", "baseline", "--json")
    assert result.code == 0, result
    return repo


class Built:
    """The folders a fixture built, kept once a run and laid again in each later test's
    tmp_path: a campaign's baseline and rounds, through the CLI as a user runs them, are most of
    what many fixtures cost, and a copy is the same repository. ROOT is shared by pytest-xdist's
    processes (run_folder): the first process to ask for a key builds it, under a lock, and
    every later test of either process copies it.

    A copy is moved, and git keeps absolute paths in three kinds of files: a linked work tree's
    `.git` file, its `gitdir` in the main repository (kgit's measuring trees are linked work
    trees), and `config` (a remote beside the repository). Those are rewritten for the new
    folder; nothing else a campaign stores names its folder (the tether of kgit's processes
    names the git folder, so a test's kgit never takes another's for its own)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def lay(self, key: str, tmp_path: Path, build: Callable[[], object]) -> None:
        """TMP_PATH as BUILD leaves it: built here the first time KEY is asked for in this run,
        copied from that first build afterwards (what TMP_PATH already holds of it is replaced)."""
        kept, origin = self.root / key, self.root / f"{key}.from"
        with _locked(self.root / f"{key}.lock"):
            if not origin.exists():
                shutil.rmtree(kept, ignore_errors=True)  # a build that failed
                build()
                shutil.copytree(tmp_path, kept, symlinks=True)
                origin.write_text(str(tmp_path))
                return
        here = Path.cwd()
        for entry in kept.iterdir():
            target = tmp_path / entry.name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            if entry.is_dir() and not entry.is_symlink():
                shutil.copytree(entry, target, symlinks=True)
            else:
                shutil.copy2(entry, target, follow_symlinks=False)
        _relocate(tmp_path, f"{origin.read_text()}/", f"{tmp_path}/")
        os.chdir(here)  # a folder of the same name, laid again


def _relocate(folder: Path, old: str, new: str) -> None:
    """Git's absolute paths under FOLDER that start with OLD made to start with NEW."""
    for path in folder.rglob("*"):
        linked_tree = path.name == ".git" and path.is_file()
        tree_link = path.name == "gitdir" and path.parent.parent.name == "worktrees"
        if (linked_tree or tree_link or path.name == "config") and not path.is_symlink():
            text = path.read_text()
            if old in text:
                path.write_text(text.replace(old, new))


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of this pytest run that all its processes share: under pytest-xdist each process
    has its own basetemp (`popen-gwN`), under the run's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """PATH's lock, held alone (by one process of the run)."""
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def built_once_per_run(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], object]
) -> Path:
    """The folder NAME as BUILD(folder) leaves it, built once for the whole pytest run, in the
    run's folder (run_folder): the first process to ask builds it under a lock while the others
    wait for it. What is built there is read by every process at once: a test copies it, never
    writes into it. A build that failed is tried again by the next process to ask (and fails
    its tests too)."""
    shared = run_folder(tmp_path_factory)
    folder, done = shared / name, shared / f"{name}.built"
    with _locked(shared / f"{name}.lock"):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return Built(built_once_per_run(tmp_path_factory, "built", lambda folder: None))


@pytest.fixture
def campaign(kernel_repo: Path, built: Built, tmp_path: Path) -> Path:
    """kernel_repo with campaign `c1` initialised and its baseline recorded."""

    def build() -> None:
        assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
        result = run_kgit("baseline")
        assert result.code == 0, result

    built.lay("campaign", tmp_path, build)
    return kernel_repo
