"""`kgit round validate`'s text: which figure a change is of."""

from __future__ import annotations

from typing import Any

from kgit.views.commands import render_verdict


def _result(**extra: Any) -> dict[str, Any]:
    return {
        "round": 2, "decision": "ACCEPTED", "status": "VALIDATED", "reasons": ["improved"],
        "shapes": [{"label": "g128", "check": "PASS"}], "aggregate": 9.002e-05,
        "delta_vs_best_pct": 24.116, "pairs": None, **extra,
    }  # fmt: skip


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
