"""The views' caches under .git/kgit/cache/ rewritten by hand with values of the wrong types: read
as no cache (rebuilt from the record), never a crash of `kgit status` or `kgit log`; and the
background audit's mark rewritten so: read as an audit that ended."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_kgit


def _rewrite(path: Path, change: dict[str, Any], entries: str) -> None:
    data = json.loads(path.read_text())
    for entry in data[entries].values() if entries == "notes" else data[entries]:
        entry.update(change)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("cache", "entries", "change"),
    [
        ("lineage-c1.json", "rows", {"round": "1"}),
        ("lineage-c1.json", "rows", {"aggregate": "fast"}),
        ("lineage-c1.json", "rows", {"vs_baseline": "none"}),
        ("round-notes-c1.light2.json", "notes", {"round": "one"}),
    ],
)
def test_a_cache_with_values_of_the_wrong_types_is_read_as_none(
    campaign: Path, cache: str, entries: str, change: dict[str, Any]
) -> None:
    expected = run_kgit("log", "--json").json()  # the caches are written
    folder = campaign / ".git" / "kgit" / "cache"
    if entries == "notes":
        (folder / "lineage-c1.json").unlink()  # the rows are built again from the notes
    _rewrite(folder / cache, change, entries)
    for args in (["status"], ["status", "--json"], ["log"], ["log", "--json"]):
        result = run_kgit(*args)
        assert result.code == 0 and "crashed" not in result.err, (args, result)
    assert run_kgit("log", "--json").json() == expected


@pytest.mark.parametrize("mark", ['{"pid": "x", "start": 5}', "[]"])
def test_an_audit_mark_with_values_of_the_wrong_types_reads_as_an_audit_that_ended(
    campaign: Path, mark: str
) -> None:
    path = campaign / ".git" / "kgit" / "audit" / "c1.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(mark)
    for args in (["status"], ["status", "--json"], ["report"], ["doctor"], ["doctor", "--json"]):
        result = run_kgit(*args)
        assert result.code in (0, 1) and "crashed" not in result.err, (args, result)
    state = run_kgit("status", "--json").json()["gate_audit_background"]  # type: ignore[index]
    assert state["running"] is False and state["interrupted"] is True, state


def test_an_audit_mark_naming_a_live_process_that_holds_no_lock_is_not_waited_for(
    campaign: Path,
) -> None:
    """A mark written by hand naming pid 1 with its true start time: accept waited for that
    "audit" forever and status said it ran."""
    import subprocess
    import sys

    from tests.conftest import commit

    start = Path("/proc/1/stat").read_text().rpartition(")")[2].split()[19]
    path = campaign / ".git" / "kgit" / "audit" / "c1.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"pid": 1, "start": start, "commit": "0" * 40, "log": "a.log"}))
    state = run_kgit("status", "--json").json()["gate_audit_background"]  # type: ignore[index]
    assert state["running"] is False and state["interrupted"] is True, state
    assert run_kgit("round", "start", "bigger tiles").code == 0
    (campaign / "kernel.txt").write_text("speed: 120\n")
    assert commit(campaign, "bigger tiles").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0
    accept = [sys.executable, "-m", "kgit", "-q", "round", "accept"]
    done = subprocess.run(accept, cwd=campaign, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
