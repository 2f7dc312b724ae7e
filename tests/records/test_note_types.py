"""`type_problems`: the check an imported note passes before kgit stores it (issue 12, item 8)."""

from __future__ import annotations

import yaml

from kgit.records.notes import RoundNote, ShapeResult, type_problems


def written_note() -> dict[str, object]:
    note = RoundNote(
        campaign="c1",
        round=2,
        status="ACCEPTED",
        hypothesis="bigger tiles",
        metric="Forward TFLOPS",
        aggregate=120,
        reasons=["aggregate improved"],
        shapes=[ShapeResult("s64", "PASS", 120.0, 100.0, 20.0), ShapeResult("s128", "FAIL")],
        diagnostics={"fwd_avg": 120.0},
        hashes={"protected": {"harness.py": "abc"}},
        statistics={"pairs": [1, 2]},
    )
    data = yaml.safe_load(note.to_text())
    assert isinstance(data, dict)
    return data


def test_every_note_kgit_writes_has_its_declared_types() -> None:
    assert type_problems(RoundNote, written_note()) == []


def test_a_wrong_type_is_named_with_its_field() -> None:
    data = {**written_note(), "aggregate": [1, 2], "round": True, "run_aggregates": 99}
    problems = type_problems(RoundNote, data)
    assert [p.split(":")[0] for p in problems] == ["round", "aggregate", "run_aggregates"]


def test_a_shape_is_checked_field_by_field() -> None:
    shapes = [{"label": "s64", "check": "PASS", "value": "fast"}]
    assert type_problems(RoundNote, {**written_note(), "shapes": shapes})[0].startswith("shapes:")
    assert type_problems(ShapeResult, shapes[0]) == ["value: 'fast' is not float | None"]
