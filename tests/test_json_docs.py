"""docs/json.md follows the result types: under each command's heading a marker names its
result class (`<!-- result: RoundStarted -->`) and the line after it lists the keys, generated
from the class (kgit/records/results.py: `json_keys`). A key added to or removed from a type
without the docs fails here; KGIT_REGOLD=1 writes the lines anew from the types."""

from __future__ import annotations

import dataclasses
import importlib
import os
import pkgutil
import re
from pathlib import Path

import kgit.records
from kgit.records.results import SPREAD, Result, json_keys

DOCS = Path(__file__).parent.parent / "docs" / "json.md"
MARKER = re.compile(r"^<!-- result: (\w+) -->$")


def result_types() -> dict[str, type]:
    """Every command's result class, by name: the `Result` dataclasses of kgit/records/."""
    found: dict[str, type] = {}
    for module in pkgutil.iter_modules(kgit.records.__path__):
        loaded = importlib.import_module(f"kgit.records.{module.name}")
        for value in vars(loaded).values():
            if isinstance(value, type) and issubclass(value, Result) and value is not Result:
                found[value.__name__] = value
    return found


def keys_line(cls: type) -> str:
    """What the docs say of CLS's keys, generated from its fields."""
    where = f"`{cls.__name__}`, {cls.__module__.replace('.', '/')}.py"
    root = getattr(cls, "json_root", None)
    if root is not None:
        item = dataclasses.fields(cls)[0].type
        return f"Printed as its `{root}` alone ({where}: `{item}`)."
    keys = ", ".join(f"`{key}`" for key in json_keys(cls))
    spread = [f.name for f in dataclasses.fields(cls) if f.metadata == SPREAD]
    also = f"; and the keys of `{spread[0]}`, as stored" if spread else ""
    return f"Keys ({where}): {keys}{also}."


def test_the_documented_keys_are_the_types_keys() -> None:
    lines = DOCS.read_text().splitlines()
    types, seen, wrong = result_types(), set(), []
    for i, line in enumerate(lines):
        found = MARKER.match(line)
        if found is None:
            continue
        name = found.group(1)
        assert name in types, f"docs/json.md names {name}, which is no result type"
        seen.add(name)
        if lines[i + 1] != keys_line(types[name]):
            wrong.append(name)
            lines[i + 1] = keys_line(types[name])
    if wrong and os.environ.get("KGIT_REGOLD"):
        DOCS.write_text("\n".join(lines) + "\n")
    assert wrong == [], (
        f"docs/json.md's keys differ from the types' (KGIT_REGOLD=1 rewrites them): {wrong}"
    )
    assert sorted(set(types) - seen) == [], "result types docs/json.md does not document"
