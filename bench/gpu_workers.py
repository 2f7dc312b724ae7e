"""Rounds per hour of the example GEMM campaign with one and two `kgit worker`s on a real GPU.

    python3 bench/gpu_workers.py [--devices 0,0] [--shapes 2048,4096,8192]

One throwaway repository holds the bundled GEMM example (its own 64x64x32 tiles, no autotuner),
its pytest tests as the gate and its harness; the campaign is baselined once. Then two runs on
that campaign, each from its own short queue of real hypotheses (tile sizes, stages, warps,
group size):

  1 worker   on the first device of --devices;
  2 workers  one per device of --devices: `0,0` shares one GPU through kgit's measuring lock
             (gating, compiling and tuning overlap; timing never does), `0,1` uses two.

Rounds per hour = rounds ended / wall time of the slowest worker, process start, gate and
validation included. The two queues differ (the first run's accepts moved the best line), so
compare the rates, not the gains. The table is printed last; rows also go to $OUT/gpu_workers.json
when OUT is set.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgit.demo import GEMM, Demo, has_gpu  # noqa: E402
from kgit.gitdoor import clean_env  # noqa: E402
from kgit.records.notes import ACCEPTING  # noqa: E402

# Each line: a hypothesis and the edit that tests it (sed on the kernel's tunables).
QUEUES = {
    1: [
        "half the K steps: BLOCK_K 64 :: BLOCK_K=64",
        "a deeper software pipeline hides load latency: NUM_STAGES 4 :: NUM_STAGES=4",
        "more warps per program overlap more loads: NUM_WARPS 8 :: NUM_WARPS=8",
    ],
    2: [
        "128x128 output tiles reuse each loaded tile twice as often :: BLOCK_M=128 BLOCK_N=128",
        "smaller L2 groups spread programs over more columns: GROUP_M 4 :: GROUP_M=4",
        "a shallower pipeline frees shared memory: NUM_STAGES 2 :: NUM_STAGES=2",
        "wider N tiles only: BLOCK_N 128 :: BLOCK_N=128",
    ],
}


def queue_file(folder: Path, lines: list[str]) -> Path:
    out = []
    for line in lines:
        hypothesis, edits = line.split(" :: ")
        seds = " ".join(
            f"-e 's/^{name} = .*/{name} = {value}/'"
            for name, value in (edit.split("=") for edit in edits.split())
        )
        out.append(f"{hypothesis} :: sed -i {seds} {GEMM.kernel_file}")
    path = folder / f"ideas-{len(out)}.txt"
    path.write_text("\n".join(out) + "\n")
    return path


def workers(repo: Path, queue: Path, devices: list[str]) -> dict[str, object]:
    start = time.monotonic()
    worker = [sys.executable, "-m", "kgit", "-q", "worker", "--hypotheses", str(queue)]
    procs = [
        subprocess.Popen(
            [*worker, "--device", device, "--name", f"w{n}", "--json"],
            cwd=repo,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=clean_env(),
        )
        for n, device in enumerate(devices)
    ]
    events = []
    for proc in procs:
        out, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"a worker failed ({proc.returncode}):\n{out}\n{err}")
        events += [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    wall = time.monotonic() - start
    rounds = [e for e in events if e.get("event") == "round"]
    for e in rounds:
        line = f"round {e['round']} ({e['worker']}): {e['status']}, {e['hypothesis']}"
        print(line + (f" ({e['reason']})" if e.get("reason") else ""), file=sys.stderr)
    return {
        "workers": len(devices),
        "devices": ",".join(devices),
        "rounds": len(rounds),
        "accepted": sum(e.get("status") in ACCEPTING for e in rounds),
        "rebased": sum(int(e.get("rebases", 0)) for e in rounds),
        "wall s": round(wall, 1),
        "rounds/hour": round(len(rounds) / wall * 3600),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", default="0,0", help="the two workers' devices")
    parser.add_argument("--shapes", default="2048,4096,8192", help="square GEMM sizes (GPU)")
    parser.add_argument("--dir", type=Path)
    args = parser.parse_args()
    gpu = has_gpu()
    root = args.dir or Path(tempfile.mkdtemp(prefix="kgit-gpu-workers-"))
    repo = root / "repo"
    repo.mkdir(parents=True)
    sizes = {int(s) for s in args.shapes.split(",")}
    kernel = dataclasses.replace(
        GEMM, gpu_shapes=[s for s in GEMM.gpu_shapes if s["M"] == s["N"] == s["K"] in sizes]
    )
    demo = Demo(kernel, repo, gpu)
    demo.create_repo()
    demo.write_manifest()
    manifest = json.loads((repo / "manifest.yaml").read_text())
    manifest["gate_audit_mutants"] = 0  # device time goes to the rounds
    (repo / "manifest.yaml").write_text(json.dumps(manifest, indent=2))
    started = time.monotonic()
    demo.kgit("init", "gemm_workers", "--manifest", "manifest.yaml")
    demo.kgit("-q", "baseline")
    baseline_s = time.monotonic() - started
    print(f"baseline: {baseline_s:.1f} s", file=sys.stderr, flush=True)
    devices = args.devices.split(",")
    rows = []
    for queue, run_on in ((QUEUES[1], devices[:1]), (QUEUES[2], devices)):
        rows.append(workers(repo, queue_file(root, queue), run_on))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    shown = subprocess.run(
        [sys.executable, "-m", "kgit", "log", "--json"],
        cwd=repo,
        env=clean_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    log = json.loads(shown.stdout)
    numbers = [row["round"] for row in log]
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "gpu_workers.json").write_text(
            json.dumps({"rows": rows, "log": log, "baseline_s": baseline_s}, indent=1)
        )
    labels = [str(s["label"]) for s in (kernel.gpu_shapes if gpu else kernel.cpu_shapes)]
    print(f"\n{'GPU' if gpu else 'CPU (interpreter)'}: example GEMM, {', '.join(labels)}")
    print(f"baseline {baseline_s:.0f} s; rounds in the record: {numbers}")
    print(f"round numbers unique: {len(numbers) == len(set(numbers))}")
    print(tabulate(rows, headers="keys", tablefmt="github"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
