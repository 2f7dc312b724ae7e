"""The real-kernel campaigns of tests/realworld/ on a GPU, in one call; a short table last.

Liger-Kernel's Triton softmax and SwiGLU (BSD-2-Clause, vendored under
tests/realworld/projects/ with their licence and NOTICE.md), each in its own repository layout
with the project's own tests as the gate. For each: a fresh git repository, `kgit init`,
`kgit baseline` (the gate, every target shape, the interleaved policy's calibration, the gate
audit), one round (`kgit round start`, the kernel edit, `git commit` through the gate,
`kgit round validate`), then accept or roll back as the verdict says. Every manifest setting
is at its default; the shapes are bf16 and LLM-sized (campaigns.py: `gpu_shapes`).

The rounds: softmax tiles its multi-block rows in 16K columns instead of 64K (rows 32768 wide
then take the multi-block path too); SwiGLU halves num_warps. Either verdict is an outcome.

    PYTHONPATH=. python3 bench/realworld.py                  # every campaign, on the GPU
    PYTHONPATH=. python3 bench/realworld.py --only liger_swiglu --dir /tmp/rw --echo
    PYTHONPATH=. python3 bench/realworld.py --cpu            # the CI's CPU campaigns (interpreter)

Writes the table's rows to $OUT/realworld.json when OUT is set. Needs torch, triton, numpy,
packaging, pytest and kgit's dependencies (GitPython is not needed: kgit runs git itself).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.realworld.campaigns import CAMPAIGNS, Played, play


def _gpu_name() -> str:
    # Asked of torch in a child process, as kgit demo does: this script stays light.
    ask = "import torch\nprint(torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
    out = subprocess.run([sys.executable, "-c", ask], capture_output=True, text=True).stdout
    return out.strip().splitlines()[-1] if out.strip() else ""


def _row(name: str, played: Played | None, error: str, seconds: float) -> dict[str, object]:
    if played is None:
        return {"campaign": name, "verdict": "ERROR", "why": error[-300:], "wall s": round(seconds)}
    return {
        "campaign": name,
        "verdict": played.verdict,
        "why": played.why,
        "gate audit": played.audit.removeprefix("gate audit: "),
        "baseline s": round(played.seconds.get("baseline", 0.0)),
        "validate s": round(played.seconds.get("validate", 0.0)),
        "wall s": round(seconds),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(CAMPAIGNS), action="append", help="repeatable")
    parser.add_argument("--dir", type=Path, help="where the repositories go (default: a temp dir)")
    parser.add_argument("--cpu", action="store_true", help="CPU shapes, Triton's interpreter")
    parser.add_argument("--echo", action="store_true", help="print every command and its output")
    args = parser.parse_args(argv)
    gpu_name = "" if args.cpu else _gpu_name()
    if not args.cpu and not gpu_name:
        print("error: no GPU visible to torch (pass --cpu for the interpreter)", file=sys.stderr)
        return 2
    root = args.dir or Path(tempfile.mkdtemp(prefix="kgit-realworld-"))
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.only or sorted(CAMPAIGNS):
        start = time.monotonic()
        played, error = None, ""
        try:
            played = play(
                CAMPAIGNS[name], root, gpu=not args.cpu, gpu_name=gpu_name, echo=args.echo
            )
        except AssertionError as exc:  # a step exited as it should not: shown in the table
            error = str(exc)
            print(error, file=sys.stderr)
        rows.append(_row(name, played, error, time.monotonic() - start))
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "realworld.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(f"\nrepositories in {root}; device: {gpu_name or 'CPU (Triton interpreter)'}")
    print(tabulate(rows, headers="keys", tablefmt="github"))
    return 0 if all(row["verdict"] != "ERROR" for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
