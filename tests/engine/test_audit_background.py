"""The baseline's gate audit in the background: the baseline returns before it, a measurement
waits for it, its result is recorded where an inline audit's is, and a kill is reported."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import git, run_kgit
from tests.engine.test_gate_audit import HANGS, STRONG, WEAK, _campaign, _commit_with
from tests.engine.test_resident_harness import processes_under

# WEAK, slowed: the audit's gate runs last long enough for a command to start beside them.
SLOW_WEAK = "import time\ntime.sleep(1.5)\n" + WEAK


@pytest.fixture(autouse=True)
def _in_the_background(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KGIT_AUDIT_INLINE", raising=False)


def _status() -> dict[str, object]:
    data = run_kgit("status", "--json").json()
    assert isinstance(data, dict)
    return data


def _until(check: object, within_s: float = 120.0) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError("timed out")


def test_the_baseline_returns_before_its_audit_which_records_as_before(kernel_repo: Path) -> None:
    _campaign(kernel_repo, SLOW_WEAK, "gate_audit_mutants: 2\n")
    result = run_kgit("baseline", "--json")
    assert result.code == 0, result
    data = result.json()
    assert data["gate_audit"] is None and data["gate_audit_background"]["running"]  # type: ignore[index]
    running = _status()["gate_audit_background"]
    assert isinstance(running, dict) and running["running"], running
    assert "running in the background" in run_kgit("status").out
    # It holds the device's measuring lock: a measurement started now waits for it.
    locks = kernel_repo / ".git" / "kgit" / "locks"
    _until(lambda: "the baseline's gate audit" in " ".join(p.read_text() for p in locks.glob("*")))
    _until(lambda: _status()["gate_audit_background"] is None)
    state = json.loads(git(kernel_repo, "show", "refs/kgit/c1/campaign:state.json"))
    assert state["gate_audit"]["trigger"] == "baseline"
    assert "SURVIVED" in run_kgit("status").out
    assert not (kernel_repo / ".git" / "kgit" / "audit" / "c1.json").exists()


def test_a_killed_background_audit_is_reported_with_the_command_that_reruns_it(
    kernel_repo: Path,
) -> None:
    repo = _campaign(kernel_repo, HANGS, "gate_audit_mutants: 2\n")
    assert run_kgit("baseline").code == 0
    running = _status()["gate_audit_background"]
    assert isinstance(running, dict) and running["running"]
    audit_tree = repo / ".git" / "kgit" / "worktrees" / "c1" / "audit"
    _until(lambda: processes_under(audit_tree, "check_kernel.py"))  # a mutant's gate hangs
    os.kill(int(running["pid"]), signal.SIGKILL)
    try:
        _until(lambda: not _status()["gate_audit_background"]["running"])  # type: ignore[index]
        status = _status()
        assert status["baselined"] is True and status["gate_audit"] is None
        assert "interrupted" in run_kgit("status").out
        assert "kgit -c c1 gate audit" in run_kgit("status").out
        doctor = run_kgit("doctor", "--json").json()
        kinds = {p["kind"]: p["repair"] for p in doctor["problems"]}  # type: ignore[index]
        assert kinds.get("interrupted_audit") == "kgit -c c1 gate audit", doctor
        assert "interrupted" in run_kgit("report").out
    finally:
        for pid in processes_under(repo):
            os.kill(pid, signal.SIGKILL)


def test_wait_audit_runs_it_inline_as_before(kernel_repo: Path) -> None:
    _campaign(kernel_repo, WEAK, "gate_audit_mutants: 2\n")
    data = run_kgit("baseline", "--wait-audit", "--json").json()
    assert data["gate_audit_background"] is None  # type: ignore[index]
    assert data["gate_audit"]["tried"] == 2 and data["gate_audit"]["survived"] == 2  # type: ignore[index]
    assert _status()["gate_audit_background"] is None


def test_deleting_the_campaign_stops_its_audit_and_removes_its_mark_and_log(
    kernel_repo: Path,
) -> None:
    repo = _campaign(kernel_repo, HANGS, "gate_audit_mutants: 2\n")
    assert run_kgit("baseline").code == 0
    audit_tree = repo / ".git" / "kgit" / "worktrees" / "c1" / "audit"
    _until(lambda: processes_under(audit_tree, "check_kernel.py"))  # a mutant's gate hangs
    mark = repo / ".git" / "kgit" / "audit" / "c1.json"
    try:
        deleted = run_kgit("campaign", "delete", "c1", "--yes", "--json")
        assert deleted.code == 0, deleted
        assert deleted.json()["audit_stopped"] is True  # type: ignore[index]
        assert not mark.exists() and not mark.with_suffix(".log").exists()
        _until(lambda: not processes_under(repo), within_s=30.0)  # its gate runs went with it
    finally:
        for pid in processes_under(repo):
            os.kill(pid, signal.SIGKILL)


def test_the_background_audit_audits_the_baseline_not_a_best_line_moved_meanwhile(
    kernel_repo: Path,
) -> None:
    """The best line moved by hand while the audit starts, onto a commit whose gate is strong,
    and put back once it has run: the audit must still audit the baseline's commit (its weak
    gate), not record "every mutant caught" for a tree the campaign never measured."""
    repo = _campaign(kernel_repo, SLOW_WEAK, "gate_audit_mutants: 2\n")
    assert run_kgit("baseline").code == 0
    best = "refs/heads/kgit/c1/best"
    base = git(repo, "rev-parse", best)
    strong = _commit_with(repo, base, "check_kernel.py", "import time\ntime.sleep(1.5)\n" + STRONG)
    git(repo, "update-ref", best, strong)
    try:
        _until(lambda: _status()["gate_audit_background"] is None)
    finally:
        git(repo, "update-ref", best, base)
    state = json.loads(git(repo, "show", "refs/kgit/c1/campaign:state.json"))
    audit = state.get("gate_audit")
    assert audit is None or audit["commit"] == base, audit
    assert audit is not None and any(m["outcome"] == "survived" for m in audit["mutants"]), audit


def test_a_killed_audit_whose_mark_was_removed_is_still_reported(kernel_repo: Path) -> None:
    """The mark is a file any process of the user's may delete: after a kill and an `rm`, the
    record still says an audit was started and never recorded."""
    repo = _campaign(kernel_repo, HANGS, "gate_audit_mutants: 2\n")
    assert run_kgit("baseline").code == 0
    running = _status()["gate_audit_background"]
    assert isinstance(running, dict) and running["running"]
    audit_tree = repo / ".git" / "kgit" / "worktrees" / "c1" / "audit"
    _until(lambda: processes_under(audit_tree, "check_kernel.py"))
    os.kill(int(running["pid"]), signal.SIGKILL)
    (repo / ".git" / "kgit" / "audit" / "c1.json").unlink()
    try:
        status = _status()
        assert status["gate_audit"] is None
        assert status["gate_audit_background"] is not None, "no word of the unrecorded audit"
        assert "interrupted" in run_kgit("status").out
        doctor = run_kgit("doctor", "--json").json()
        kinds = {p["kind"]: p["repair"] for p in doctor["problems"]}  # type: ignore[index]
        assert kinds.get("interrupted_audit") == "kgit -c c1 gate audit", doctor
        assert "interrupted" in run_kgit("report").out
        # Run again, it is recorded and the word goes.
        assert run_kgit("gate", "audit", "--max", "1").code == 0
        assert _status()["gate_audit_background"] is None
    finally:
        for pid in processes_under(repo):
            os.kill(pid, signal.SIGKILL)
