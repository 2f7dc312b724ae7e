"""Every stored format reads back what its writer wrote: write -> read -> equal.

A FAIL shape's note once could not be read back (the writer drops `value: None`, the reader
required it), and every later command crashed: these properties cover each field of each format.
"""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kgit.records.notes import (
    CampaignState,
    GateNote,
    OpenRound,
    RoundNote,
    ShapeResult,
)
from kgit.records.tips import Tip

# Text a person or an agent may type, minus lone surrogates (not encodable in any file).
text = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)
# The round note keeps 6 significant digits (people read it; the CSV note is byte-exact).
number = st.floats(allow_nan=False, width=64).map(lambda v: float(f"{v:.6g}"))
maybe = st.none().__or__
sha = st.text("0123456789abcdef", min_size=40, max_size=40)

shape = st.builds(
    ShapeResult,
    label=text,
    check=st.sampled_from(["PASS", "FAIL", "ERROR"]),
    value=maybe(number),
    best=maybe(number),
    delta_pct=maybe(number),
    vs_baseline_pct=maybe(number),
)
round_note = st.builds(
    RoundNote,
    campaign=text,
    round=st.integers(1, 10_000),
    status=st.sampled_from(["BASELINE", "VALIDATED", "ERROR", "ACCEPTED", "ROLLED BACK"]),
    hypothesis=text,
    metric=text,
    level=st.sampled_from(["quick", "full"]),
    parent=maybe(sha),
    decision=maybe(text),
    reasons=st.lists(text, max_size=3),
    aggregate=maybe(number),
    best_aggregate=maybe(number),
    baseline_aggregate=maybe(number),
    delta_vs_best_pct=maybe(number),
    delta_vs_baseline_pct=maybe(number),
    run_aggregates=st.lists(number, max_size=3),
    shapes=st.lists(shape, max_size=4),
    diagnostics=st.dictionaries(text, number, max_size=3),
    timings=st.dictionaries(text, number, max_size=3),
    environment=st.dictionaries(text, text, max_size=3),
    hashes=st.dictionaries(text, text, max_size=3),
    started_at=maybe(text),
    rollback_reason=maybe(text),
    attribution=maybe(text),
    lesson=maybe(text),
    harness_tail=maybe(text),
    fingerprint=st.dictionaries(text, text, max_size=3),
    statistics=st.dictionaries(text, st.one_of(number, text, st.lists(number, max_size=2))),
    tree=maybe(sha),
    cause=maybe(text),
    evidence=st.fixed_dictionaries(
        {
            "policy": st.sampled_from(["seed", "interleaved"]),
            "runs": st.lists(st.dictionaries(text, number, max_size=3), max_size=2),
            "pairs": st.lists(
                st.fixed_dictionaries(
                    {
                        "a": st.dictionaries(text, number, max_size=2),
                        "b": st.dictionaries(text, number, max_size=2),
                    }
                ),
                max_size=2,
            ),
        }
    )
    | st.just({}),
    findings=st.lists(
        st.fixed_dictionaries(
            {"path": text, "line": st.integers(1, 10_000), "pattern": text, "text": text}
        ),
        max_size=2,
    ),
)


def _every_field_set(cls: type, built: st.SearchStrategy[Any]) -> None:
    """The strategy names every field: a new field must join the property."""
    assert {f.name for f in fields(cls)} - {"schema_version"} <= set(
        built.wrapped_strategy.kwargs  # type: ignore[attr-defined]
    ) | {"validated_at", "decided_at"}


def test_the_strategies_cover_every_field() -> None:
    _every_field_set(RoundNote, round_note)
    _every_field_set(ShapeResult, shape)


@settings(max_examples=150, deadline=None)
@given(round_note)
def test_a_round_note_reads_back_as_written(note: RoundNote) -> None:
    assert RoundNote.from_text(note.to_text()) == note


@settings(max_examples=150, deadline=None)
@given(round_note)
def test_a_round_note_reads_back_from_the_cache(note: RoundNote) -> None:
    # The note cache stores parsed notes as JSON and rebuilds them with from_dict.
    cached = json.loads(json.dumps(note.to_dict()))
    assert RoundNote.from_dict(cached) == note
    assert RoundNote.from_dict(cached, with_shapes=False).shapes == []


@given(
    st.builds(
        GateNote,
        campaign=text,
        passed=st.booleans(),
        command=text,
        seconds=number,
        at=text,
        output_tail=maybe(text),
    )
)
def test_a_gate_note_reads_back_as_written(note: GateNote) -> None:
    assert GateNote.from_text(note.to_text()) == note


@settings(deadline=None)
@given(
    st.builds(
        CampaignState,
        name=text,
        base=sha,
        created=text,
        next_round=st.integers(2, 10_000),
        open_rounds=st.lists(st.builds(OpenRound, st.integers(2, 99), text, sha, text), max_size=3),
        frozen_header=maybe(st.lists(text, max_size=4)),
        protected=st.dictionaries(text, maybe(sha), max_size=3),
        representative=st.lists(text, max_size=3),
        inactive=st.lists(text, max_size=3),
        noise_floors=st.dictionaries(text, number, max_size=3),
        fingerprint=st.dictionaries(text, text, max_size=3),
        finished=st.booleans(),
        finished_at=maybe(text),
        reopened=st.lists(text, max_size=2),
    )
)
def test_the_campaign_state_reads_back_as_written(state: CampaignState) -> None:
    assert CampaignState.from_json(state.to_json()) == state


@settings(deadline=None)
@given(
    st.builds(
        Tip,
        context=text,
        signal=text,
        takeaway=text,
        applicability=text,
        gpu=text,
        op=text,
        backend=text,
        recorded_at=text,
        campaign=maybe(text),
        round=maybe(st.integers(1, 999)),
        outcome=maybe(text),
        commit=maybe(sha),
    )
)
def test_a_tip_reads_back_as_written(tip: Tip) -> None:
    assert Tip.from_text(tip.to_text()) == tip
