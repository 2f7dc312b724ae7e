"""decision_policy: interleaved through the CLI: A/A calibration, A/B pairs, fingerprints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Built, baselined, commit, git, run_kgit, without_policy

POLICY = """\
decision_policy: interleaved
interleaved: {min_pairs: 3, max_pairs: 4, calibration_pairs: 3}
"""


@pytest.fixture
def ab_campaign(kernel_repo: Path, built: Built, tmp_path: Path) -> Path:
    kernel = "speed: 100\nnoise: 0.01\ntorch: 2.11\n"
    built.lay("ab_campaign", tmp_path, lambda: baselined(kernel_repo, kernel, POLICY))
    return kernel_repo


def test_baseline_calibrates_noise_floors_and_records_the_environment(ab_campaign: Path) -> None:
    state = json.loads(git(ab_campaign, "show", "refs/kgit/c1/campaign:state.json"))
    assert set(state["noise_floors"]) == set(state["representative"])
    assert all(0.005 <= f < 0.2 for f in state["noise_floors"].values())  # min_effect_pct 0.5
    kgit_said = ("python_", "environment", "kgit_measuring")
    harness_said = {k: v for k, v in state["fingerprint"].items() if not k.startswith(kgit_said)}
    assert harness_said == {
        "gpu": "FakeGPU",
        "torch": "2.11",
        "gpu_index": "0",
        "gpu_uuid": "GPU-fake-0",
    }
    # kgit's own probe of the harness's interpreter (kgit/engine/measuring/device/pyenv.py), and the
    # world it ran the harness in (kgit/engine/measuring/isolation/world.py): the variables it passed, and
    # the digest of kgit's measuring code it copied
    assert " files, sha256 " in state["fingerprint"]["python_startup"]
    passed = json.loads(state["fingerprint"]["environment"])
    assert "PATH" in passed and not any(k.startswith(("PYTHON", "LD_", "HOME")) for k in passed)
    assert len(state["fingerprint"]["kgit_measuring"]) == 16
    assert (
        ab_campaign / ".git" / "kgit" / "worktrees" / "c1" / "reference" / "kernel.txt"
    ).exists()


def test_a_real_gain_is_accepted_and_a_loss_rolled_back(ab_campaign: Path) -> None:
    repo = ab_campaign
    run_kgit("round", "start", "15% faster")
    (repo / "kernel.txt").write_text("speed: 115\nnoise: 0.01\ntorch: 2.11\n")
    assert commit(repo, "faster").returncode == 0
    result = run_kgit("-q", "round", "validate", "--json")
    data = result.json()
    assert data["decision"] == "ACCEPTED", result  # type: ignore[index]
    assert 12 < data["delta_vs_best_pct"] < 18  # type: ignore[index, operator]
    note = git(repo, "notes", "--ref=refs/notes/kgit/c1/rounds", "show", "HEAD")
    assert "policy: interleaved" in note and "call: better" in note
    assert "runs/round-2/validation-1/reference-1.csv" in git(
        repo, "ls-tree", "-r", "--name-only", "refs/kgit/c1/campaign"
    )
    assert run_kgit("round", "accept").code == 0

    run_kgit("round", "start", "20% slower")
    (repo / "kernel.txt").write_text("speed: 92\nnoise: 0.01\ntorch: 2.11\n")
    assert commit(repo, "slower").returncode == 0
    data = run_kgit("-q", "round", "validate", "--json").json()
    assert data["decision"] == "ROLLED BACK"  # type: ignore[index]
    assert "slower" in " ".join(data["reasons"])  # type: ignore[index, arg-type]


def test_a_changed_environment_is_refused(ab_campaign: Path) -> None:
    repo = ab_campaign
    run_kgit("round", "start", "same kernel, new torch")
    (repo / "kernel.txt").write_text("speed: 115\nnoise: 0.01\ntorch: 2.12\n")
    assert commit(repo, "upgrade").returncode == 0
    result = run_kgit("-q", "round", "validate")
    assert result.code == 1
    assert "environment changed since the baseline: torch 2.11 -> 2.12" in result.err
    assert "start a new campaign from the best line here (kgit init NAME" in result.err


def test_finish_judges_the_best_line_against_the_baseline_in_pairs(ab_campaign: Path) -> None:
    repo = ab_campaign
    labels = ["s64", "s128", "s256", "s512", "s1024", "s2048"]
    representative = run_kgit("status", "--json").json()["representative_shapes"]  # type: ignore[index]
    unmeasured = next(label for label in labels if label not in representative)
    run_kgit("round", "start", "15% faster")
    (repo / "kernel.txt").write_text("speed: 115\nnoise: 0.01\ntorch: 2.11\n")
    assert commit(repo, "faster").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0
    assert run_kgit("round", "accept").code == 0
    result = run_kgit("-q", "finish", "--json")
    assert result.code == 0, result
    data = result.json()
    assert "vs baseline, better (CI" in data["verdict"][0]  # type: ignore[index]
    assert 12 < data["gain_pct"] < 18  # type: ignore[index, operator]
    shapes = {s["label"]: s for s in data["shapes"]}  # type: ignore[index, union-attr]
    assert set(shapes) == set(labels)  # every active shape, not only the representative ones
    assert 12 < shapes[unmeasured]["delta_pct"] < 18
    assert 1.12 < shapes[unmeasured]["final"] / shapes[unmeasured]["baseline"] < 1.18
    # The change finish measured, as every view spells a change: paired, with its interval.
    gain = data["vs_baseline"]  # type: ignore[index]
    assert gain["basis"] == "paired" and gain["pct"] == round(data["gain_pct"], 4)  # type: ignore[index]
    assert gain["low"] < gain["pct"] < gain["high"] and gain["chain"] == []
    assert shapes[unmeasured]["vs_baseline"]["basis"] == "paired"
    text = run_kgit("show", "2").out  # the round's own figures stay its pairs'
    assert "(CI " in text


def test_finish_in_pairs_refuses_a_shape_the_rounds_never_measured(ab_campaign: Path) -> None:
    repo = ab_campaign
    representative = run_kgit("status", "--json").json()["representative_shapes"]  # type: ignore[index]
    unmeasured = next(
        s for s in ("s64", "s128", "s256", "s512", "s1024", "s2048") if s not in representative
    )
    run_kgit("round", "start", "tuned for the big shapes")
    (repo / "kernel.txt").write_text(
        f"speed: 120\nspeed.{unmeasured}: 50\nnoise: 0.01\ntorch: 2.11\n"
    )
    assert commit(repo, "tuned").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0
    assert run_kgit("round", "accept").code == 0
    result = run_kgit("-q", "finish")
    assert result.code == 1, result
    assert "full validation against the baseline: core shape down" in result.err
    assert unmeasured in result.err


def test_a_manifest_without_a_policy_is_judged_in_pairs_and_told_the_cost(
    kernel_repo: Path,
) -> None:
    """The default policy on a harness that is no resident harness: the baseline calibrates
    floors, and says once that every pair is two whole passes, with the two ways out."""
    manifest = kernel_repo / "manifest.yaml"
    manifest.write_text(without_policy(manifest) + "interleaved: {calibration_pairs: 3}\n")
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    result = run_kgit("-q", "baseline")  # a warning: -q does not hide it
    assert result.code == 0, result
    assert result.err.count("kgit: WARNING: the harness is not a resident harness") == 1
    assert "`decision_policy: seed` judges one pass" in result.err
    state = json.loads(git(kernel_repo, "show", "refs/kgit/c1/campaign:state.json"))
    assert set(state["noise_floors"]) == set(state["representative"])
