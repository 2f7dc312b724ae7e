"""Command results as typed values, and the one way they become JSON.

Each command's result is a frozen dataclass deriving from `Result` (its parts are frozen
dataclasses too); the engine builds it, the views read its attributes, and `to_json` turns it
into the document `--json` prints (docs/json.md). The rules of `to_json`:

- a dataclass is an object: its field names are the keys, in the order they are declared; a
  field with `metadata=OMITTED_WHEN_NONE` is left out while it is None (a key that only some
  documents carry);
- a mapping field with `metadata=SPREAD` puts its keys at the object's own level (a record
  stored as it is, beside the fields computed from it);
- a field made with `view_only()` is for the text views alone and never printed;
- a `Result` whose class names a `json_root` field prints that field alone (a command whose
  document is a list: `kgit log`, `kgit status --all`, `kgit tips`);
- a mapping is an object with its keys as strings (a mapping is data: shape label to figure,
  path to sha, a record read from git's JSON at the boundary where it is parsed);
- tuples and lists are arrays; an enum is its value; a path is its text; str, int, float, bool
  and None are themselves. Anything else is a programming error (TypeError), never silently
  `str()`-ed.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any, ClassVar

_OMIT = "kgit.omitted_when_none"
_VIEW_ONLY = "kgit.view_only"
_SPREAD = "kgit.spread"


class Result:
    """The base of every command's result (each a frozen dataclass); only these reach `--json`."""

    __slots__ = ()
    json_root: ClassVar[str | None] = None


# The metadata of a field, None by default, whose key the JSON document carries only when it has
# a value: `field(default=None, metadata=OMITTED_WHEN_NONE)`.
OMITTED_WHEN_NONE = {_OMIT: True}


def view_only(default: Any) -> Any:
    """A field the text views read and the JSON document leaves out (the rounds as a view
    reads them, for its plots)."""
    return dataclasses.field(default=default, metadata={_VIEW_ONLY: True}, compare=False)


# The metadata of a mapping field whose keys the JSON document carries at its own level (a
# record stored as it is, beside the fields computed from it): `field(metadata=SPREAD)`.
SPREAD = {_SPREAD: True}


def is_result(value: object) -> bool:
    """Whether VALUE is a typed result (an instance of a `Result` dataclass)."""
    return (
        isinstance(value, Result)
        and dataclasses.is_dataclass(value)
        and not isinstance(value, type)
    )


def to_json(value: Any) -> Any:
    """VALUE as JSON-ready data (dicts, lists, str, numbers, bool, None), by the rules above."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, enum.Enum):
        return to_json(value.value)
    if isinstance(value, PurePath):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _fields(value)
    if isinstance(value, Mapping):
        return {str(key): to_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    raise TypeError(f"to_json: {type(value).__name__} is not JSON data ({value!r:.80})")


def _fields(value: Any) -> Any:
    root = getattr(type(value), "json_root", None)
    if root is not None:
        return to_json(getattr(value, root))
    document = {}
    for field in dataclasses.fields(value):
        item = getattr(value, field.name)
        if field.metadata.get(_VIEW_ONLY) or (item is None and field.metadata.get(_OMIT)):
            continue
        if field.metadata.get(_SPREAD):
            document.update(to_json(item))
            continue
        document[field.name] = to_json(item)
    return document


def json_keys(cls: type) -> list[str]:
    """The keys a result class's JSON document can carry (its fields', in order)."""
    return [
        f.name
        for f in dataclasses.fields(cls)
        if not f.metadata.get(_VIEW_ONLY) and not f.metadata.get(_SPREAD)
    ]
