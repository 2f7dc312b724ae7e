"""Where does a resident harness's own steady offset come from? Processes of one memory-bound
kernel (RMSNorm 32768x8192) that coexist, as kgit's A and B workers do, read ~1% apart, steadily
within each pair (bench/worker_pair.py), while buffer placements within one process spread by
~0.1% (a placement study, removed at e05c134: this script's `alone` phase asks the same).

    python3 bench/coexist_study.py --units 3 --rounds 12

Processes that each hold UNITS measuring units (unit 0 as a worker builds it; the others after
`torch.cuda.empty_cache()` and a padding allocation of a random size), timed in short blocks,
one process at a time, in shuffled order, through these phases:

  alone     P1 only;
  beside    P2 started and built (P1 keeps its units): P1 and P2 in turns;
  after     P2 gone: P1 alone again;
  third     P3 started: P1 and P3 in turns;
  rebuilt   P1 frees every unit, empties its cache and builds new ones, beside P3.

If P1's time moves between `alone`, `beside` and `after`, another process's presence is the
cause; if P1, P2 and P3 differ by ~1% while each one's units agree, the offset belongs to the
process (and only more processes per side average it); if units of one process spread as much,
it is placement, and rebuilding the unit turns it into noise. The table is printed last; rows go
to $OUT/coexist.json when OUT is set.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "kgit" / "examples" / "rmsnorm"
PAD_UNIT = 2 * 1024**2


def child(args: argparse.Namespace) -> None:
    sys.path[:0] = [str(EXAMPLE), str(HERE.parent)]
    import rmsnorm_kernel
    import torch

    rng = random.Random(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # cpu: a smoke test
    units: list[tuple[object, object]] = []
    keep: list[object] = []

    def build(pad_mb: int) -> None:
        pad = torch.empty(pad_mb * 1024**2, dtype=torch.uint8, device=device)
        keep.append(pad)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            pool = [
                (
                    torch.randn(args.m, args.n, device=device, dtype=torch.bfloat16),
                    1.0 + 0.1 * torch.randn(args.n, device=device, dtype=torch.bfloat16),
                )
                for _ in range(2)
            ]
            for x, w in pool:
                rmsnorm_kernel.rmsnorm(x, w)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for x, w in pool:
                rmsnorm_kernel.rmsnorm(x, w)
        units.append((pool, graph))

    def make_units() -> None:
        units.clear()
        keep.clear()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        for index in range(args.units):
            build(0 if index == 0 else rng.randrange(1, args.max_pad_mb // 2) * 2)

    if args.unit == "kgit":
        # The unit as a resident harness builds it: kgit's block mode around the memory
        # template's forward (and, with --backward, its backward block after each forward).
        from kgit.measure.fwdbwd import time_backward, time_forward
        from kgit.measure.timing import block_mode

        generation = [0]

        def make_inputs() -> list[torch.Tensor]:
            x = torch.randn(args.m, args.n, device=device, dtype=torch.bfloat16)
            return [x, 1.0 + 0.1 * torch.randn(args.n, device=device, dtype=torch.bfloat16)]

        def kgit_block(index: int) -> float:
            label = f"g{generation[0]}u{index}"
            with block_mode(args.block_ms, label):
                fwd = time_forward(rmsnorm_kernel.rmsnorm, make_inputs, repeats=100, warmup_ms=0)
                if args.backward:
                    time_backward(rmsnorm_kernel.rmsnorm, make_inputs, repeats=100, warmup_ms=0)
            return fwd.median_ms * 1e3

        def kgit_units() -> None:
            generation[0] += 1
            if device.type == "cuda":
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
            for index in range(args.units):
                keep.append(
                    torch.empty(
                        rng.randrange(0, args.max_pad_mb // 2) * 2 * 1024**2 if index else 0,
                        dtype=torch.uint8,
                        device=device,
                    )
                )
                kgit_block(index)

        kgit_units()
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            request = json.loads(line)
            if request["cmd"] == "time":
                print(json.dumps({"us": kgit_block(request["unit"])}), flush=True)
            elif request["cmd"] == "rebuild":
                kgit_units()
                print(json.dumps({"ready": True}), flush=True)
            else:
                return
        return

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def block(index: int, reps: int) -> float:
        graph = units[index][1]
        graph.replay()  # type: ignore[attr-defined]
        start.record()
        for _ in range(reps):
            graph.replay()  # type: ignore[attr-defined]
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / (reps * 2) * 1e3  # us per call

    with torch.no_grad():
        make_units()
        for _ in range(30):
            block(0, 1)
        reps = max(1, round(args.block_ms * 1e3 / block(0, 10) / 2))
        print(json.dumps({"ready": True, "reps": reps}), flush=True)
        for line in sys.stdin:
            request = json.loads(line)
            if request["cmd"] == "time":
                print(json.dumps({"us": block(request["unit"], reps)}), flush=True)
            elif request["cmd"] == "rebuild":
                make_units()
                for _ in range(30):
                    block(0, 1)
                print(json.dumps({"ready": True}), flush=True)
            else:
                return


class Proc:
    def __init__(self, name: str, args: argparse.Namespace, seed: int) -> None:
        self.name = name
        argv = [sys.executable, __file__, "--child", "--seed", str(seed)]
        for key in ("units", "block_ms", "m", "n", "max_pad_mb", "unit"):
            argv += [f"--{key.replace('_', '-')}", str(getattr(args, key))]
        if args.backward:
            argv.append("--backward")
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.ask(None)

    def ask(self, request: dict[str, object] | None) -> dict[str, object]:
        assert self.proc.stdin and self.proc.stdout
        if request is not None:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"{self.name} died")
        return json.loads(line)  # type: ignore[no-any-return]

    def stop(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps({"cmd": "stop"}) + "\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=60)


def phase(
    name: str, procs: list[Proc], args: argparse.Namespace, rng: random.Random
) -> list[dict[str, object]]:
    slots = [(p, u) for p in procs for u in range(args.units)]
    times: dict[tuple[str, int], list[float]] = {(p.name, u): [] for p, u in slots}
    for _ in range(args.rounds):
        rng.shuffle(slots)
        for p, u in slots:
            times[(p.name, u)].append(float(p.ask({"cmd": "time", "unit": u})["us"]))  # type: ignore[arg-type]
    return [
        {"phase": name, "process": pname, "unit": u, "us": values}
        for (pname, u), values in times.items()
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--block-ms", type=float, default=25.0)
    parser.add_argument("--m", type=int, default=32768)
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--max-pad-mb", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--unit",
        choices=["plain", "kgit"],
        default="plain",
        help="plain: a graph of forwards built here; kgit: kgit's block mode, as a worker times",
    )
    parser.add_argument("--backward", action="store_true", help="kgit unit: a backward block too")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return 0
    rng = random.Random(args.seed)
    rows: list[dict[str, object]] = []
    p1 = Proc("P1", args, 101)
    rows += phase("alone", [p1], args, rng)
    p2 = Proc("P2", args, 102)
    rows += phase("beside", [p1, p2], args, rng)
    p2.stop()
    rows += phase("after", [p1], args, rng)
    p3 = Proc("P3", args, 103)
    rows += phase("third", [p1, p3], args, rng)
    p1.ask({"cmd": "rebuild"})
    rows += phase("rebuilt", [p1, p3], args, rng)
    p1.stop()
    p3.stop()
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "coexist.json").write_text(json.dumps(rows))
    reference = statistics.fmean(
        statistics.fmean(r["us"])
        for r in rows
        if r["phase"] == "alone"  # type: ignore[arg-type]
    )
    print(f"\nRMSNorm {args.m}x{args.n} bf16 forward ({args.unit} unit"
          f"{', backward blocks too' if args.backward else ''}), {args.block_ms:g} ms blocks, "
          f"{args.rounds} rounds a phase; time vs P1 alone (all units), sd of blocks")  # fmt: skip
    print("phase | process | unit 0 | unit 1.. | block sd")
    for name in ("alone", "beside", "after", "third", "rebuilt"):
        for pname in ("P1", "P2", "P3"):
            mine = [r for r in rows if r["phase"] == name and r["process"] == pname]
            if not mine:
                continue
            rel = [(statistics.fmean(r["us"]) / reference - 1) * 100 for r in mine]  # type: ignore[arg-type]
            sd = statistics.fmean(
                statistics.stdev(r["us"]) / statistics.fmean(r["us"]) * 100
                for r in mine  # type: ignore[arg-type]
            )
            others = " ".join(f"{x:+.3f}%" for x in rel[1:])
            print(f"{name} | {pname} | {rel[0]:+.3f}% | {others} | {sd:.3f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
