"""Where a command's time goes (issue 36, item 1): `kgit baseline` and `kgit round validate` give
their phases in --json and say them in a `time:` line, so that what is cut next is measured."""

from __future__ import annotations

from pathlib import Path

from kgit.progress import Phases, add_phase, collecting, phase
from tests.conftest import commit, run_kgit


def test_phases_add_up_where_a_command_collects_and_nowhere_else() -> None:
    add_phase("gate", 5.0)  # no command collecting: nothing kept
    with collecting() as phases:
        add_phase("gate", 1.25)
        add_phase("gate", 0.5)
        with phase("quads"):
            pass
    data = phases.to_dict()
    assert data["gate"] == 1.75 and 0 <= data["quads"] < 0.1 and data["total"] >= 0
    assert phases.line().startswith("time: ") and "gate 1.8 s" in phases.line()
    assert Phases().line().startswith("time: ")


def test_validate_and_baseline_give_their_phases(campaign: Path, kernel_repo: Path) -> None:
    repo = campaign
    assert run_kgit("round", "start", "faster").code == 0
    (repo / "kernel.txt").write_text("speed: 120\n")
    assert commit(repo, "faster").returncode == 0
    result = run_kgit("round", "validate", "--json")
    data = result.json()
    assert isinstance(data, dict)
    phases = data["phases"]
    assert {"trees", "harness passes", "watch", "total"} <= set(phases), phases
    assert phases["total"] >= phases["harness passes"] > 0
    assert "kgit: time: " in result.err and "harness passes" in result.err
    assert run_kgit("round", "accept").code == 0
    assert run_kgit("init", "c2", "-m", "manifest.yaml").code == 0
    baseline = run_kgit("-c", "c2", "baseline", "--json").json()
    assert isinstance(baseline, dict)
    assert {"gate", "trees", "harness passes", "watch", "total"} <= set(baseline["phases"])
