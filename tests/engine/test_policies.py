"""Decision policies: a third one is its module and a row of the table, and every recorded
verdict is the judge's function of the recorded evidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgit.engine.campaign import Campaign
from kgit.engine.measuring.policies.policy import Policy, policy_named
from kgit.engine.rounds.round import recorded_evidence
from kgit.errors import KgitError
from kgit.gitdoor import open_repo
from kgit.judge.decision import Rule, Standard, decide
from kgit.judge.rules import pairs_rule, seed_rule
from kgit.records.notes import ACCEPTED, ROLLED_BACK
from kgit.records.policies import POLICIES
from tests.conftest import commit, git, run_kgit, without_policy
from tests.engine import toy_policy


def _round(repo: Path, hypothesis: str, kernel: str) -> dict[str, object]:
    assert run_kgit("round", "start", hypothesis).code == 0
    (repo / "kernel.txt").write_text(kernel)
    assert commit(repo, hypothesis).returncode == 0
    result = run_kgit("-q", "round", "validate", "--json")
    assert result.code == 0, result
    data = result.json()
    assert isinstance(data, dict)
    return data


def test_a_third_policy_is_its_module_and_a_row_of_the_table(
    kernel_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The toy policy of tests/engine/toy_policy.py, registered in the table and nowhere else,
    is accepted by the manifest's schema, measures the baseline and the rounds, decides them,
    is what accept recomputes the verdict with, and names itself in the note and the report."""
    monkeypatch.setitem(POLICIES, "toy", toy_policy.__name__)
    manifest = kernel_repo / "manifest.yaml"
    manifest.write_text(without_policy(manifest) + "decision_policy: toy\n")
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    assert run_kgit("-q", "baseline").code == 0

    faster = _round(kernel_repo, "faster", "speed: 115\n")
    assert (faster["decision"], faster["reasons"]) == (ACCEPTED, [toy_policy.ACCEPT_REASON])
    note = git(kernel_repo, "notes", "--ref=refs/notes/kgit/c1/rounds", "show", "HEAD")
    assert "policy: toy" in note and "toy_passes: 1" in note
    assert run_kgit("round", "accept").code == 0

    uneven = _round(kernel_repo, "uneven", "speed: 130\nspeed.s64: 100\n")
    assert uneven["decision"] == ROLLED_BACK
    assert uneven["reasons"] == ["toy rule: behind on ['s64']"]
    # Accept recomputes the verdict with the toy's rule: the recorded decision is not enough.
    refused = run_kgit("round", "accept")
    assert refused.code == 1 and "not accepted" in refused.err
    assert run_kgit("round", "rollback", "--reason", "s64 behind").code == 0

    report = run_kgit("report")
    assert report.code == 0, report
    assert f"Decision policy: `toy` ({toy_policy.WORDS})" in report.out


def test_a_manifest_naming_no_policy_of_the_table_is_refused(kernel_repo: Path) -> None:
    manifest = kernel_repo / "manifest.yaml"
    manifest.write_text(without_policy(manifest) + "decision_policy: toy\n")
    refused = run_kgit("init", "c1", "-m", "manifest.yaml")
    assert refused.code == 2
    assert "decision_policy: 'toy' is not one of ['seed', 'interleaved']" in refused.err


def test_every_policy_of_the_table_implements_the_protocol(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in POLICIES:
        assert isinstance(policy_named(name), Policy)
    with pytest.raises(KgitError, match="no decision policy 'vibes' in this kgit"):
        policy_named("vibes")
    monkeypatch.setitem(POLICIES, "hollow", "kgit.records.policies")
    with pytest.raises(TypeError, match="does not implement the Policy protocol"):
        policy_named("hollow")


INTERLEAVED = "decision_policy: interleaved\ninterleaved: {min_pairs: 3, max_pairs: 4, calibration_pairs: 3}\n"


@pytest.mark.parametrize(
    ("policy", "kernel", "rule"),
    [
        ("", "speed: 115\nnoise: 0.01\ntorch: 2.11\n", seed_rule),
        (INTERLEAVED, "speed: 115\nnoise: 0.01\ntorch: 2.11\n", pairs_rule),
        (INTERLEAVED, "speed: 92\nnoise: 0.01\ntorch: 2.11\n", pairs_rule),
    ],
)
def test_a_recorded_verdict_is_the_judge_function_of_its_recorded_evidence(
    kernel_repo: Path, policy: str, kernel: str, rule: Rule
) -> None:
    """A real round on the fake harness, then `decide` over what its note recorded (the
    evidence, the baseline's floors, the best line's values): the note's verdict again."""
    (kernel_repo / "kernel.txt").write_text("speed: 100\nnoise: 0.01\ntorch: 2.11\n")
    git(kernel_repo, "commit", "-qam", "noisy kernel")
    if policy:
        manifest = kernel_repo / "manifest.yaml"
        manifest.write_text(without_policy(manifest) + policy)
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    assert run_kgit("-q", "baseline").code == 0
    _round(kernel_repo, "a change", kernel)

    campaign = Campaign.load(open_repo(kernel_repo), "c1")
    (_, baseline), (_, note) = campaign.all_rounds()
    # As accept reads it: from the record, not from the note.
    assert note.tree is not None
    evidence = recorded_evidence(campaign, note.round, note.tree)
    assert evidence is not None and (evidence.pairs if policy else evidence.runs)
    floors = (
        {label: campaign.state.noise_floors[label] for label in evidence.labels} if policy else {}
    )
    manifest = campaign.manifest
    best = {label: baseline.values()[label] for label in evidence.labels}
    standard = Standard(best, manifest.thresholds, floors, "best", manifest.policy_settings)
    verdict = decide(evidence, standard, rule).verdict
    assert (verdict.decision, verdict.cause, verdict.reasons) == (
        note.decision,
        note.cause,
        note.reasons,
    )
    assert note.delta_vs_best_pct == round(verdict.gain_pct or 0.0, 4)
