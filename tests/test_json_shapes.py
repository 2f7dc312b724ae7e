"""Every `--json` command's key structure on one small campaign, held to a golden file: agents
parse these documents, and the typed results (kgit/records/results.py) must print them as they
were printed before. KGIT_REGOLD=1 writes the golden file anew (say why in the commit)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import KgitResult, commit, run_kgit

GOLDEN = Path(__file__).parent / "golden" / "json_keys.json"

# Fields whose keys are data (shape labels, paths, phase names), not names of the contract.
TIP = ["--context", "c", "--signal", "s", "--takeaway", "t", "--applicability", "a"]
MAPPINGS = {"phases", "shapes_vs_baseline", "protected", "changed"}


def keys_of(value: Any, name: str = "") -> Any:
    """VALUE's key structure: objects by their keys, a list by the union of its items' keys,
    every other value (and a mapping named in MAPPINGS) as a leaf."""
    if isinstance(value, dict):
        if name in MAPPINGS:
            return "{...}"
        return {key: keys_of(item, key) for key, item in sorted(value.items())}
    if isinstance(value, list):
        merged: dict[str, Any] = {}
        leaf = False
        for item in value:
            shape = keys_of(item, name)
            if isinstance(shape, dict):
                merged.update(shape)
            else:
                leaf = True
        return [dict(sorted(merged.items()))] if merged else (["."] if leaf else [])
    return "."


def _json(result: KgitResult, code: int = 0) -> Any:
    assert result.code == code, result
    return result.json()


def _round(repo: Path, hypothesis: str, kernel: str) -> dict[str, Any]:
    started = _json(run_kgit("-q", "round", "start", hypothesis, "--json"))
    (repo / "kernel.txt").write_text(kernel)
    assert commit(repo, hypothesis).returncode == 0
    return {
        "round start": started,
        "round validate": _json(run_kgit("-q", "round", "validate", "--json")),
    }


def play_campaign(repo: Path, tmp_path: Path) -> dict[str, Any]:
    """The campaign's commands in their order, each one's `--json` document by command."""
    out: dict[str, Any] = {
        "init": _json(run_kgit("-q", "init", "c1", "-m", "manifest.yaml", "--json"))
    }
    out["baseline"] = _json(run_kgit("-q", "baseline", "--json"))
    out["status"] = _json(run_kgit("-q", "status", "--json"))
    out |= _round(repo, "faster", "speed: 150\n")
    out["round accept"] = _json(run_kgit("-q", "round", "accept", "--lesson", "l", "--json"))
    slower = _round(repo, "slower", "speed: 50\n")
    out["round validate (rolled back)"] = slower["round validate"]
    out["round rollback"] = _json(run_kgit("-q", "round", "rollback", "--reason", "r", "--json"))
    out["status (after rounds)"] = _json(run_kgit("-q", "status", "--json"))
    out["status --all"] = _json(run_kgit("-q", "status", "--all", "--json"))
    out["log"] = _json(run_kgit("-q", "log", "--json"))
    out["show"] = _json(run_kgit("-q", "show", "2", "--json"))
    out["report"] = _json(run_kgit("-q", "report", "--json"))
    out["doctor"] = _json(run_kgit("-q", "doctor", "--json"))
    out["tips add"] = _json(run_kgit("-q", "tips", "add", *TIP, "--round", "2", "--json"))
    out["tips"] = _json(run_kgit("-q", "tips", "--json"))
    out["trust"] = _json(run_kgit("-q", "trust", "--yes", "--json"))
    out["export"] = _json(run_kgit("-q", "export", str(tmp_path / "folder"), "--json"))
    csv = next((tmp_path / "folder").rglob("benchmark.csv"))
    out["csv parse"] = _json(run_kgit("-q", "csv", "parse", str(csv), "--json"))
    edited = repo / "manifest.yaml"
    edited.write_text(
        edited.read_text().replace("timeout_s: 30", "timeout_s: 30\nmax_iterations: 9")
    )
    out["manifest edit"] = _json(run_kgit("-q", "manifest", "edit", "-m", str(edited), "--json"))
    out["finish"] = _json(run_kgit("-q", "finish", "--json"))
    out["gc"] = _json(run_kgit("-q", "gc", "--dry-run", "--json"))
    out["import"] = _json(
        run_kgit("-q", "import", str(tmp_path / "folder"), "--name", "c2", "--json")
    )
    out["campaign delete"] = _json(run_kgit("-q", "campaign", "delete", "c2", "--yes", "--json"))
    return out


def test_every_json_document_keeps_its_keys(kernel_repo: Path, tmp_path: Path) -> None:
    shapes = {name: keys_of(doc) for name, doc in play_campaign(kernel_repo, tmp_path).items()}
    if os.environ.get("KGIT_REGOLD"):
        GOLDEN.write_text(json.dumps(shapes, indent=1, sort_keys=True) + "\n")
        pytest.skip("golden file written")
    golden = json.loads(GOLDEN.read_text())
    for name in golden:
        assert shapes.get(name) == golden[name], name
    assert sorted(shapes) == sorted(golden)


def test_emit_refuses_a_plain_dict() -> None:
    from kgit.cli.app import emit, emit_line

    with pytest.raises(TypeError, match="emit takes a typed result"):
        emit({"campaign": "c1"}, True, str)  # type: ignore[type-var]
    with pytest.raises(TypeError, match="emit_line takes a typed result"):
        emit_line({"event": "done"}, True, str)  # type: ignore[type-var]


def test_only_emit_writes_json_in_the_commands() -> None:
    """Every command's JSON goes through emit (one document) or emit_line (a stream), which take
    typed results only; a `json.dumps` elsewhere in kgit/cli/ would print an untyped one."""
    import ast

    import kgit.cli

    calls = []
    for path in Path(kgit.cli.__path__[0]).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("dumps", "dump"):
                calls.append(f"{path.name}:{node.lineno}")
    assert [call for call in calls if not call.startswith("output.py:")] == []
