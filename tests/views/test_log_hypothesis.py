"""`kgit log` cuts a long hypothesis in its table, says so, and shows it whole with -v."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_kgit

LONG = (
    "split the reduction over two warps per row and keep the weight in registers across the "
    "loop, so that wide rows stop spilling"
)


def test_a_long_hypothesis_is_cut_and_marked_in_the_table_and_whole_with_v(
    campaign: Path,
) -> None:
    assert run_kgit("round", "start", LONG).code == 0
    assert run_kgit("round", "rollback", "--reason", "tried elsewhere first").code == 0
    table = run_kgit("log")
    assert table.code == 0, table
    assert LONG not in table.out and LONG[:40] in table.out and "…" in table.out
    assert "kgit log -v shows them whole" in table.out
    whole = run_kgit("log", "-v")
    assert LONG in whole.out and "kgit log -v" not in whole.out
    rows = run_kgit("log", "--json").json()
    assert LONG in [row["hypothesis"] for row in rows]
