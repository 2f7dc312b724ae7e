"""The gate audit's cost on the bundled RMSNorm example with its own gate (test_rmsnorm.py):
the baseline's quick audit against the baseline's own gate run, then `kgit gate audit --max 6`.

    python bench/audit_example.py [--kgit SRC]

SRC: a kgit source tree to measure (another checkout, for a before/after), put first on
PYTHONPATH; the installed kgit by default. Target shapes 32x256 and 13x100 (a ragged one), the
default policy; a CPU machine runs the kernels in Triton's interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHAPES = "- {label: r32x256, M: 32, N: 256}\n- {label: r13x100, M: 13, N: 100}\n"
KGIT = "import sys; from kgit.cli import main; raise SystemExit(main(sys.argv[1:]))"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kgit", help="a kgit source tree to put first on PYTHONPATH")
    args = parser.parse_args()
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com"}
    env |= {"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    if args.kgit:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [args.kgit, env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="kgit-audit-bench-") as scratch:
        repo = Path(scratch)

        def run(*command: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)

        examples = run(sys.executable, "-c", "import kgit.resources as r; print(r.examples_dir())")
        for source in (Path(examples.stdout.strip()) / "rmsnorm").glob("*.py"):
            shutil.copy(source, repo / source.name)
        (repo / "shapes.yaml").write_text(SHAPES)
        (repo / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
        for command in (["init", "-q"], ["add", "."], ["commit", "-qm", "the example"]):
            run("git", *command)
        gate = f"{sys.executable} -m pytest -q -p no:cacheprovider test_rmsnorm.py"
        made = run(sys.executable, "-c", KGIT, "init", "rms", "--no-input", "--target-op", "rmsnorm",
            "--target-backend", "TRITON", "--primary-metric", "Forward GB/s",
            "--kernel-source", "rmsnorm_kernel.py", "--test-command", gate,
            "--quick-command", f"{sys.executable} bench_rmsnorm.py",
            "--shapes-file", "shapes.yaml")  # fmt: skip
        if made.returncode != 0:
            print(made.stderr[-3000:], file=sys.stderr)
            return 1
        baseline = run(sys.executable, "-c", KGIT, "baseline", "--json")
        if baseline.returncode != 0:
            print(baseline.stderr[-3000:], file=sys.stderr)
            return 1
        state = json.loads(run("git", "show", "refs/kgit/rms/campaign:state.json").stdout)
        tree = run("git", "rev-parse", "HEAD^{tree}").stdout.strip()
        gate_note = json.loads(run("git", "show", f"refs/notes/kgit/rms/gate:{tree}").stdout)
        quick = state["gate_audit"]
        print(f"baseline gate: {gate_note['seconds']:.1f} s")
        print(f"quick audit: {quick['seconds']:.1f} s, {_counts(quick)}")
        began = time.monotonic()
        full = json.loads(
            run(sys.executable, "-c", KGIT, "gate", "audit", "--max", "6", "--json").stdout
        )
        print(f"full audit (--max 6): {time.monotonic() - began:.1f} s wall, {_counts(full)}")
    return 0


def _counts(audit: dict[str, object]) -> str:
    mutants = audit.get("mutants") or []
    outcomes = [f"{m['kind']} {m['outcome']}" for m in mutants]  # type: ignore[union-attr, index]
    return f"judged {outcomes}, not run {audit.get('not_run')}, covered {audit.get('coverage')}"


if __name__ == "__main__":
    raise SystemExit(main())
