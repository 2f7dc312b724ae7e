"""A failing shape is a verdict, and the campaign stays readable after it (baseline or round)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import commit, run_kgit


def _readable(*commands: tuple[str, ...]) -> None:
    for args in commands:
        result = run_kgit(*args)
        assert result.code == 0, (args, result)
        assert "Traceback" not in result.err


def test_a_round_with_a_fail_shape_leaves_the_campaign_readable(campaign: Path) -> None:
    repo = campaign
    assert run_kgit("round", "start", "drop the tail mask").code == 0
    (repo / "kernel.txt").write_text("speed: 120\nfail: s64\n")
    assert commit(repo, "f").returncode == 0
    verdict = run_kgit("round", "validate", "--json")
    assert verdict.code == 0, verdict
    assert verdict.json()["decision"] == "ROLLED BACK"  # type: ignore[index]
    _readable(("status",), ("log",), ("log", "--json"), ("show", "2"), ("status", "--json"))
    shapes = {s["label"]: s for s in run_kgit("show", "2", "--json").json()["note"]["shapes"]}  # type: ignore[index]
    assert shapes["s64"]["check"] == "FAIL" and shapes["s64"]["value"] is None
    assert run_kgit("show", "2", "--json").json()["note"].get("aggregate") is None  # type: ignore[index, union-attr]
    assert run_kgit("round", "rollback", "--reason", "s64 fails").code == 0
    _readable(("status",), ("log",), ("report",))
    assert run_kgit("round", "start", "next idea").code == 0


def test_a_baseline_with_a_fail_shape_leaves_the_campaign_readable(kernel_repo: Path) -> None:
    repo = kernel_repo
    (repo / "kernel.txt").write_text("speed: 100\nfail: s2048\n")
    from tests.conftest import git

    git(repo, "commit", "-qam", "s2048 fails at baseline")
    assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
    baseline = run_kgit("baseline")
    assert "Traceback" not in baseline.err
    _readable(("status",), ("log",), ("log", "--json"), ("show", "1"))


def test_an_out_of_memory_at_baseline_is_reported_as_such(kernel_repo: Path) -> None:
    # A shape that ran out of device memory says nothing of the kernel: no FAIL row recorded,
    # no "unreliable machine", but which side, which shape, the bytes asked and the knob.
    repo = kernel_repo
    (repo / "kernel.txt").write_text("speed: 100\noom: s2048\n")
    from tests.conftest import git

    git(repo, "commit", "-qam", "s2048 runs out of memory")
    assert run_kgit("init", "c1", "--manifest", "manifest.yaml").code == 0
    baseline = run_kgit("baseline")
    assert baseline.code == 1, baseline
    assert "out of memory: the harness ran out of device memory on s2048" in baseline.err
    assert "it asked for 0.50 GiB" in baseline.err and "KGIT_MEMORY_SHARE" in baseline.err
    assert "not reliable" not in baseline.err and "Traceback" not in baseline.err
