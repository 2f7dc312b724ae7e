"""`kgit gate audit` through the CLI on a small Python kernel: caught and surviving mutants, a
gate that hangs, a gate that never loads the kernel, what it refuses, where it runs (never in the
user's work tree, even when killed), and the audit at baseline."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import git, interruptible, run_kgit
from tests.engine.test_resident_harness import left_under, processes_under

KERNEL = """\
def mean_of_squares(xs, n):
    return sum(x * x for x in xs) / n


def below(xs, limit):
    return [x for x in xs if x < limit]
"""

STRONG = """\
import kernel
assert kernel.mean_of_squares([1.0, 2.0, 3.0], 3) == 14 / 3, "mean of squares"
assert kernel.below([1, 2, 3, 4], 3) == [1, 2], "below"
print("check_kernel: passed")
"""

# Checks types only: every mutant of KERNEL passes it.
WEAK = """\
import kernel
assert isinstance(kernel.mean_of_squares([1.0], 1), float)
assert isinstance(kernel.below([], 1), list)
"""

# A wrong kernel makes it hang rather than fail.
HANGS = """\
import time
import kernel
if kernel.mean_of_squares([1.0, 2.0, 3.0], 3) != 14 / 3 or kernel.below([1, 2, 3], 3) != [1, 2]:
    time.sleep(600)
"""

# Never imports the kernel: it tests an inline copy.
NO_IMPORT = "assert sum(x * x for x in [1.0, 2.0]) / 2 == 2.5\n"


def _campaign(repo: Path, check: str, extra: str = "", name: str = "c1") -> Path:
    (repo / "kernel.py").write_text(KERNEL)
    (repo / "check_kernel.py").write_text(check)
    git(repo, "add", "kernel.py", "check_kernel.py")
    git(repo, "commit", "-qm", "a Python kernel and its check")
    text = (repo / "manifest.yaml").read_text()
    text = text.replace("kernel_source: kernel.txt", "kernel_source: [kernel.py]")
    text = text.replace("check.py", "check_kernel.py")
    (repo / "manifest.yaml").write_text(text + extra)
    assert run_kgit("init", name, "-m", "manifest.yaml").code == 0
    return repo


def _audit(*args: str) -> tuple[int, dict[str, object], str]:
    result = run_kgit("gate", "audit", "--json", *args)
    return result.code, json.loads(result.out), result.err


def _commit_with(repo: Path, parent: str, path: str, text: str) -> str:
    """A commit on PARENT with PATH holding TEXT, made with plumbing (no hook, no work tree)."""
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=text,
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    listing = git(repo, "ls-tree", parent).splitlines()
    entries = [line for line in listing if not line.endswith(f"\t{path}")]
    entries.append(f"100644 blob {blob}\t{path}")
    tree = subprocess.run(["git", "mktree"], cwd=repo, input="\n".join(entries) + "\n",
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    return git(repo, "commit-tree", tree, "-p", parent, "-m", "a gate that checks")


def test_the_audit_refuses_a_best_line_moved_by_hand(kernel_repo: Path) -> None:
    """The best line moved by hand onto a commit whose gate is strong: auditing it would record
    "every mutant caught" as the campaign's gate audit."""
    repo = _campaign(kernel_repo, WEAK)
    best = "refs/heads/kgit/c1/best"
    git(repo, "update-ref", best, _commit_with(repo, git(repo, "rev-parse", best),
                                               "check_kernel.py", STRONG))  # fmt: skip
    result = run_kgit("gate", "audit", "--max", "2")
    assert result.code == 1, result
    assert "was moved outside kgit" in result.err, result
    assert json.loads(git(repo, "show", "refs/kgit/c1/campaign:state.json"))["gate_audit"] is None


def test_a_strong_gate_catches_every_mutant(kernel_repo: Path) -> None:
    _campaign(kernel_repo, STRONG)
    code, data, err = _audit("--max", "4")
    assert code == 0, err
    assert data["tried"] == 4 and data["caught"] == 4 and data["survived"] == 0
    assert {m["kind"] for m in data["mutants"]} == {"denominator", "bound", "arith", "boundary"}  # type: ignore[union-attr]
    assert "WARNING" not in err and "[4/4]" in err
    denominator = next(m for m in data["mutants"] if m["kind"] == "denominator")  # type: ignore[union-attr]
    assert (
        denominator["where"] == "kernel.py:2" and denominator["mutation"] == "`/ n` -> `/ (n + 1)`"
    )
    assert denominator["outcome"] == "caught"
    status = run_kgit("status")
    assert "gate      gate audit of" in status.out and "4 of 4 mutants caught" in status.out


def test_a_weak_gate_is_reported_with_each_survivor(kernel_repo: Path) -> None:
    _campaign(kernel_repo, WEAK)
    code, data, err = _audit("--max", "3")
    assert code == 0  # a warning, not a refusal...
    assert data["survived"] == 3 and data["weak"] is True
    assert "WARNING: 3 of 3 mutants of the kernel SURVIVED the gate" in err
    assert "kernel.py:2  denominator  `/ n` -> `/ (n + 1)`" in err
    strict = run_kgit("-q", "gate", "audit", "--max", "3", "--strict")
    assert strict.code == 1  # ...unless --strict
    assert "SURVIVED" in strict.out and "WARNING" in strict.err and "[1/3]" not in strict.err
    status = run_kgit("status")
    survived = next(line for line in status.out.splitlines() if "3 SURVIVED (" in line)
    assert survived.count("kernel.py:6") == 2 and "kernel.py:2" in survived, status
    report = run_kgit("report").out
    assert "## Correctness gate audit" in report and "the gate passed 3 wrong kernel(s)" in report


def test_the_same_source_gives_the_same_mutants(kernel_repo: Path) -> None:
    _campaign(kernel_repo, WEAK)
    first = [m["mutation"] for m in _audit("--max", "3")[1]["mutants"]]  # type: ignore[union-attr]
    again = [m["mutation"] for m in _audit("--max", "3")[1]["mutants"]]  # type: ignore[union-attr]
    assert first == again and len(first) == 3


def test_a_hang_counts_as_caught(kernel_repo: Path) -> None:
    _campaign(kernel_repo, HANGS)
    code, data, err = _audit("--max", "2", "--timeout", "2")
    assert code == 0, err
    assert [m["outcome"] for m in data["mutants"]] == ["timed out", "timed out"]  # type: ignore[union-attr]
    assert data["caught"] == 2 and data["timed_out"] == 2 and data["survived"] == 0
    text = run_kgit("-q", "gate", "audit", "--max", "1", "--timeout", "2").out
    assert "caught 1 of 1 (1 by timeout: a hang counts as caught)" in text
    assert left_under(kernel_repo) == []


def test_a_gate_that_never_loads_the_kernel(kernel_repo: Path) -> None:
    _campaign(kernel_repo, NO_IMPORT)
    code, data, err = _audit("--strict")
    assert code == 1
    assert data["unexercised"] == ["kernel.py"] and data["mutants"] == []
    assert "the gate passes with kernel.py replaced by a file that cannot load" in err


def test_a_gate_failing_on_the_unmutated_kernel_is_an_error(kernel_repo: Path) -> None:
    # The check reads a file that is in the user's work tree but not committed: kgit's clean
    # checkout does not have it, so no mutant could be judged.
    _campaign(kernel_repo, "import kernel\nopen('local-data.txt').read()\n")
    (kernel_repo / "local-data.txt").write_text("only here\n")
    result = run_kgit("gate", "audit")
    assert result.code == 1 and "kgit crashed" not in result.err
    assert "FileNotFoundError" in result.err  # the gate's own output, as details
    assert "the gate fails on the unmutated kernel in a clean checkout" in result.err
    assert "hint: the gate must pass on a clean checkout of the best line" in result.err
    assert "could not judge" in run_kgit("status").out


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("kernel_source: [missing.py]", "missing.py: matches no file"),
        ("kernel_source: [kernel.txt]", "kernel.txt: no mutator for .txt files"),
        ("kernel_source: [broken.py]", "broken.py: does not parse as Python"),
        # a mutant written through a link would change the file it points to: never
        ("kernel_source: [link.py]", "link.py: not a regular file"),
    ],
)
def test_nothing_to_mutate_is_refused_with_the_reason(
    kernel_repo: Path, source: str, message: str
) -> None:
    (kernel_repo / "broken.py").write_text("def f(:\n")
    outside = kernel_repo.parent / "outside.py"
    outside.write_text(KERNEL)
    (kernel_repo / "link.py").symlink_to(outside)
    git(kernel_repo, "add", "broken.py", "link.py")
    git(kernel_repo, "commit", "-qm", "broken")
    text = (kernel_repo / "manifest.yaml").read_text().replace("kernel_source: kernel.txt", source)
    (kernel_repo / "manifest.yaml").write_text(text)
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    result = run_kgit("gate", "audit", "--json")
    assert result.code == 1 and "Traceback" not in result.err
    error = json.loads(result.out)
    assert message in error["error"] and "nothing to mutate" in error["error"]
    assert "kernel_source names" in error["hint"]
    assert "gate audit" not in run_kgit("status").out  # nothing recorded
    assert outside.read_text() == KERNEL


def _tree_state(repo: Path) -> tuple[str, bytes, bytes]:
    status = git(repo, "status", "--porcelain=v1", "--untracked-files=all")
    return status, (repo / "kernel.py").read_bytes(), (repo / "scratch.txt").read_bytes()


def test_the_users_work_tree_is_never_touched(kernel_repo: Path) -> None:
    repo = _campaign(kernel_repo, STRONG)
    (repo / "kernel.py").write_text(KERNEL + "# an edit in progress\n")  # dirty, unstaged
    (repo / "scratch.txt").write_text("untracked\n")
    before = _tree_state(repo)
    assert _audit("--max", "3")[0] == 0
    assert _tree_state(repo) == before
    audit_tree = repo / ".git" / "kgit" / "worktrees" / "c1" / "audit"
    assert git(audit_tree, "status", "--porcelain=v1", "--untracked-files=all") == ""
    assert (audit_tree / "kernel.py").read_text() == KERNEL  # the commit's, not the edit


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_a_kill_mid_audit_leaves_the_users_tree_and_a_usable_audit_tree(
    kernel_repo: Path, signum: int
) -> None:
    repo = _campaign(kernel_repo, HANGS)
    (repo / "scratch.txt").write_text("untracked\n")
    before = _tree_state(repo)
    audit_tree = repo / ".git" / "kgit" / "worktrees" / "c1" / "audit"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or "CONFIG" in k}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kgit", "-q", "gate", "audit", "--max", "2"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    # Wait for a mutant's gate: the mutated kernel is in the audit tree while the check hangs.
    # The canary's kernel differs from KERNEL too, but its gate fails at once: waiting on "not
    # KERNEL" alone once caught the canary's gate and found it gone a moment later (CI, loaded).
    deadline, hanging = time.monotonic() + 60, False
    while time.monotonic() < deadline and not hanging:
        time.sleep(0.1)
        try:
            kernel = (audit_tree / "kernel.py").read_text()
        except OSError:  # the tree is not checked out yet
            kernel = KERNEL
        mutant = kernel != KERNEL and "canary" not in kernel
        hanging = mutant and bool(processes_under(audit_tree, "check_kernel.py"))
    assert hanging, f"no mutant's gate ever ran: {proc.poll()=}"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    if signum == signal.SIGKILL:
        # Nothing runs after a SIGKILL: the hanging gate (its own session) is left behind.
        for pid in processes_under(audit_tree):
            os.kill(pid, signal.SIGKILL)
    else:
        assert proc.returncode == 130 and "interrupted by" in err and "Traceback" not in err
        assert left_under(repo) == []
        assert (audit_tree / "kernel.py").read_text() == KERNEL  # restored on the way out
    assert _tree_state(repo) == before
    assert "gate audit" not in run_kgit("status").out  # an interrupted audit records nothing
    # The next audit starts from a clean checkout whatever the kill left there.
    code, data, _ = _audit("--max", "1", "--timeout", "2")
    assert code == 0 and data["caught"] == 1
    assert (audit_tree / "kernel.py").read_text() == KERNEL


def test_two_audits_at_once_are_refused(kernel_repo: Path) -> None:
    repo = _campaign(kernel_repo, HANGS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or "CONFIG" in k}
    first = subprocess.Popen(
        [sys.executable, "-m", "kgit", "-q", "gate", "audit", "--max", "1", "--timeout", "20"],
        cwd=repo,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        audit_tree = repo / ".git" / "kgit" / "worktrees" / "c1" / "audit"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not processes_under(audit_tree, "check_kernel"):
            time.sleep(0.1)
        second = run_kgit("gate", "audit")
        assert second.code == 1 and "another gate audit of campaign c1 is running" in second.err
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=30)


def test_baseline_runs_the_audit_and_the_manifest_sizes_it(kernel_repo: Path) -> None:
    _campaign(kernel_repo, WEAK, "gate_audit_mutants: 2\n")
    result = run_kgit("baseline")
    assert result.code == 0, result
    assert "gate audit: 0 of 2 mutants caught, 2 SURVIVED (kgit gate audit)" in result.out
    assert "WARNING: 2 of 2 mutants of the kernel SURVIVED" in result.err
    state = json.loads(git(kernel_repo, "show", "refs/kgit/c1/campaign:state.json"))
    assert state["gate_audit"]["trigger"] == "baseline" and len(state["gate_audit"]["mutants"]) == 2
    assert "2 SURVIVED" in run_kgit("status").out


def test_a_baseline_interrupted_in_its_audit_keeps_its_baseline(kernel_repo: Path) -> None:
    repo = _campaign(kernel_repo, HANGS, "gate_audit_mutants: 2\n")
    audit_tree = repo / ".git" / "kgit" / "worktrees" / "c1" / "audit"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or "CONFIG" in k}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kgit", "-q", "baseline"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not processes_under(audit_tree, "check_kernel.py"):
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in err
    status = run_kgit("status", "--json").json()
    assert status["baselined"] is True and status["gate_audit"] is None  # type: ignore[index]
    assert status["next_step"] == 'kgit round start "HYPOTHESIS"'  # type: ignore[index]
    assert left_under(repo) == []


def test_gate_audit_mutants_zero_turns_the_baseline_audit_off(kernel_repo: Path) -> None:
    _campaign(kernel_repo, WEAK, "gate_audit_mutants: 0\n")
    result = run_kgit("baseline", "--json")
    assert result.code == 0, result
    assert json.loads(result.out)["gate_audit"] is None
    assert "gate audit: off (gate_audit_mutants: 0)" in result.err
    assert "## Correctness gate audit\n\n**FAIL** not audited" in run_kgit("report").out


def test_a_baseline_with_nothing_to_mutate_says_so_and_goes_on(kernel_repo: Path) -> None:
    # The shared fixture's kernel is kernel.txt: no mutator, a warning, the baseline recorded.
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    result = run_kgit("baseline")
    assert result.code == 0, result
    assert "warning: gate audit: nothing to mutate in kernel_source (kernel.txt: no mutator" in (
        result.err
    )
    assert run_kgit("status", "--json").json()["gate_audit"] is None  # type: ignore[index]
