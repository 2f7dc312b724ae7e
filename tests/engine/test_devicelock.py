"""The per-device measuring lock: one timer per device, a waiter that names the holder, and a
timeout with a hint instead of a silent hang."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kgit.engine.measuring.device.devicelock import device_key, measuring
from kgit.errors import KgitError
from kgit.gitdoor import open_repo
from tests.conftest import git

HOLDER = """
import sys, time
from kgit.gitdoor import open_repo
from kgit.engine.measuring.device.devicelock import measuring
with measuring(open_repo(), "round-7 validation", print, key=sys.argv[1]):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    return repo


def _hold(repo: Path, key: str, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, key, str(seconds)],
        cwd=repo,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_the_key_is_the_visible_device_else_cpu() -> None:
    assert device_key({"CUDA_VISIBLE_DEVICES": "1"}) == "1"
    assert device_key({"HIP_VISIBLE_DEVICES": "2,3"}) == "2,3"
    assert device_key({"CUDA_VISIBLE_DEVICES": " "}) == "cpu"
    assert device_key({}) == "cpu"


def test_a_waiter_names_the_holder_and_times_out_with_a_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    holder = _hold(repo, "0", 30)
    said: list[str] = []
    monkeypatch.setenv("KGIT_DEVICE_LOCK_TIMEOUT_S", "0.5")
    start = time.monotonic()
    try:
        with (
            pytest.raises(KgitError) as caught,
            measuring(open_repo(repo), "x", said.append, key="0"),
        ):
            pass
    finally:
        holder.kill()
        holder.wait()
    assert 0.5 <= time.monotonic() - start < 10
    assert f"pid {holder.pid}" in caught.value.message and "round-7 validation" in said[0]
    assert "device 0" in caught.value.message and "--device" in (caught.value.hint or "")


def test_another_device_does_not_wait_and_a_released_lock_is_taken(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    holder = _hold(repo, "0", 1.0)
    said: list[str] = []
    start = time.monotonic()
    with measuring(open_repo(repo), "other device", said.append, key="1"):
        assert time.monotonic() - start < 0.5 and not said
    with measuring(open_repo(repo), "same device", said.append, key="0"):
        waited = time.monotonic() - start
    holder.wait()
    assert waited >= 0.5 and len(said) == 1  # it waited for the holder, and said so once


def test_a_nested_measurement_takes_the_lock_it_holds(tmp_path: Path) -> None:
    repo = open_repo(_repo(tmp_path))
    with measuring(repo, "session", print, key="0"), measuring(repo, "pass", print, key="0"):
        pass
    with measuring(repo, "again", print, key="0"):  # released whole
        pass
