"""Resident harnesses through the CLI: one harness process per side, A,B,B,A blocks, and what
happens when one crashes, hangs, or the harness does not speak the protocol."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import Built, baselined, commit, git, interruptible, run_kgit

POLICY = """\
decision_policy: interleaved
interleaved: {min_quads: 4, max_quads: 8, calibration_quads: 4, min_pairs: 3, max_pairs: 4, calibration_pairs: 3}
"""
KERNEL = "speed: {speed}\nnoise: 0.005\ntorch: 2.11\nworker\n{extra}"


def processes_under(path: Path, running: str = "") -> list[int]:
    """Processes whose working directory is PATH or below (a harness left behind), and whose
    command line holds RUNNING."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if (cwd == str(path) or cwd.startswith(f"{path}/")) and running in cmdline:
            found.append(int(entry.name))
    return found


def left_under(path: Path, running: str = "", within_s: float = 10.0) -> list[int]:
    """processes_under(PATH, RUNNING) once those already killed had WITHIN_S to die (after
    a kill only: a normal exit is waited for, and checked with processes_under at once): a
    SIGKILLed process lives on until it is scheduled, which on a loaded machine took over the
    0.2 s a test once allowed."""
    deadline = time.monotonic() + within_s
    while (found := processes_under(path, running)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def _campaign(repo: Path, kernel: str, policy: str = POLICY) -> Path:
    return baselined(repo, kernel, policy)


@pytest.fixture
def worker_campaign(kernel_repo: Path, built: Built, tmp_path: Path) -> Path:
    kernel = KERNEL.format(speed=100, extra="")
    built.lay("worker_campaign", tmp_path, lambda: _campaign(kernel_repo, kernel))
    return kernel_repo


def _round(repo: Path, speed: float, extra: str = "") -> None:
    assert run_kgit("round", "start", f"speed {speed}").code == 0
    (repo / "kernel.txt").write_text(KERNEL.format(speed=speed, extra=extra))
    assert commit(repo, f"speed {speed}").returncode == 0


def _note(repo: Path, rev: str = "HEAD") -> str:
    return git(repo, "notes", "--ref=refs/notes/kgit/c1/rounds", "show", rev)


def test_baseline_calibrates_in_worker_blocks(worker_campaign: Path) -> None:
    repo = worker_campaign
    note = _note(repo, "kgit/c1/best")
    # calibration_quads 4 over the default 3 pairs of processes, at least 3 quads each
    assert "mode: worker" in note and "calibration_pairs: 9" in note
    assert "calibration_processes: 3" in note and "process_pair_change_pct" in note
    state = json.loads(git(repo, "show", "refs/kgit/c1/campaign:state.json"))
    assert set(state["noise_floors"]) == set(state["representative"])
    assert processes_under(repo) == []  # both workers are gone


def test_a_worker_round_is_judged_on_quads_of_blocks(worker_campaign: Path) -> None:
    repo = worker_campaign
    _round(repo, 103)
    result = run_kgit("-q", "round", "validate", "--json")
    data = result.json()
    assert data["decision"] == "ACCEPTED", result  # type: ignore[index]
    assert data["mode"] == "worker" and data["pairs"] >= 4  # type: ignore[index, operator]
    assert 2 < data["delta_vs_best_pct"] < 4  # type: ignore[index, operator]
    note = _note(repo)
    assert "detectable_pct" in note and "block_ms: 25" in note
    assert processes_under(repo) == []
    assert run_kgit("round", "accept").code == 0
    # The round's 'vs baseline' is its pairs' estimate, as its 'vs best' (its best line was
    # the baseline), not its first pass in blocks against the calibration's blocks.
    base, row = run_kgit("log", "--json").json()[:2]  # type: ignore[index, misc]
    assert row["vs_baseline"] == row["vs_best"] and row["vs_best"]["basis"] == "paired"
    assert row["delta_vs_baseline_pct"] == row["delta_vs_best_pct"] == data["delta_vs_best_pct"]  # type: ignore[index]
    assert "against" not in run_kgit("log").out  # no first-pass figure to name
    assert base["aggregate"] != row["baseline_aggregate"]  # a plain pass is not the blocks' figure

    _round(repo, 97)
    data = run_kgit("-q", "round", "validate", "--json").json()
    assert data["decision"] == "ROLLED BACK" and data["mode"] == "worker"  # type: ignore[index]
    assert "slower" in " ".join(data["reasons"])  # type: ignore[index, arg-type]


@pytest.mark.parametrize("processes", [1, 3])
def test_the_floors_cover_a_steady_difference_between_two_processes(
    kernel_repo: Path, processes: int
) -> None:
    # Each process of the same kernel runs at its own steady speed, as two workers of one
    # RMSNorm did on an H200 (0.4-4.5% apart for a pair's life). Speeds in the order the
    # processes start measuring: the baseline's pass and its reference; two more pairs of
    # processes, each candidate before its held reference; the A/A round's pair, 1% apart.
    counter = kernel_repo / "process-count"
    calibration = ["100", "100", "101.5", "100", "100.4", "100"][: 2 * processes]
    speeds = ",".join([*calibration, "101", "100"])
    policy = POLICY.replace(
        "calibration_quads: 4", f"calibration_quads: 6, calibration_processes: {processes}"
    )
    kernel = f"speeds: {speeds}\ncounter: {counter}\nnoise: 0.0002\ntorch: 2.11\nworker\nhold\n"
    repo = _campaign(kernel_repo, kernel, policy)
    assert counter.read_text() == str(2 * processes)
    assert run_kgit("round", "start", "a comment only").code == 0
    (repo / "kernel.txt").write_text(kernel + "# a comment\n")
    assert commit(repo, "a comment").returncode == 0
    data = run_kgit("-q", "round", "validate", "--json").json()
    if processes == 1:
        # One pair drew no difference: the floors are the noise's, and the 1% is called a gain.
        assert data["decision"] == "ACCEPTED", json.dumps(data)  # type: ignore[index]
    else:
        # Three pairs drew up to 1.5%: the floors cover 3%, and the 1% is no change.
        assert data["decision"] == "ROLLED BACK", json.dumps(data)  # type: ignore[index]
        assert "no change" in data["reasons"][0], json.dumps(data)  # type: ignore[index]


def test_the_calibration_stops_after_two_pairs_of_processes_that_drew_no_offset(
    kernel_repo: Path,
) -> None:
    # Every process at one speed, quads 0.02% apart: two pairs of processes drew offsets far
    # inside the 0.5% floor, so the third of calibration_processes is never started (a pair
    # that draws 1.5%, above, gets its third).
    counter = kernel_repo / "process-count"
    policy = POLICY.replace(
        "calibration_quads: 4", "calibration_quads: 6, calibration_processes: 3"
    )
    recorded = kernel_repo.parent / "recorded.log"
    kernel = (
        f"speeds: {','.join(['100'] * 6)}\ncounter: {counter}\nnoise: 0.0002\ntorch: 2.11\n"
        f"recorded_log: {recorded}\nworker\nhold\n"
    )
    repo = _campaign(kernel_repo, kernel, policy)
    assert counter.read_text() == "4"
    note = _note(repo, "kgit/c1/best")
    assert "calibration_processes: 2" in note and "calibration_pairs: 6" in note, note
    assert processes_under(repo) == []
    # Only the first pass records what the target shapes launch (for the gate audit): the
    # calibration's processes run shapes it logged already, and recording traced each one's
    # first check, its kernels' compile included.
    assert recorded.read_text().split() == ["recorded", "unrecorded", "unrecorded", "unrecorded"]


def test_each_side_is_placed_anew_once_a_quad(kernel_repo: Path) -> None:
    # Where a unit sits in device memory moves a memory-bound kernel's time by up to ~1%: each
    # side's first block of a quad builds its units again at a new place, the other keeps them.
    repo = _campaign(kernel_repo, KERNEL.format(speed=100, extra="log_requests"))
    log = repo / ".git" / "kgit" / "worktrees" / "c1" / "requests.log"
    log.unlink()  # the baseline's calibration relocated too; this test looks at one round
    _round(repo, 103, "log_requests")
    assert run_kgit("-q", "round", "validate").code == 0
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    sides = "".join("A" if r["side"] == "reference" else "B" for r in requests)
    relocating = [r["relocate"] for r in requests]
    assert len(sides) % 4 == 0 and len(sides) >= 16, sides  # one shape group: 4 blocks a quad
    for quad in range(len(sides) // 4):
        names, flags = sides[4 * quad : 4 * quad + 4], relocating[4 * quad : 4 * quad + 4]
        assert sorted(names) == ["A", "A", "B", "B"] and names[0] == names[3], names
        # the first block of each side relocates, its second does not
        assert flags == [True, True, False, False], (names, flags)
    # every block names what the verdict reads: the primary metric's column
    assert {tuple(r["columns"]) for r in requests} == {("Forward TFLOPS",)}


def _events(repo: Path) -> dict[tuple[str, str], list[float]]:
    events: dict[tuple[str, str], list[float]] = {}
    log = repo / ".git" / "kgit" / "worktrees" / "c1" / "events.log"
    for line in log.read_text().splitlines():
        stamp, side, event = line.split()
        events.setdefault((side, event), []).append(float(stamp))
    return events


def test_the_reference_starts_held_beside_the_candidates_first_pass(kernel_repo: Path) -> None:
    repo = _campaign(kernel_repo, KERNEL.format(speed=100, extra="hold\npass_sleep: 0.1\n"))
    log = repo / ".git" / "kgit" / "worktrees" / "c1" / "events.log"
    log.unlink()  # the baseline's (whose reference cannot be held: the mode is not known yet)
    _round(repo, 100, "hold\npass_sleep: 1.5\n")
    result = run_kgit("round", "validate", "--json")
    assert result.json()["decision"] == "ROLLED BACK", result  # type: ignore[index]
    events = _events(repo)
    candidate_done = events[("candidate", "pass-end")][0]
    # The reference's process was up (imported, waiting) while the candidate's first pass ran,
    # and its own first pass began only after that pass ended: never both timing at once.
    assert events[("reference", "held")][0] < candidate_done - 1.0
    assert events[("reference", "pass-start")][0] >= candidate_done
    assert processes_under(repo) == []


def test_the_next_calibration_pair_starts_up_during_the_current_pairs_quads(
    kernel_repo: Path,
) -> None:
    # The baseline's cost: each later pair of processes imports while the pair before it times,
    # and still starts CUDA (its first pass) in a validation's order, the candidate's first.
    # Blocks of 0.1 s: a pair's quads outlast the next pair's start-up on a loaded machine too.
    extra = "hold\nexit_sleep: 0\nblock_sleep: 0.1\n"
    repo = _campaign(kernel_repo, KERNEL.format(speed=100, extra=extra))
    events = _events(repo)
    held = {side: events[(side, "held")] for side in ("candidate", "reference")}
    closed = events[("candidate", "exit-asked")]  # a pair ends when its sides are asked to exit
    passes = {side: events[(side, "pass-start")] for side in ("candidate", "reference")}
    assert len(held["candidate"]) == len(held["reference"]) == 2, events  # pairs 2 and 3
    assert len(closed) == 3 and len(passes["reference"]) == 3, events
    for pair in (1, 2):  # 0-based: the second and the third pair of processes
        for side in ("candidate", "reference"):
            assert held[side][pair - 1] < closed[pair - 1], (pair, side, events)
        # the candidate's first pass, then the reference's, once the pair before has ended
        first_candidate = passes["candidate"][pair]  # [0]: the baseline's own first pass
        assert closed[pair - 1] <= first_candidate <= passes["reference"][pair], events
    assert processes_under(repo) == []


def test_where_the_cpu_is_the_device_the_next_pair_starts_after_the_quads(
    kernel_repo: Path,
) -> None:
    # Importing beside the blocks would slow what they time: each later pair is launched once
    # the one before has ended.
    extra = "hold\nexit_sleep: 0\nblock_sleep: 0.1\ngpu: cpu\n"
    repo = _campaign(kernel_repo, KERNEL.format(speed=100, extra=extra))
    events = _events(repo)
    held = {side: events[(side, "held")] for side in ("candidate", "reference")}
    closed = events[("candidate", "exit-asked")]
    assert len(held["candidate"]) == len(held["reference"]) == 2, events  # pairs 2 and 3
    assert len(closed) == 3, events
    for pair in (1, 2):
        for side in ("candidate", "reference"):
            assert closed[pair - 1] <= held[side][pair - 1], (pair, side, events)
    assert processes_under(repo) == []


def test_both_workers_are_asked_to_exit_before_either_is_waited_for(kernel_repo: Path) -> None:
    # Each worker's teardown (a CUDA context on a GPU) runs beside the other's, not after it.
    repo = _campaign(kernel_repo, KERNEL.format(speed=100, extra="exit_sleep: 1\n"))
    _round(repo, 101, "exit_sleep: 1\n")
    log = repo / ".git" / "kgit" / "worktrees" / "c1" / "events.log"
    log.unlink()  # the baseline's
    result = run_kgit("round", "validate", "--json")
    assert result.code in (0, 1), result
    events = _events(repo)
    asked = [events[(side, "exit-asked")][0] for side in ("candidate", "reference")]
    done = [events[(side, "exit-done")][0] for side in ("candidate", "reference")]
    assert max(asked) < min(done), (asked, done)
    assert processes_under(repo) == []


def test_a_held_reference_is_stopped_when_the_candidate_fails(kernel_repo: Path) -> None:
    repo = _campaign(kernel_repo, KERNEL.format(speed=100, extra="hold\n"))
    label = json.loads(git(repo, "show", "refs/kgit/c1/campaign:state.json"))["representative"][0]
    _round(repo, 100, f"hold\nfail: {label}\npass_sleep: 1\n")
    calibrated = len(_events(repo).get(("reference", "pass-start"), []))
    assert calibrated == 3  # the baseline's calibration: three pairs of processes
    result = run_kgit("round", "validate", "--json")
    assert result.json()["decision"] == "ROLLED BACK", result  # type: ignore[index]
    assert "Check FAIL" in " ".join(result.json()["reasons"])  # type: ignore[index]
    # this validation never started the reference's pass
    assert len(_events(repo)[("reference", "pass-start")]) == calibrated
    assert left_under(repo) == []


def test_a_harness_without_worker_mode_runs_pass_by_pass(kernel_repo: Path) -> None:
    repo = _campaign(kernel_repo, "speed: 100\nnoise: 0.005\ntorch: 2.11\n")
    assert run_kgit("round", "start", "faster").code == 0
    (repo / "kernel.txt").write_text("speed: 110\nnoise: 0.005\ntorch: 2.11\n")
    assert commit(repo, "faster").returncode == 0
    data = run_kgit("-q", "round", "validate", "--json").json()
    assert data["decision"] == "ACCEPTED" and data["mode"] == "pass"  # type: ignore[index]
    assert "mode: pass" in _note(repo)


def test_a_worker_that_crashes_mid_request_is_an_error_and_leaves_nothing(
    worker_campaign: Path,
) -> None:
    repo = worker_campaign
    _round(repo, 110, "worker_crash_at: 2\n")
    result = run_kgit("-q", "round", "validate")
    assert result.code == 1 and "Traceback" not in result.err
    assert "exited in the middle of a block request" in result.err
    assert "crashing mid-request" in result.err  # its output tail is shown
    assert "status: ERROR" in _note(repo)
    assert left_under(repo) == []
    # The round stays open: a fixed commit validates.
    (repo / "kernel.txt").write_text(KERNEL.format(speed=110, extra=""))
    assert commit(repo, "fixed").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0


def test_a_worker_that_never_answers_times_out(kernel_repo: Path) -> None:
    manifest = kernel_repo / "manifest.yaml"
    manifest.write_text(manifest.read_text().replace("timeout_s: 30", "timeout_s: 3"))
    repo = _campaign(kernel_repo, KERNEL.format(speed=100, extra=""))
    _round(repo, 110, "worker_hang_at: 3\n")
    result = run_kgit("-q", "round", "validate")
    assert result.code == 1 and "did not answer a block request within 3 s" in result.err
    assert left_under(repo) == []


def test_a_worker_that_never_says_it_is_ready_times_out(kernel_repo: Path) -> None:
    """A first pass past the manifest's timeout crashed kgit (exit 3, UnboundLocalError) in CI
    instead of saying the harness timed out."""
    manifest = kernel_repo / "manifest.yaml"
    manifest.write_text(manifest.read_text().replace("timeout_s: 30", "timeout_s: 3"))
    repo = _campaign(kernel_repo, KERNEL.format(speed=100, extra=""))
    _round(repo, 110, "hang\n")
    result = run_kgit("-q", "round", "validate")
    assert result.code == 1, result
    assert "crashed" not in result.err and "timed out after 3 s" in result.err, result
    assert left_under(repo) == []


def test_validating_again_pools_the_evidence_instead_of_replacing_it(campaign: Path) -> None:
    """The shopping case: on one commit, a rolled-back verdict then a second validate. Alone,
    the second run (+5%) would be accepted; pooled with the first (-10%) it is not."""
    repo = campaign
    counter = repo.parent / "runs-counter"
    assert run_kgit("round", "start", "noisy").code == 0
    (repo / "kernel.txt").write_text(f"speeds: 90,105\ncounter: {counter}\n")
    assert commit(repo, "noisy").returncode == 0
    first = run_kgit("-q", "round", "validate", "--json").json()
    assert first["decision"] == "ROLLED BACK"  # type: ignore[index]
    second = run_kgit("-q", "round", "validate", "--json").json()
    assert second["decision"] == "ROLLED BACK", second  # type: ignore[index]
    assert second["validations"] == 2 and second["runs"] == 2  # type: ignore[index]
    note = _note(repo)
    assert "run_aggregates: [" in note and note.count("validations: 2") == 2
    refused = run_kgit("round", "accept")
    assert refused.code == 1 and "not accepted" in refused.err


def test_worker_evidence_pools_across_validations(worker_campaign: Path) -> None:
    repo = worker_campaign
    _round(repo, 104)
    first = run_kgit("-q", "round", "validate", "--json").json()
    second = run_kgit("-q", "round", "validate", "--json").json()
    assert second["validations"] == 2  # type: ignore[index]
    assert second["pairs"] >= first["pairs"] + 2  # type: ignore[index, operator]
    assert second["decision"] == "ACCEPTED"  # type: ignore[index]


def test_an_amend_after_validate_is_not_accepted(campaign: Path) -> None:
    repo = campaign
    assert run_kgit("round", "start", "faster").code == 0
    (repo / "kernel.txt").write_text("speed: 130\n")
    assert commit(repo, "fast").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0
    (repo / "kernel.txt").write_text("speed: 80\n")
    assert commit(repo, "slow", "--amend").returncode == 0
    refused = run_kgit("round", "accept")
    assert refused.code == 1 and "no verdict" in refused.err, refused
    assert git(repo, "rev-parse", "kgit/c1/best") != git(repo, "rev-parse", "HEAD")
    again = run_kgit("-q", "round", "validate", "--json").json()
    assert again["decision"] == "ROLLED BACK" and again["validations"] == 1  # type: ignore[index]


def test_a_forged_decision_in_the_note_is_not_accepted(campaign: Path) -> None:
    repo = campaign
    assert run_kgit("round", "start", "slower").code == 0
    (repo / "kernel.txt").write_text("speed: 80\n")
    assert commit(repo, "slow").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0
    forged = _note(repo).replace("decision: ROLLED BACK", "decision: ACCEPTED")
    git(repo, "notes", "--ref=refs/notes/kgit/c1/rounds", "add", "-f", "-m", forged, "HEAD")
    refused = run_kgit("round", "accept")
    assert refused.code == 1 and "note of round-2 changed after kgit wrote it" in refused.err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
@pytest.mark.parametrize(
    "kernel", ["speed: 110\nhang\n", KERNEL.format(speed=110, extra="worker_hang_at: 1\n")]
)
def test_a_signal_during_validate_leaves_no_harness_behind(
    worker_campaign: Path, signum: int, kernel: str
) -> None:
    repo = worker_campaign
    assert run_kgit("round", "start", "interrupted").code == 0
    (repo / "kernel.txt").write_text(kernel)
    assert commit(repo, "interrupted").returncode == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or "CONFIG" in k}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kgit", "-q", "round", "validate"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    deadline = time.monotonic() + 120  # a loaded 2-core machine starts it slowly
    while time.monotonic() < deadline and not processes_under(repo, "harness.py"):
        time.sleep(0.1)
    time.sleep(0.5)  # into the hang: the first pass, or the worker's first block
    assert processes_under(repo, "harness.py"), "the harness never started"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted by" in err and "Traceback" not in err
    assert left_under(repo) == []
    assert run_kgit("status").code == 0


SITECUSTOMIZE = """\
import atexit, sys
from pathlib import Path

def _double():
    args = sys.argv
    if "--summary-csv" not in args:
        return
    path = Path(args[args.index("--summary-csv") + 1])
    lines = path.read_text().splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        cells = line.split(",")
        cells[6] = str(float(cells[6]) * 2)  # Forward TFLOPS
        out.append(",".join(cells))
    path.write_text("\\n".join(out) + "\\n")

atexit.register(_double)
"""


def test_an_ignored_sitecustomize_in_the_work_tree_cannot_fake_the_numbers(campaign: Path) -> None:
    repo = campaign
    (repo / ".git" / "info" / "exclude").write_text("sitecustomize.py\n")
    assert run_kgit("round", "start", "20% slower").code == 0
    (repo / "kernel.txt").write_text("speed: 80\n")
    assert commit(repo, "slower").returncode == 0
    (repo / "sitecustomize.py").write_text(SITECUSTOMIZE)  # ignored: no commit, no diff
    data = run_kgit("-q", "round", "validate", "--json").json()
    assert data["decision"] == "ROLLED BACK", data  # type: ignore[index]
    assert data["delta_vs_best_pct"] < -15  # type: ignore[index, operator]


def test_status_points_to_edits_a_killed_commit_gate_left_aside(campaign: Path) -> None:
    # A SIGKILL cannot be caught: the gate's saved patch is what is left of the user's edits.
    folder = campaign / ".git" / "kgit" / "patches"
    folder.mkdir(parents=True, exist_ok=True)
    patch = folder / "unstaged-20261203-080000-1.patch"
    patch.write_text("diff --git a/x b/x\n")
    shown = run_kgit("status")
    assert shown.code == 0 and f"git apply {patch}" in shown.out
    assert run_kgit("status", "--json").json()["saved_patches"] == [str(patch)]  # type: ignore[index]


def test_deleting_the_note_does_not_reset_the_evidence(campaign: Path) -> None:
    repo = campaign
    counter = repo.parent / "runs-counter"
    assert run_kgit("round", "start", "noisy").code == 0
    (repo / "kernel.txt").write_text(f"speeds: 90,110\ncounter: {counter}\n")
    assert commit(repo, "noisy").returncode == 0
    assert run_kgit("-q", "round", "validate", "--json").json()["decision"] == "ROLLED BACK"  # type: ignore[index]
    git(repo, "notes", "--ref=refs/notes/kgit/c1/rounds", "remove", "HEAD")
    again = run_kgit("-q", "round", "validate", "--json").json()
    assert again["validations"] == 2 and again["runs"] == 2  # type: ignore[index]
    assert again["decision"] == "ROLLED BACK"  # type: ignore[index]


def test_accept_judges_the_recorded_evidence_not_the_notes(campaign: Path) -> None:
    """A note copied from a faster commit, with its tree rewritten, once got a slower kernel
    accepted: accept reads the evidence kgit recorded for the tree it is about."""
    repo = campaign
    assert run_kgit("round", "start", "faster, then slower").code == 0
    (repo / "kernel.txt").write_text("speed: 110\n")
    assert commit(repo, "faster").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0
    fast_note = _note(repo)
    (repo / "kernel.txt").write_text("speed: 70\n")
    assert commit(repo, "slower").returncode == 0
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    forged = "\n".join(
        f"tree: {tree}" if line.startswith("tree: ") else line for line in fast_note.splitlines()
    )
    git(repo, "notes", "--ref=refs/notes/kgit/c1/rounds", "add", "-f", "-m", forged, "HEAD")
    refused = run_kgit("round", "accept")
    assert refused.code == 1 and "has no verdict kgit recorded" in refused.err


def test_a_candidate_that_writes_into_the_reference_tree_is_an_error(kernel_repo: Path) -> None:
    repo = _campaign(kernel_repo, KERNEL.format(speed=100, extra=""))
    assert run_kgit("round", "start", "slow the reference down").code == 0
    (repo / "kernel.txt").write_text(KERNEL.format(speed=90, extra="tamper_reference\n"))
    assert commit(repo, "slower").returncode == 0
    result = run_kgit("-q", "round", "validate")
    assert result.code == 1 and "wrote where no measuring process may" in result.err
    assert "reference/kernel.txt" in result.err and "nothing was judged" in result.err
    # A measuring tree is made again before every pass: nothing there stays refused.
    assert not (repo / ".git" / "kgit" / "tainted.json").exists()


@pytest.mark.parametrize(
    "line",
    ['kgit-worker-ready: {"exit": "x"}', "kgit-worker-ready: {}", 'kgit-worker-ready: {"exit": 7}'],
)
def test_a_malformed_ready_line_is_a_harness_error(worker_campaign: Path, line: str) -> None:
    repo = worker_campaign
    _round(repo, 110, f"print_ready: {line}\n")
    result = run_kgit("-q", "round", "validate")
    assert result.code == 1 and "Traceback" not in result.err, result
    assert "said it was ready with" in result.err
    assert left_under(repo, "harness.py") == []


def test_the_block_replies_print_no_blank_lines(worker_campaign: Path) -> None:
    """Each reply marker follows a newline of its own; echoed, that newline was an empty line
    per block (12 blank lines between two quads' progress lines in a CPU session)."""
    repo = worker_campaign
    _round(repo, 103)
    result = run_kgit("round", "validate")
    assert result.code == 0, result
    quads = result.err.count("kgit: pair ")
    assert quads >= 4, result.err
    blank = sum(1 for line in result.err.splitlines() if not line.strip())
    assert blank < 4, result.err


def test_only_the_markers_own_newline_is_held_back(capfd: pytest.CaptureFixture[str]) -> None:
    """The empty line a marker's own newline makes is dropped from the echo; a line of the
    harness's that holds only spaces is its output, and is echoed, even when the marker's
    newline is what ends it."""
    from kgit.engine.measuring.sides.side_process import SideProcess as _Process
    from kgit.records.protocol import READY

    script = f"printf 'a\\n   \\n{READY}{{}}\\nb\\n\\n'"
    process = _Process(script, Path.cwd(), dict(os.environ), echo=True)
    process.proc.wait(timeout=30)
    process.reader.join(timeout=30)
    assert process.markers.get(timeout=5)[0] == "ready"
    assert capfd.readouterr().err == "a\n   \nb\n\n"  # the last empty line is the harness's


def test_a_candidate_out_of_memory_is_an_error_not_a_rollback(worker_campaign: Path) -> None:
    # The candidate's kernel is not wrong because the card was short: the round stays open.
    repo = worker_campaign
    _round(repo, 110, "oom: s64\n")
    result = run_kgit("-q", "round", "validate")
    assert result.code == 1 and "Traceback" not in result.err
    assert "out of memory: side B (the candidate) ran out of device memory on s64" in result.err
    assert "KGIT_MEMORY_SHARE" in result.err and "ROLLED BACK" not in result.out
    assert left_under(repo) == []
    (repo / "kernel.txt").write_text(KERNEL.format(speed=110, extra=""))
    assert commit(repo, "fits").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0
