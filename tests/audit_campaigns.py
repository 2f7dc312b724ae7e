"""A gate-audit campaign on a small kernel, through the CLI: the manifest both audit fixtures
(tests/two_paths/, tests/two_paths_py/ and tests/layer_norm/) start from, and the audit's call."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.conftest import run_kgit


def init_campaign(
    repo: Path, name: str, *, op: str, kernel: str, gate: str, bench: str, mutants: int = 6
) -> None:
    """`kgit init NAME` on one 5x300 shape under the seed policy, GATE the test command."""
    manifest = {
        "target_op": op,
        "target_backend": "TRITON",
        "primary_metric": "Forward GB/s",
        "decision_policy": "seed",
        "kernel_source": [kernel],
        "test_command": f"{sys.executable} -m pytest -q -p no:cacheprovider {gate}",
        "quick_command": f"{sys.executable} {bench}",
        "target_shapes": [{"label": "r5x300", "M": 5, "N": 300}],
        "gate_audit_mutants": mutants,
    }
    (repo / "manifest.yaml").write_text(json.dumps(manifest))
    assert run_kgit("init", name, "-m", "manifest.yaml").code == 0


def audit(name: str, count: int) -> tuple[dict[str, Any], str]:
    """`kgit gate audit --max COUNT --json` of campaign NAME: its JSON and its stderr."""
    result = run_kgit("-c", name, "gate", "audit", "--max", str(count), "--json")
    assert result.code == 0, result
    return json.loads(result.out), result.err
