"""`kgit round validate`'s text: which figure a change is of."""

from __future__ import annotations

from typing import Any

from kgit.records.notes import ShapeResult
from kgit.records.round_results import RoundVerdict
from kgit.views.commands import render_verdict


def _result(**extra: Any) -> RoundVerdict:
    fields: dict[str, Any] = {
        "campaign": "c1", "round": 2, "commit": "c" * 40, "status": "VALIDATED",
        "decision": "ACCEPTED", "cause": "improved", "reasons": ("improved",), "findings": (),
        "aggregate": 9.002e-05, "delta_vs_best_pct": 24.116, "delta_vs_baseline_pct": None,
        "shapes": (ShapeResult("g128", "PASS"),), "runs": None, "pairs": None,
        "validations": 1, "mode": "worker", "tree": None,
    }  # fmt: skip
    return RoundVerdict(**(fields | extra))


def test_a_paired_change_is_not_printed_as_the_first_pass_against_the_best() -> None:
    """Under the interleaved policy the change is the pairs' estimate; the aggregate beside it
    is the candidate's first pass, which need not be above the best's (a loaded CPU read it 18%
    under while the pairs read +24%): one line must not pass one off as the other's."""
    paired = render_verdict(_result(pairs=8))
    assert "+24.116% vs best over 8 pairs; aggregate 9.002e-05 in the candidate's first pass" in (
        paired
    )
    assert "(+24.116% vs best)" not in paired
    assert "aggregate 9.002e-05 (+24.116% vs best)" in render_verdict(_result())


def test_the_report_names_the_policy_in_its_own_words() -> None:
    """Each policy's module says what the report shows of it (kgit/engine/measuring/policies/policy.py)."""
    from kgit.engine.measuring.policies.policy import policy_named
    from kgit.records.manifest import Thresholds

    th = Thresholds(core_regression_pct=5.0, noise_band_pct=2.0)
    assert "re-measured" in policy_named("seed").words(th)
    interleaved = policy_named("interleaved").words(th)
    assert "A/B pairs" in interleaved and "re-measured" not in interleaved


def test_a_verdict_no_command_timed_carries_no_phases() -> None:
    """A worker's round line carries validate's verdict, which had no `phases` key before the
    typed results; `kgit round validate --json` sets it."""
    from dataclasses import replace

    from kgit.records.results import to_json

    assert "phases" not in to_json(_result())
    assert to_json(replace(_result(), phases={"gate": 1.0}))["phases"] == {"gate": 1.0}
