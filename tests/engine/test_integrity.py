"""The physical floor and rule 11 through the real CLI and hook: a rate past the device's peak
and a shortcut that vanishes in training are rolled back at validate, refused at accept and at
finish, and `kgit show` says why."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Built, commit, git, record_note, run_kgit, without_policy

# The seed's rule, whose run count the scripted speeds (one per run) are written for; the
# interleaved policy's floor is tested with workers below. Three shapes: the fake harness runs shape sN at speed x (1 + log2(N/64)/10) TFLOPS: s64 at
# 1.0x, s128 at 1.1x, s256 at 1.2x the kernel's `speed`.
MANIFEST = """\
target_op: gemm
target_backend: FAKE
target_gpu: CPU
primary_metric: Forward TFLOPS
kernel_source: [kernel.txt, ops.py]
test_command: {python} check.py
quick_command: {python} harness.py
timeout_s: 30
decision_policy: seed
target_shapes:
  - {{label: s64, M: 64, N: 64, K: 64, dtype: bf16}}
  - {{label: s128, M: 128, N: 128, K: 128, dtype: bf16}}
  - {{label: s256, M: 256, N: 256, K: 256, dtype: bf16}}
"""
PEAKS = "peaks: {tflops: 500}\n"  # the CPU has no datasheet entry: the test configures one

OPS = """\
import torch

_W = {}


def linear(x, weight):
    return x @ weight
"""


def _campaign(repo: Path, extra: str = PEAKS, kernel: str = "speed: 100\n") -> Path:
    (repo / "kernel.txt").write_text(kernel)
    (repo / "ops.py").write_text(OPS)
    git(repo, "add", "kernel.txt", "ops.py")
    git(repo, "commit", "-qm", "kernel and ops")
    (repo / "manifest.yaml").write_text(MANIFEST.format(python=sys.executable) + extra)
    assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
    return repo


@pytest.fixture
def floored(kernel_repo: Path, built: Built, tmp_path: Path) -> Path:
    def build() -> None:
        _campaign(kernel_repo)
        result = run_kgit("baseline")
        assert result.code == 0, result
        assert "physical floor: an unnamed device (manifest peaks)" in result.err

    built.lay("floored", tmp_path, build)
    return kernel_repo


def _round(repo: Path, hypothesis: str, kernel: str | None = None, ops: str | None = None) -> None:
    assert run_kgit("round", "start", hypothesis).code == 0
    if kernel is not None:
        (repo / "kernel.txt").write_text(kernel)
    if ops is not None:
        (repo / "ops.py").write_text(ops)
    done = commit(repo, hypothesis)
    assert done.returncode == 0, done.stderr


# -- the physical floor -----------------------------------------------------------------------


def test_a_rate_past_the_peak_is_an_error_never_a_gain(floored: Path) -> None:
    repo = floored
    _round(repo, "skip the K loop", kernel="speed: 1000\n")  # 1000-1200 TFLOPS on a 500 peak
    verdict = run_kgit("round", "validate", "--json")
    assert verdict.code == 0, verdict
    data = verdict.json()
    assert isinstance(data, dict)
    assert data["decision"] == "ROLLED BACK" and data["cause"] == "impossible"
    assert data["reasons"][-1] == (
        "physical floor: shape s256: Forward TFLOPS 1200 is 240% of the peak (500 TFLOPS for "
        "any precision, an unnamed device, manifest peaks; limit 550) (and 1 more rate(s) of the "
        "shape): faster than the hardware allows (a timer that missed the work, a wrong FLOP or "
        "byte count, or work not done)"
    )
    assert {s["label"]: s["check"] for s in data["shapes"]} == dict.fromkeys(
        ("s64", "s128", "s256"), "ERROR"
    )
    assert data["aggregate"] is None  # never an improvement
    refused = run_kgit("round", "accept")
    assert refused.code == 1 and "ROLLED BACK" in refused.err
    shown = run_kgit("show", "2")
    assert "ERROR (faster than the device allows) on s64, s128, s256" in shown.out
    assert "| % of peak |" in shown.out.replace("  ", " ") or "% of peak" in shown.out
    pcts = {
        s["shape"]: s["pct_of_peak"]
        for s in run_kgit("show", "2", "--json").json()["summary"]["shapes"]
    }  # type: ignore[index]
    assert pcts == pytest.approx({"s64": 200.0, "s128": 220.0, "s256": 240.0})


def test_just_under_the_margin_passes_and_shows_its_percent(floored: Path) -> None:
    repo = floored
    # 10% margin over a 500 TFLOPS peak: s256 at 458 x 1.2 = 549.6 is under 550, and is kept.
    _round(repo, "as fast as the floor allows", kernel="speed: 458\n")
    verdict = run_kgit("round", "validate", "--json").json()
    assert verdict["decision"] == "ACCEPTED", verdict  # type: ignore[index]
    assert run_kgit("round", "accept").code == 0
    report = run_kgit("report", "--json").json()
    assert isinstance(report, dict)
    assert report["target"]["peaks"]["tflops"] == {"*": 500.0}
    best = {r["shape"]: r["best_pct_of_peak"] for r in report["best_vs_baseline"]}
    assert best["s256"] == pytest.approx(109.92)
    assert report["termination"]["hardware_efficiency"]["measured"] is True
    markdown = run_kgit("report").out
    assert "best % of peak" in markdown and "109.9%" in markdown


def test_accept_rechecks_the_floor_from_the_recorded_evidence(floored: Path) -> None:
    repo = floored
    _round(repo, "skip the K loop", kernel="speed: 1000\n")
    assert run_kgit("-q", "round", "validate").code == 0
    note = git(repo, "notes", "--ref=refs/notes/kgit/c1/rounds", "show", "HEAD")
    forged = note.replace("decision: ROLLED BACK", "decision: ACCEPTED")
    # Forged in the campaign record itself (a note edited on the notes ref alone is refused
    # earlier, as changed): the recorded rates are what accept holds to the peaks.
    record_note(repo, "rounds", "HEAD", (forged + "\n").encode())
    refused = run_kgit("round", "accept")
    assert refused.code == 1 and "faster than the device allows" in refused.err
    assert git(repo, "rev-parse", "kgit/c1/best") != git(repo, "rev-parse", "HEAD")


def test_a_baseline_past_the_peak_is_refused(kernel_repo: Path) -> None:
    _campaign(kernel_repo, "peaks: {tflops: 50, margin_pct: 20}\n")
    refused = run_kgit("baseline")
    assert refused.code == 1, refused
    assert "baseline refused: 3 shape(s) past what the device allows" in refused.err
    assert "Forward TFLOPS 100 is 200% of the peak (50 TFLOPS for any precision" in refused.err
    assert "limit 60)" in refused.err
    assert run_kgit("status", "--json").json()["baselined"] is False  # type: ignore[index]


def test_the_datasheet_table_by_gpu_name_per_precision(kernel_repo: Path) -> None:
    """An H200 with bf16 shapes is held to 989.5 TFLOPS (+10%), not to its fp8 figure."""
    _campaign(kernel_repo, "", kernel="speed: 100\ngpu: NVIDIA H200\n")
    result = run_kgit("baseline")
    assert result.code == 0, result
    assert "physical floor: NVIDIA H200 SXM (datasheet)" in result.err
    _round(kernel_repo, "faster", kernel="speed: 1000\ngpu: NVIDIA H200\n")
    data = run_kgit("round", "validate", "--json").json()
    assert isinstance(data, dict) and data["cause"] == "impossible"
    over = [r for r in data["reasons"] if r.startswith("physical floor")]
    assert [r.split(":")[1].strip() for r in over] == ["shape s128", "shape s256"]  # 1100, 1200
    assert "of the peak (989.5 TFLOPS bf16, NVIDIA H200 SXM, datasheet; limit 1088" in over[0]


def test_finish_refuses_a_best_line_that_measures_past_the_peak(
    floored: Path, tmp_path: Path
) -> None:
    repo = floored
    counter = tmp_path / "runs"
    # Honest in its round's validation, impossible when finish measures it again.
    _round(repo, "faster", kernel=f"speeds: 110, 2000\ncounter: {counter}\n")
    assert run_kgit("round", "validate", "--json").json()["decision"] == "ACCEPTED"  # type: ignore[index]
    assert run_kgit("round", "accept").code == 0
    refused = run_kgit("finish")
    assert refused.code == 1, refused
    assert "full validation: physical floor: shape s64: Forward TFLOPS 2000" in refused.err


def test_a_campaign_without_peaks_says_it_checks_no_rate(kernel_repo: Path) -> None:
    _campaign(kernel_repo, "")
    result = run_kgit("baseline")
    assert result.code == 0 and "no peaks known for this device" in result.err
    _round(kernel_repo, "much faster", kernel="speed: 100000\n")
    assert run_kgit("round", "validate", "--json").json()["decision"] == "ACCEPTED"  # type: ignore[index]


# -- rule 11 ----------------------------------------------------------------------------------

ID_CACHE = (
    OPS
    + """

_OUT = {}


def cached_linear(x, weight):
    key = (
        id(x),
        x._version,
    )
    if key in _OUT:
        return _OUT[key]
    _OUT[key] = linear(x, weight)
    return _OUT[key]
"""
)

WEIGHT_CACHE = (
    OPS
    + """

def transposed(weight):
    key = (id(weight), weight._version, weight.shape)
    if key not in _W:
        _W[key] = weight.t().contiguous()
    return _W[key]
"""
)


def test_an_activation_cache_is_rejected_with_file_and_line(floored: Path) -> None:
    repo = floored
    _round(repo, "cache the output", kernel="speed: 150\n", ops=ID_CACHE)
    verdict = run_kgit("round", "validate", "--json")
    assert verdict.code == 0, verdict
    data = verdict.json()
    assert isinstance(data, dict)
    assert data["decision"] == "ROLLED BACK" and data["cause"] == "rule-11"
    assert (
        data["reasons"][0]
        == "training shortcut: ops.py:18: identity-keyed cache (x): `if key in _OUT:`"
    )
    assert [f["where"] for f in data["findings"]] == ["ops.py:18"]  # one cache, one finding
    assert data["runs"] is None  # judged before anything was measured
    refused = run_kgit("round", "accept")
    assert refused.code == 1 and "ROLLED BACK" in refused.err
    shown = run_kgit("show", "2")
    assert "Real-training applicability: training shortcuts" in shown.out
    assert "ops.py:18" in shown.out and "identity-keyed cache" in shown.out
    assert run_kgit("round", "rollback", "--reason", "rule 11").code == 0


def test_a_weight_cache_passes(floored: Path) -> None:
    repo = floored
    _round(repo, "cache the transposed weight", kernel="speed: 150\n", ops=WEIGHT_CACHE)
    verdict = run_kgit("round", "validate", "--json").json()
    assert verdict["decision"] == "ACCEPTED" and verdict["findings"] == []  # type: ignore[index]
    assert run_kgit("round", "accept").code == 0


def test_accept_rechecks_rule_11_on_the_commit(
    floored: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A verdict recorded without the check (an older kgit) is not accepted on its word."""
    import kgit.engine.rounds.validate as round_validate
    from kgit.engine.rounds.round import change_facts
    from kgit.judge.judgement import Facts
    from kgit.judge.rule11 import Finding

    repo = floored
    _round(repo, "cache the output", kernel="speed: 150\n", ops=ID_CACHE)

    def without_shortcuts(*args: Any) -> tuple[Facts, list[Finding]]:
        facts, _ = change_facts(*args)
        return replace(facts, shortcuts=()), []

    with monkeypatch.context() as patched:
        patched.setattr(round_validate, "change_facts", without_shortcuts)
        assert run_kgit("round", "validate", "--json").json()["decision"] == "ACCEPTED"  # type: ignore[index]
    refused = run_kgit("round", "accept")
    assert refused.code == 1, refused
    assert "adds 1 training shortcut(s) or tampering" in refused.err and "ops.py:18" in refused.err


def test_the_floor_holds_for_interleaved_workers(kernel_repo: Path) -> None:
    """Under decision_policy: interleaved with resident harnesses the blocks' rates are held to
    the peak too (the candidate's first pass and every quad)."""
    from tests.engine.test_resident_harness import KERNEL, POLICY

    repo = kernel_repo
    (repo / "kernel.txt").write_text(KERNEL.format(speed=100, extra=""))
    git(repo, "commit", "-qam", "worker kernel")
    manifest = repo / "manifest.yaml"
    manifest.write_text(without_policy(manifest) + POLICY + PEAKS)
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    assert run_kgit("-q", "baseline").code == 0
    assert run_kgit("round", "start", "skip the K loop").code == 0
    (repo / "kernel.txt").write_text(KERNEL.format(speed=1000, extra=""))
    assert commit(repo, "skip").returncode == 0
    data = run_kgit("-q", "round", "validate", "--json").json()
    assert isinstance(data, dict)
    assert data["mode"] == "worker" and data["cause"] == "impossible", data
    assert data["decision"] == "ROLLED BACK"
