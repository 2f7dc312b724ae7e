"""Two resident harnesses of one kernel (A/A): does how they were started move their ratio?

    python3 bench/worker_pair.py --quads 16 --repeat 2

Speaks kgit's resident-harness protocol (kgit/records/protocol.py) to two processes of the bundled RMSNorm
example's harness, as `kgit round validate` does under `decision_policy: interleaved`, and times
quads of blocks (A,B,B,A then B,A,A,B) on each shape. Per start-up order it prints the B/A ratio
of each shape's Forward GB/s with a 95% interval over the quads:

  sequential  B's first pass, then A started (kgit's order today);
  swapped     then B killed and started again, after A: the later process is now B;
  together    A and B started at once.

With --relocate, each side's units are placed anew in device memory once a quad, as kgit's
validations do (kgit/measure/timing_blocks.py). With --units K, each worker keeps K units per
shape, at K places in device memory at once, and takes them in turn, one a block (a quad's two
blocks of a side then average two places); a difference that placement makes should shrink.

An A/A ratio away from 1 by more than its interval is a difference between the two processes
that kgit's pair statistics cannot see within one validation. The table is printed last; rows go
to $OUT/worker_pair.json when OUT is set.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from kgit.records.protocol import block_request, parse_marker  # noqa: E402

EXAMPLE = ROOT / "kgit" / "examples" / "rmsnorm"
SIZES = [(4096, 4096), (16384, 4096), (32768, 8192)]
METRICS = ("Forward GB/s", "Backward GB/s")


class Worker:
    def __init__(
        self, name: str, scratch: Path, shapes: Path, block_ms: float, env: dict[str, str]
    ):
        self.name, self.scratch, self.count = name, scratch, 0
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "bench_rmsnorm.py",
                "--summary-csv",
                str(scratch / f"{name}-first.csv"),
                "--shapes",
                str(shapes),
            ],
            cwd=EXAMPLE,
            env={
                **os.environ,
                **env,
                "KGIT_WORKER": "1",
                "KGIT_WORKER_FIRST_BLOCK_MS": f"{block_ms:g}",
                "PYTHONPATH": f"{ROOT}:{os.environ.get('PYTHONPATH', '')}",
            },
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(scratch / f"{name}.log", "w"),  # noqa: SIM115 (lives with the worker)
            text=True,
        )
        self.started = time.monotonic()

    def wait(self, kind: str) -> dict[str, object]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            marker = parse_marker(line.rstrip("\n"))
            if marker and marker[0] == kind:
                return marker[1]
        raise RuntimeError(f"worker {self.name} exited (code {self.proc.wait()})")

    def block(
        self, shapes: Path, block_ms: float, relocate: bool = False
    ) -> dict[str, dict[str, float]]:
        assert self.proc.stdin is not None
        self.count += 1
        csv = self.scratch / f"{self.name}-{self.count}.csv"
        request = block_request(self.count, str(csv), str(shapes), block_ms, relocate=relocate)
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        self.wait("reply")
        lines = csv.read_text().splitlines()
        header = lines[0].split(",")
        rows = {}
        for line in lines[1:]:
            cells = dict(zip(header, line.split(","), strict=False))
            rows[cells["label"]] = {m: float(cells[m]) for m in METRICS}
            if cells.get("Check") != "PASS":
                log = (self.scratch / f"{self.name}.log").read_text()[-3000:]
                raise RuntimeError(f"worker {self.name}: {cells['label']} FAILed a block:\n{log}")
        return rows

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def quads(
    a: Worker, b: Worker, shape_files: list[Path], count: int, block_ms: float, relocate: bool
) -> dict[str, list[float]]:
    logs: dict[str, list[float]] = {}
    for q in range(count):
        order = "ABBA" if q % 2 == 0 else "BAAB"
        for path in shape_files:
            seen: dict[str, list[dict[str, dict[str, float]]]] = {"A": [], "B": []}
            for name in order:
                # --relocate: each side's first block of a quad on units placed anew, as kgit does
                first = relocate and not seen[name]
                seen[name].append((a if name == "A" else b).block(path, block_ms, first))
            for label in seen["A"][0]:
                for metric in METRICS:
                    ga = statistics.fmean(math.log(r[label][metric]) for r in seen["A"])
                    gb = statistics.fmean(math.log(r[label][metric]) for r in seen["B"])
                    logs.setdefault(f"{label} {metric.split()[0]}", []).append(gb - ga)
    return logs


def summary(config: str, trial: int, logs: dict[str, list[float]]) -> list[dict[str, object]]:
    rows = []
    for key, values in logs.items():
        mean = statistics.fmean(values)
        half = 1.96 * statistics.stdev(values) / math.sqrt(len(values))
        rows.append(
            {
                "config": config,
                "trial": trial,
                "shape": key,
                "ratio_pct": (math.exp(mean) - 1) * 100,
                "half_ci_pct": half * 100,
                "quads": len(values),
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quads", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--block-ms", type=float, default=25.0)
    parser.add_argument("--configs", default="sequential,swapped,together")
    parser.add_argument(
        "--units",
        type=int,
        default=1,
        help="measuring units per shape in each worker, built at once at as many places in "
        "device memory and taken in turn, one a block (KGIT_BLOCK_UNITS in both workers)",
    )
    parser.add_argument(
        "--relocate",
        action="store_true",
        help="place each side's units anew once a quad, as kgit round validate does",
    )
    parser.add_argument("--sizes", default=",".join(f"{m}x{n}" for m, n in SIZES))
    args = parser.parse_args()
    os.environ["KGIT_BLOCK_UNITS"] = str(args.units)  # the workers inherit it
    scratch = Path(tempfile.mkdtemp(prefix="worker-pair-"))
    sizes = [tuple(int(v) for v in size.split("x")) for size in args.sizes.split(",")]
    shapes = [{"label": f"rmsnorm_{m}x{n}", "M": m, "N": n} for m, n in sizes]
    all_shapes = scratch / "shapes.json"
    all_shapes.write_text(json.dumps(shapes))
    shape_files = []
    for shape in shapes:
        path = scratch / f"{shape['label']}.json"
        path.write_text(json.dumps([shape]))
        shape_files.append(path)
    configs = args.configs.split(",")
    rows: list[dict[str, object]] = []
    for trial in range(args.repeat):
        workers: list[Worker] = []
        try:
            if "together" in configs:
                a = Worker(f"A{trial}t", scratch, all_shapes, args.block_ms, {})
                b = Worker(f"B{trial}t", scratch, all_shapes, args.block_ms, {})
                workers += [a, b]
                a.wait("ready"), b.wait("ready")
                rows += summary(
                    "together",
                    trial,
                    quads(a, b, shape_files, args.quads, args.block_ms, args.relocate),
                )
                a.close(), b.close()
                print(f"trial {trial}: together done", flush=True)
            b = Worker(f"B{trial}", scratch, all_shapes, args.block_ms, {})
            workers.append(b)
            b.wait("ready")
            a = Worker(f"A{trial}", scratch, all_shapes, args.block_ms, {})
            workers.append(a)
            a.wait("ready")
            rows += summary(
                "sequential",
                trial,
                quads(a, b, shape_files, args.quads, args.block_ms, args.relocate),
            )
            print(f"trial {trial}: sequential done", flush=True)
            if "swapped" in configs:
                b.close()
                b = Worker(f"B{trial}s", scratch, all_shapes, args.block_ms, {})
                workers.append(b)
                b.wait("ready")
                rows += summary(
                    "swapped",
                    trial,
                    quads(a, b, shape_files, args.quads, args.block_ms, args.relocate),
                )
                print(f"trial {trial}: swapped done", flush=True)
        finally:
            for w in workers:
                w.close()
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "worker_pair.json").write_text(json.dumps(rows, indent=1))
    print("\nA/A B/A ratio per shape (RMSNorm example, bf16), 95% interval over quads")
    print("| config | trial | shape | B/A % | ± % | quads |")
    for r in rows:
        print(
            f"| {r['config']} | {r['trial']} | {r['shape']} | {r['ratio_pct']:+.3f} | {r['half_ci_pct']:.3f} | {r['quads']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
