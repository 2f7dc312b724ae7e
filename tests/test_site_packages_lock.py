"""The suite runs on several processes (pytest-xdist), and a test that writes into site-packages
runs with no other beside it (tests/conftest.py: site_packages_held): every test holds the lock
shared, a marked one holds it alone, and a writer that waits keeps new readers out."""

from __future__ import annotations

import fcntl
import threading
from pathlib import Path

import pytest

from tests.conftest import _SITE_LOCKS, site_packages_held


def _can_take(mode: int) -> bool:
    """Whether another holder could take the suite's site-packages lock in MODE now."""
    with open(_SITE_LOCKS / "lock", "a") as lock:
        try:
            fcntl.flock(lock, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(lock, fcntl.LOCK_UN)
        return True


def test_a_test_holds_the_lock_shared() -> None:
    assert _can_take(fcntl.LOCK_SH)  # the other tests run beside it
    assert not _can_take(fcntl.LOCK_EX)  # a writer waits for it


@pytest.mark.writes_site_packages
def test_a_test_that_writes_into_site_packages_holds_it_alone() -> None:
    assert not _can_take(fcntl.LOCK_SH)


def _taken_in_thread(alone: bool, folder: Path) -> tuple[threading.Event, threading.Event]:
    """(taken, release): a thread that takes the lock in FOLDER, sets TAKEN, holds it until
    RELEASE is set."""
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with site_packages_held(alone, folder):
            taken.set()
            release.wait(30)

    threading.Thread(target=hold, daemon=True).start()
    return taken, release


def test_a_writer_waits_for_the_readers_and_keeps_new_ones_out(tmp_path: Path) -> None:
    reader_taken, reader_release = _taken_in_thread(False, tmp_path)
    assert reader_taken.wait(10)
    second_taken, second_release = _taken_in_thread(False, tmp_path)
    assert second_taken.wait(10)  # readers share it
    writer_taken, writer_release = _taken_in_thread(True, tmp_path)
    assert not writer_taken.wait(0.5)
    late_taken, late_release = _taken_in_thread(False, tmp_path)
    assert not late_taken.wait(0.5)  # the waiting writer comes first
    reader_release.set()
    assert not writer_taken.wait(0.5)  # one reader still holds it
    second_release.set()
    assert writer_taken.wait(10)
    assert not late_taken.is_set()
    writer_release.set()
    assert late_taken.wait(10)
    late_release.set()
