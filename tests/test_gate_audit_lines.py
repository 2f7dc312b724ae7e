"""The gate audit on code whose reach only its lines tell, through the CLI on CPU:

- a plain-torch RMSNorm with two code paths in one function (tests/two_paths_py/), whose gates
  and target shape take the wide path only: with a reference gate no mutant survives, with a
  length-only gate some do; the narrow path is unreached, the epsilon and the boundary between
  the paths (no shape sits on it) are equivalent on the target shapes;
- a LayerNorm in Triton (tests/layer_norm/) whose tests use zero bias and unit weight: the
  baseline's quick audit finds the bias's sign unchecked.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.audit_campaigns import audit, init_campaign
from tests.conftest import git, run_kgit

HERE = Path(__file__).resolve().parent
TWO_PATHS, LAYER_NORM = HERE / "two_paths_py", HERE / "layer_norm"


def _repo(tmp_path: Path, data: Path, gates: list[str]) -> Path:
    repo = tmp_path / data.name
    repo.mkdir()
    for path in data.glob("*.py"):
        # The gates are stored under other names so that kgit's own test run does not collect them.
        name = f"test_{path.name[5:]}" if path.name in gates else path.name
        shutil.copy(path, repo / name)
    (repo / ".gitignore").write_text("__pycache__/\n.pytest_cache/\nmanifest.yaml\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", f"the {data.name} kernel, its gates and its harness")
    return repo


def _init(repo: Path, name: str, kernel: str, gate: str, bench: str) -> None:
    init_campaign(repo, name, op="norm", kernel=kernel, gate=gate, bench=bench)


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.fixture
def two_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = _repo(tmp_path, TWO_PATHS, ["gate_reference.py", "gate_length.py"])
    monkeypatch.chdir(repo)
    return repo


def _two_paths_audit(gate: str) -> tuple[dict[str, Any], str]:
    _init(Path.cwd(), "c1", "two_paths_py.py", gate, "bench_two_paths_py.py")
    data, err = audit("c1", 50)
    counts = {k: data.get(k) for k in ("tried", "caught", "survived", "equivalent", "unreached")}
    print(f"{gate}: control {data['control_s']:.1f} s, audit {data['seconds']:.1f} s, {counts}")
    for m in data["mutants"]:
        print(f"  {m['where']} {m['kind']} {m['mutation']}: {m['outcome']}")
    print(data.get("coverage"))
    return data, err


@pytest.mark.slow
def test_a_reference_gate_on_two_paths_leaves_no_survivor(two_paths: Path) -> None:
    data, err = _two_paths_audit("test_reference.py")
    assert data["survived"] == 0, err
    kernel = two_paths / "two_paths_py.py"
    narrow = range(_line_of(kernel, "blocks = []"), _line_of(kernel, "torch.cat(blocks)") + 1)
    by_line = {int(m["where"].rsplit(":", 1)[1]): m for m in data["mutants"]}
    assert data["sites"] == len(data["mutants"])  # all drawn
    for line, mutant in by_line.items():
        if line in narrow:
            assert mutant["outcome"] == "unreached", mutant
    # The boundary between the paths (no target shape sits on it) and the epsilon: equivalent.
    boundary = [m for m in data["mutants"] if "n >= WIDE" in m["mutation"]]
    epsilon = [m for m in data["mutants"] if m["mutation"] == "`+` -> `-` in `mean_square + EPS`"]
    wide_epsilon = [m for m in epsilon if int(m["where"].rsplit(":", 1)[1]) not in narrow]
    assert boundary and wide_epsilon
    for mutant in boundary + wide_epsilon:
        assert mutant["outcome"] == "equivalent on the target shapes", mutant
    assert "unreached" in err and "equivalent on the target shapes" in err


@pytest.mark.slow
def test_a_length_only_gate_on_two_paths_lets_mutants_survive(two_paths: Path) -> None:
    data, err = _two_paths_audit("test_length.py")
    assert data["survived"] >= 1, err
    assert all(m["outcome"] != "survived" for m in data["mutants"] if m["reach"] == "unreached")


@pytest.mark.slow
def test_the_baseline_audit_finds_the_bias_sign_unchecked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path, LAYER_NORM, ["gate_upstream.py"])
    monkeypatch.chdir(repo)
    _init(repo, "c1", "layer_norm.py", "test_upstream.py", "bench_layer_norm.py")
    result = run_kgit("baseline", "--json")
    assert result.code == 0, result
    audit = json.loads(git(repo, "show", "refs/kgit/c1/campaign:state.json"))["gate_audit"]
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    gate_s = json.loads(git(repo, "show", f"refs/notes/kgit/c1/gate:{tree}"))["seconds"]
    print(f"gate {gate_s:.1f} s, audit {audit['seconds']:.1f} s")
    for m in audit["mutants"]:
        print(f"  {m['where']} {m['kind']} {m['mutation']}: {m['outcome']}")
    assert audit["mode"] == "quick" and audit["seconds"] <= 2 * gate_s, result.err
    # What was drawn is what was judged and what was not run, each counted once.
    assert audit["drawn"] == len(audit["mutants"]) + audit["not_run"] <= 6
    covered = audit["coverage"]
    assert covered["of"] == "the target shapes run" and 1 <= covered["lines"] <= covered["lines_of"]
    # How many mutants fit the deadline varies with the machine's load; the words follow.
    said = f"covered {covered['lines']} of {covered['lines_of']} lines and {len(covered['kinds'])}"
    assert "sign" in covered["kinds"] and said in result.err, result.err
    line = _line_of(repo / "layer_norm.py", "centered * rstd * w + b")
    survivors = [m for m in audit["mutants"] if m["outcome"] == "survived"]
    assert any(
        m["where"] == f"layer_norm.py:{line}" and m["mutation"].startswith("`+ b` -> `- b`")
        for m in survivors
    ), result.err
    assert "SURVIVED" in result.err
