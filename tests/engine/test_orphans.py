"""A kgit killed with SIGKILL (an agent's timeout, the OOM killer) cannot stop what it started:
its harness or gate runs on in its own process group. The next kgit to take the device's
measuring lock kills those processes, says so, and only then times its kernels."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kgit.engine.orphans import OWNER_ENV, kill_left_behind, left_behind, tether
from tests.conftest import commit, git, run_kgit, without_policy

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")

# The gate's test: `gate_log: PATH` makes its first run write `<pid> <pgid> -` to PATH and sleep
# without a word (a long test suite); later runs pass at once.
GATE = """\
import os, time
from pathlib import Path
lines = Path("kernel.txt").read_text().splitlines()
settings = dict(line.split(":", 1) for line in lines if ":" in line)
log = Path(settings.get("gate_log", "").strip() or os.devnull)
if "gate_log" in settings and not log.exists():
    log.write_text(f"{os.getpid()} {os.getpgrp()} -\\n")
    time.sleep(600)
print("test_kernel: passed")
"""


INTERLEAVED = """\
decision_policy: interleaved
interleaved: {min_quads: 4, max_quads: 8, calibration_quads: 4, min_pairs: 3, max_pairs: 4}
"""


def _campaign(repo: Path, policy: str = "", kernel: str = "speed: 100\n") -> None:
    (repo / "check.py").write_text(GATE)
    (repo / "kernel.txt").write_text(kernel)
    git(repo, "commit", "-qam", "a gate that can take long")
    if policy:
        (repo / "manifest.yaml").write_text(without_policy(repo / "manifest.yaml") + policy)
    assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
    done = run_kgit("baseline")
    assert done.code == 0, done


def _kgit(repo: Path, *args: str) -> subprocess.Popen[str]:
    """`python -m kgit ARGS` as its own process (the one the test kills)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GIT_", "KGIT_")) or k.startswith("GIT_CONFIG")
    }
    return subprocess.Popen(
        [sys.executable, "-m", "kgit", *args],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _lines(log: Path) -> list[tuple[int, int, str]]:
    """The orphan log's lines: (pid, process group, pids it saw running beside it)."""
    rows = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
    return [(int(pid), int(group), beside) for pid, group, beside in rows]


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    members = [p for p in Path("/proc").iterdir() if p.name.isdigit()]
    for member in members:  # a zombie member (ended, not yet reaped) does not count
        with contextlib.suppress(OSError):
            fields = (member / "stat").read_text().rpartition(")")[2].split()
            if int(fields[2]) == group and fields[0] not in ("Z", "X"):
                return True
    return False


def _kill_mid_run(repo: Path, log: Path) -> tuple[int, int]:
    """Start `kgit round validate`, SIGKILL it once the first long process wrote LOG; that
    process's (pid, group)."""
    killed = _kgit(repo, "round", "validate")
    deadline = time.monotonic() + 60
    while not _lines(log):
        assert killed.poll() is None, killed.communicate()
        assert time.monotonic() < deadline, "the long process never started"
        time.sleep(0.05)
    killed.send_signal(signal.SIGKILL)
    killed.communicate()
    assert killed.returncode == -signal.SIGKILL
    pid, group, _ = _lines(log)[0]
    return pid, group


def _orphans_then_retry(repo: Path, log: Path) -> str:
    """Kill a validate mid-run, check that what it started lives on, validate again: the
    retry's stderr. Every process the log names is killed at the end, whatever happened."""
    try:
        _, group = _kill_mid_run(repo, log)
        assert _group_alive(group)  # SIGKILL gave kgit no way out: the group lives on
        doctor = run_kgit("doctor")  # the record holds nothing half-written
        assert doctor.code == 0, doctor
        retry = _kgit(repo, "round", "validate")
        _, err = retry.communicate(timeout=120)
        assert retry.returncode == 0, err
        return err
    finally:
        for _, group, _ in _lines(log):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)


def _check_retry(repo: Path, log: Path, err: str) -> None:
    orphan, group, _ = _lines(log)[0]
    harness_runs = _lines(log)[1:]
    assert harness_runs, "the retry ran no harness"
    # Every pass of the retry ran alone: the orphan was gone before the device was timed.
    assert all(beside == "-" for _, _, beside in harness_runs), (harness_runs, err)
    assert not _group_alive(group)
    said = [line for line in err.splitlines() if "left running" in line]
    assert len(said) == 1 and str(orphan) in said[0], err
    doctor = run_kgit("doctor")
    assert doctor.code == 0, doctor


def test_a_killed_validate_leaves_a_harness_that_the_next_measurement_kills(
    kernel_repo: Path,
) -> None:
    repo = kernel_repo
    _campaign(repo)
    log = repo.parent / "orphans.log"
    assert run_kgit("round", "start", "a long pass").code == 0
    (repo / "kernel.txt").write_text(f"speed: 100\norphan_log: {log}\n")
    assert commit(repo, "a change").returncode == 0
    err = _orphans_then_retry(repo, log)
    _check_retry(repo, log, err)


def test_a_killed_gate_is_killed_before_the_next_measurement(kernel_repo: Path) -> None:
    repo = kernel_repo
    _campaign(repo)
    log = repo.parent / "orphans.log"
    assert run_kgit("round", "start", "a long gate").code == 0
    (repo / "kernel.txt").write_text(f"speed: 100\norphan_log: {log}\ngate_log: {log}\n")
    # Unhooked, so that validate gates it (in kgit's clean checkout) and is killed there.
    assert commit(repo, "a change", "--no-verify").returncode == 0
    err = _orphans_then_retry(repo, log)
    _check_retry(repo, log, err)


def test_a_killed_interleaved_validation_leaves_a_worker_that_the_next_one_kills(
    kernel_repo: Path,
) -> None:
    repo = kernel_repo
    _campaign(repo, INTERLEAVED, "speed: 100\nworker\n")
    log = repo.parent / "orphans.log"
    assert run_kgit("round", "start", "a long first pass").code == 0
    (repo / "kernel.txt").write_text(f"speed: 100\nworker\norphan_log: {log}\n")
    assert commit(repo, "a change").returncode == 0
    err = _orphans_then_retry(repo, log)
    _check_retry(repo, log, err)


def _start_of(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]


def _sleeper(owner: str, repo: Path, *, own_group: bool = True) -> subprocess.Popen[bytes]:
    env = {**os.environ, OWNER_ENV: f"{owner}:{repo.resolve()}"}
    return subprocess.Popen(["sleep", "60"], env=env, start_new_session=own_group)


def test_only_the_processes_of_a_dead_kgit_of_this_repository_are_killed(tmp_path: Path) -> None:
    repo, other = tmp_path / "repo.git", tmp_path / "other.git"
    ended = subprocess.Popen(["sleep", "60"])
    dead = f"{ended.pid}:{_start_of(ended.pid)}"
    ended.kill()
    ended.wait()
    me = f"{os.getpid()}:{_start_of(os.getpid())}"
    recycled = f"{os.getpid()}:0"  # this pid, another start: a kgit that ended, its pid reused
    sleepers = {
        "dead": _sleeper(dead, repo),
        "recycled": _sleeper(recycled, repo),
        "alive": _sleeper(me, repo),
        "other repository": _sleeper(dead, other),
        "in this process's group": _sleeper(dead, repo, own_group=False),
    }
    try:
        found = {p.pid for p in left_behind(repo)}
        assert found == {sleepers["dead"].pid, sleepers["recycled"].pid}
        said: list[str] = []
        kill_left_behind(repo, said.append)
        for name in ("dead", "recycled"):
            assert sleepers[name].wait(timeout=5) == -signal.SIGKILL, name
        assert all(sleepers[n].poll() is None for n in sleepers if n not in ("dead", "recycled"))
        assert len(said) == 1 and "left running by kgit" in said[0], said
        assert all(str(pid) in said[0] for pid in (ended.pid, os.getpid(), *found)), said
        assert not left_behind(repo)
    finally:
        for sleeper in sleepers.values():
            sleeper.kill()
            sleeper.wait()


def test_a_tether_names_this_kgit_and_an_untethered_command_drops_an_inherited_one(
    tmp_path: Path,
) -> None:
    inherited = {"PATH": "/bin", OWNER_ENV: f"1:1:{tmp_path}"}
    env = tether(inherited, tmp_path)
    assert env[OWNER_ENV] == f"{os.getpid()}:{_start_of(os.getpid())}:{tmp_path.resolve()}"
    assert tether(inherited, None) == {"PATH": "/bin"}
