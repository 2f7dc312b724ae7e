"""The typed results' one serializer (kgit/records/results.py)."""

from __future__ import annotations

import enum
from dataclasses import FrozenInstanceError, dataclass, field
from pathlib import Path

import pytest

from kgit.records.results import (
    OMITTED_WHEN_NONE,
    SPREAD,
    Result,
    is_result,
    json_keys,
    to_json,
    view_only,
)


class Colour(enum.Enum):
    RED = "red"


@dataclass(frozen=True, slots=True)
class Part:
    label: str
    value: float | None


@dataclass(frozen=True, slots=True)
class Whole(Result):
    name: str
    parts: tuple[Part, ...]
    where: Path
    colour: Colour
    figures: dict[str, float] = field(default_factory=dict)
    note: str | None = field(default=None, metadata=OMITTED_WHEN_NONE)


@dataclass(frozen=True, slots=True)
class Names(Result):
    json_root = "names"
    names: tuple[str, ...]


def test_a_result_becomes_its_fields_as_keys_in_order() -> None:
    whole = Whole("c1", (Part("s64", 1.5), Part("s128", None)), Path("/a/b"), Colour.RED, {"x": 1})
    assert to_json(whole) == {
        "name": "c1",
        "parts": [{"label": "s64", "value": 1.5}, {"label": "s128", "value": None}],
        "where": "/a/b",
        "colour": "red",
        "figures": {"x": 1},
    }
    assert list(to_json(whole)) == json_keys(Whole)[:-1]  # `note` is None: left out


def test_an_omitted_key_appears_once_it_has_a_value() -> None:
    whole = Whole("c1", (), Path("."), Colour.RED, note="why")
    assert to_json(whole)["note"] == "why"


def test_a_rooted_result_prints_its_root_alone() -> None:
    assert to_json(Names(("c1", "c2"))) == ["c1", "c2"]


def test_a_value_that_is_not_json_data_is_refused() -> None:
    with pytest.raises(TypeError, match="object is not JSON data"):
        to_json(Part("s64", object()))  # type: ignore[arg-type]


def test_results_are_frozen_and_a_dict_is_not_one() -> None:
    names = Names(("c1",))
    with pytest.raises(FrozenInstanceError):
        names.names = ()  # type: ignore[misc]
    assert is_result(names)
    assert not is_result({"names": ["c1"]})
    assert not is_result(Part("s64", 1.0))  # a part, not a command's result
    assert not is_result(Names)


@dataclass(frozen=True, slots=True)
class Shown(Result):
    record: dict[str, object] = field(default_factory=dict, metadata=SPREAD)
    count: int = 0
    rows: tuple[object, ...] = view_only(())


def test_a_spread_record_sits_beside_its_counts_and_view_only_data_is_never_printed() -> None:
    shown = Shown({"commit": "c" * 40, "tried": 3}, count=2, rows=(object(),))
    assert to_json(shown) == {"commit": "c" * 40, "tried": 3, "count": 2}
    assert json_keys(Shown) == ["count"]
