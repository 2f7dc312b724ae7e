"""A faster kernel whose output lost precision against the baseline's (issue 35, item 6: "a
precision lower than the manifest's dtype that still passes a loose tolerance") FAILs the shape
at validate, whatever the dtype's threshold let through."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import commit, run_kgit


def test_a_faster_kernel_with_a_lower_precision_fails(campaign: Path) -> None:
    repo = campaign
    assert run_kgit("round", "start", "fp8 inside").code == 0
    (repo / "kernel.txt").write_text("speed: 180\nsnr: 31.0\n")  # over bf16's 30 dB threshold
    assert commit(repo, "fp8 inside").returncode == 0
    verdict = run_kgit("-q", "round", "validate")
    assert verdict.code == 0 and "ROLLED BACK" in verdict.out and "Check FAIL" in verdict.out
    assert "Check FAIL by precision: shape s64: out_snr 31.0 dB, 19.0 dB under" in verdict.err
    assert run_kgit("round", "accept").code == 1


def test_a_few_db_less_is_an_honest_change(campaign: Path) -> None:
    repo = campaign
    assert run_kgit("round", "start", "split-K").code == 0
    (repo / "kernel.txt").write_text("speed: 180\nsnr: 46.0\n")
    assert commit(repo, "split-K").returncode == 0
    verdict = run_kgit("-q", "round", "validate")
    assert verdict.code == 0 and "ACCEPTED" in verdict.out, verdict
