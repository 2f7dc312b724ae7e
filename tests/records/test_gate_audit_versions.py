"""The stored gate audit's versions: a version-1 audit (before reach and per-kernel figures)
still reads; a newer one is refused with "upgrade kgit"."""

from __future__ import annotations

import pytest

from kgit.errors import KgitError
from kgit.records.gate_audit import AUDIT_VERSION, EQUIVALENT, UNREACHED, GateAudit

VERSION_1 = {
    "campaign": "c1",
    "commit": "a" * 40,
    "at": "2026-01-01T00:00:00Z",
    "trigger": "baseline",
    "command": "pytest -q",
    "schema_version": 1,
    "sites": 9,
    "mutants": [
        {
            "where": "k.py:3",
            "kind": "arith",
            "mutation": "`+` -> `-`",
            "outcome": "survived",
            "seconds": 1.5,
            "caught_by": None,
        },
        {
            "where": "k.py:4",
            "kind": "mask",
            "mutation": "drop",
            "outcome": "caught",
            "seconds": 1.0,
            "caught_by": "test_k.py::test_a",
        },
    ],
    "skipped": [],
    "unexercised": [],
    "tail_warning": None,
    "control_s": 2.0,
    "timeout_s": 30.0,
    "seconds": 9.0,
    "error": None,
}


def test_a_version_1_audit_reads_with_empty_figures() -> None:
    audit = GateAudit.from_dict(VERSION_1)
    assert audit.schema_version == AUDIT_VERSION and audit.mode == "full"
    assert audit.tried == 2 and audit.caught == 1 and len(audit.survivors) == 1
    assert audit.functions == [] and audit.reach == [] and audit.mutants[0].function is None
    summary = audit.summary()
    assert summary["unreached"] == 0 and summary["functions"] == []
    assert GateAudit.from_dict(audit.to_dict()).to_dict() == audit.to_dict()


def test_unreached_and_equivalent_are_neither_tried_nor_survived() -> None:
    data = dict(VERSION_1, schema_version=AUDIT_VERSION)
    data["mutants"] = [
        dict(VERSION_1["mutants"][0], outcome=UNREACHED),  # type: ignore[index]
        dict(VERSION_1["mutants"][0], outcome=EQUIVALENT),  # type: ignore[index]
    ]
    audit = GateAudit.from_dict(data)
    assert audit.tried == 1 and audit.survivors == [] and not audit.weak
    assert len(audit.unreached) == 1 and len(audit.equivalent) == 1


def test_a_newer_audit_is_refused() -> None:
    with pytest.raises(KgitError, match="this kgit reads up to") as refused:
        GateAudit.from_dict(dict(VERSION_1, schema_version=AUDIT_VERSION + 1))
    assert "upgrade kgit" in (refused.value.hint or "")


def test_a_version_2_audit_reads_below_tolerance_as_equivalent() -> None:
    data = dict(VERSION_1, schema_version=2)
    data["mutants"] = [dict(VERSION_1["mutants"][0], outcome="below tolerance")]  # type: ignore[index]
    data["functions"] = [{"path": "k.py", "function": "f", "line": 1, "shapes": True, "gate": True}]
    data["functions"][0]["below_tolerance"] = 1  # type: ignore[index]
    audit = GateAudit.from_dict(data)
    assert audit.mutants[0].outcome == EQUIVALENT and len(audit.equivalent) == 1
    assert audit.functions[0].equivalent == 1
    assert audit.coverage == {} and audit.drawn == 0
