"""One judgement of a round (kgit/judge/judgement.py): validate records it, accept replays it from
the record and requires that it accepts, finish reports it; a recorded verdict equals it replayed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import kgit.judge.judgement as judgement
from kgit.judge.decision import Judged
from kgit.judge.verdict import Verdict
from kgit.records.notes import ROLLED_BACK
from tests.conftest import commit, git, run_kgit

VETO = "vetoed by the one judgement"


def _vetoing(*_: object, **__: object) -> Judged:
    return Judged(Verdict(ROLLED_BACK, "veto", [VETO]))


def _round(repo: Path, hypothesis: str, speed: int) -> None:
    assert run_kgit("round", "start", hypothesis).code == 0
    (repo / "kernel.txt").write_text(f"speed: {speed}\n")
    done = commit(repo, hypothesis)
    assert done.returncode == 0, done.stderr


def _replayed_and_recorded(repo: Path) -> tuple[Verdict, tuple[str, str, list[str]]]:
    from kgit.engine.campaign import Campaign
    from kgit.engine.rounds.accept import replayed
    from kgit.engine.rounds.round import recorded_evidence
    from kgit.gitdoor import open_repo

    campaign = Campaign.load(open_repo(repo), "c1")
    tip = git(repo, "rev-parse", "HEAD")
    note = campaign.read_round(tip)
    assert note is not None and note.tree is not None
    evidence = recorded_evidence(campaign, note.round, note.tree)
    recorded = (note.decision or "", note.cause or "", list(note.reasons))
    return replayed(campaign, note, evidence, tip).verdict, recorded


def test_validate_records_the_one_judgement(
    campaign: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _round(campaign, "twice as fast", 200)
    monkeypatch.setattr(judgement, "decide", _vetoing)
    verdict = run_kgit("round", "validate", "--json").json()
    assert isinstance(verdict, dict)
    assert verdict["decision"] == ROLLED_BACK and verdict["reasons"] == [VETO], verdict


def test_accept_requires_the_one_judgement_replayed(
    campaign: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _round(campaign, "twice as fast", 200)
    assert run_kgit("round", "validate", "--json").json()["decision"] == "ACCEPTED"  # type: ignore[index]
    with monkeypatch.context() as patched:
        patched.setattr(judgement, "decide", _vetoing)
        refused = run_kgit("round", "accept")
    assert refused.code == 1 and VETO in refused.err, refused
    assert run_kgit("round", "accept").code == 0


def test_finish_reports_the_one_judgement(campaign: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _round(campaign, "twice as fast", 200)
    assert run_kgit("round", "validate", "--json").json()["decision"] == "ACCEPTED"  # type: ignore[index]
    assert run_kgit("round", "accept").code == 0
    monkeypatch.setattr(judgement, "decide", _vetoing)
    refused = run_kgit("finish")
    assert refused.code == 1, refused
    assert f"full validation against the baseline: {VETO}" in refused.err


@pytest.mark.parametrize(("speed", "decision"), [(200, "ACCEPTED"), (50, ROLLED_BACK)])
def test_a_recorded_verdict_equals_it_replayed(campaign: Path, speed: int, decision: str) -> None:
    _round(campaign, f"speed {speed}", speed)
    assert run_kgit("round", "validate", "--json").json()["decision"] == decision  # type: ignore[index]
    replayed, recorded = _replayed_and_recorded(campaign)
    assert (replayed.decision, replayed.cause, replayed.reasons) == recorded


def test_a_verdict_the_facts_decide_equals_it_replayed(campaign: Path) -> None:
    assert run_kgit("round", "start", "tune the check").code == 0
    (campaign / "check.py").write_text((campaign / "check.py").read_text() + "\n# tuned\n")
    assert commit(campaign, "tune the check").returncode == 0
    assert run_kgit("round", "validate", "--json").json()["cause"] == "protected-path"  # type: ignore[index]
    replayed, recorded = _replayed_and_recorded(campaign)
    assert (replayed.decision, replayed.cause, replayed.reasons) == recorded
