"""Verdicts you can trust, at what cost: kgit's interleaved policy against planted changes, through
the CLI, process start included; the seed policy's wall time measured in the same call.

    python3 bench/verdict_check.py --kernel gemm --aa 12 --slow 8 --fast 8 --seed 3

A round's seconds count its commit (where the pre-commit hook runs the gate, the example's tests
by default) and its `round validate`, process start included, under both policies alike.

One throwaway repository per kernel (the bundled example: the GEMM or the RMSNorm), a campaign
under `decision_policy: interleaved` whose baseline kernel carries a planted delay of PCT (3%) of
its measured time on each representative shape. Then rounds, in turns, each a real
`kgit round start` / edit / `git commit` / `kgit round validate --json` / `kgit round rollback`:

  aa    a comment changes (a new tree, the same kernel): any change called is a false claim;
  slow  one more delay of PCT on one shape: found when that shape is called worse and the round
        is rolled back;
  fast  the planted delays removed: a PCT speedup on every representative shape, found when
        the round is accepted.

A delay is a GPU sleep (`torch.cuda._sleep`) after the op's forward, of PCT of the shape's
forward (RMSNorm: Forward GB/s) or forward+backward (GEMM: Combined Step TFLOPS) time in the
baseline's CSV. It counts SM cycles, so it follows the clock as the kernel does; the change each
verdict estimated is printed, so the size actually planted can be read off the table.

`--seed N` first times N A/A validations under `decision_policy: seed` (the campaign that sizes
the delays), for the wall-time comparison. Both policies' times include process start: on a host
that keeps no bytecode cache (PYTHONDONTWRITEBYTECODE=1 over an install without .pyc files, as on
the H200 hosts here) every process compiles torch's Python anew, ~5 s; unset it and point
PYTHONPYCACHEPREFIX at a writable folder to time what an ordinary install costs. The table is printed
last; the rows also go to $OUT/verdict_check_KERNEL.json when OUT is set, and after each
validation to $OUT/partial_KERNEL.json, which survives the call's time limit.

    python3 bench/verdict_check.py --pool CALL1/partial_gemm.json CALL2/partial_gemm.json ...

pools what several calls measured (those JSON files, partial or whole) into one table per kernel,
each call's time per validation set against the seed policy's in that same call.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from kgit.demo import GEMM, RMSNORM, DemoKernel  # noqa: E402
from kgit.gitdoor import clean_env  # noqa: E402
from kgit.resources import examples_dir  # noqa: E402

KERNELS = {"gemm": GEMM, "rmsnorm": RMSNORM}
OP_FUNCTION = {"gemm": ("matmul", "(a.shape[-2], b.shape[-1])"), "rmsnorm": ("rmsnorm", "a.shape")}
# The gate: the example's own tests (what a user's campaign runs, on the GPU), or a command that
# does nothing, to keep device time for verdicts.
GATES = {"tests": "{python} -m pytest -q -x {tests}", "trivial": "{python} -c pass"}
# SM cycles per ms assumed for the delay: the H200 under load runs ~1.5-1.9 GHz.
CYCLES_PER_MS = 1_700_000

PLANT = """

# --- verdict_check: planted delays (cycles of GPU sleep after the forward, by shape) ---
PLANTED = {planted!r}
_unplanted = {name}


def {name}(a, b):  # noqa: F811
    out = _unplanted(a, b)
    cycles = PLANTED.get(str(tuple({key})))
    if cycles and a.is_cuda:
        torch.cuda._sleep(cycles)
    return out
"""


def sh(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=clean_env(), text=True, capture_output=True)
    if check and proc.returncode != 0:
        sys.exit(f"`{shlex.join(args)}` exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def kgit(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return sh(sys.executable, "-m", "kgit", *args, cwd=repo, check=check)


class Campaign:
    def __init__(self, kernel: DemoKernel, root: Path, shapes: list[dict[str, Any]]) -> None:
        self.kernel, self.root, self.shapes = kernel, root, shapes
        self.source = (root / kernel.kernel_file).read_text()
        self.name = ""
        self.planted: dict[str, int] = {}
        self.baseline_phases: dict[str, dict[str, float]] = {}

    def write_kernel(self, planted: dict[str, int], comment: str = "") -> None:
        name, key = OP_FUNCTION[self.kernel.op]
        text = self.source + PLANT.format(planted=planted, name=name, key=key)
        if comment:
            text += f"# {comment}\n"
        (self.root / self.kernel.kernel_file).write_text(text)

    def manifest(
        self, policy: str, representative: list[str], gate: str, audit: int | None
    ) -> Path:
        path = self.root / f"manifest-{policy}.yaml"
        data: dict[str, Any] = {
            "target_op": self.kernel.op,
            "target_backend": "TRITON",
            "primary_metric": self.kernel.metric,
            "kernel_source": [self.kernel.kernel_file],
            "test_command": GATES[gate].format(
                python=shlex.quote(sys.executable), tests=self.kernel.test_file
            ),
            "quick_command": f"{shlex.quote(sys.executable)} {self.kernel.harness_file}",
            "timeout_s": 900,
            "max_iterations": 119,
            "target_shapes": self.shapes,
            "representative_shapes": representative,
            "decision_policy": policy,
        }
        if audit is not None:  # None: the manifest's default, as a user's campaign has it
            data["gate_audit_mutants"] = audit
        path.write_text(json.dumps(data, indent=1))
        return path

    def start(
        self, name: str, policy: str, representative: list[str], gate: str, audit: int | None
    ) -> float:
        self.name = name
        manifest = self.manifest(policy, representative, gate, audit)
        kgit(self.root, "init", name, "-m", str(manifest))
        start = time.monotonic()
        result = kgit(self.root, "-c", name, "-q", "baseline", "--json")
        seconds = time.monotonic() - start
        if result.returncode != 0:
            print(f"baseline {name} failed:\n{(result.stdout + result.stderr)[-2000:]}", flush=True)
            return float("nan")
        phases = json.loads(result.stdout).get("phases", {})
        print(f"baseline {name} ({policy}): {seconds:.1f} s; phases {phases}", flush=True)
        self.baseline_phases[policy] = phases
        return seconds

    def times_ms(self) -> dict[str, float]:
        """Per shape, the time the primary metric is computed from, from the baseline's CSV."""
        csv = sh(
            "git",
            "notes",
            f"--ref=refs/notes/kgit/{self.name}/bench",
            "show",
            f"kgit/{self.name}/best",
            cwd=self.root,
        ).stdout
        import csv as csvlib

        rows = list(csvlib.DictReader(csv.splitlines()))
        step = self.kernel.metric.startswith("Combined")
        return {
            r["label"]: float(r["Forward Time (ms)"])
            + (float(r["Backward Time (ms)"]) if step else 0)
            for r in rows
        }

    def round(
        self, hypothesis: str, planted: dict[str, int], comment: str, *, timeline: bool = False
    ) -> dict[str, Any]:
        kgit(self.root, "-c", self.name, "round", "start", hypothesis)
        self.write_kernel(planted, comment)
        # The commit runs the gate (the pre-commit hook); validate trusts that pass.
        committed = time.monotonic()
        sh("git", "commit", "-qam", hypothesis, cwd=self.root)
        commit_s = time.monotonic() - committed
        lines: list[str] | None = [] if timeline else None
        result, seconds, phases = timed_validate(self.root, self.name, lines)
        kgit(self.root, "-c", self.name, "round", "rollback", "--reason", "check", check=False)
        seconds += commit_s  # a round's cost: its gate and its validation
        phases["commit"] = round(commit_s, 2)
        if result.returncode != 0:
            return {"error": (result.stdout + result.stderr)[-2000:], "seconds": seconds}
        data = json.loads(result.stdout)
        shown = kgit(self.root, "-c", self.name, "show", str(data["round"]), "--json")
        note = json.loads(shown.stdout)["note"]
        return {
            "verdict": data,
            "statistics": note.get("statistics", {}),
            "seconds": seconds,
            "phases": phases,
            **({"timeline": lines} if lines is not None else {}),
        }


# Progress lines of `kgit round validate` that end a phase, and the phase they end.
PHASES = (
    ("gate", re.compile(r"^kgit: gate: ")),
    ("B ready", re.compile(r"^kgit: harness B: resident, ready")),
    ("A ready", re.compile(r"^kgit: harness A: resident, ready")),
    ("quads", re.compile(r"^kgit: pair \d+ ")),
)


def timed_validate(
    repo: Path, name: str, timeline: list[str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float, dict[str, float]]:
    """`kgit round validate --json` with its progress read as it comes: the seconds from the
    start at which each phase's last progress line appeared (process start included). Each line
    of its output (the harnesses' too) goes to TIMELINE, led by those seconds, when one is given."""
    argv = [sys.executable, "-m", "kgit", "-c", name, "round", "validate", "--json"]
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(
            argv, cwd=repo, env=clean_env(), text=True, stdout=out, stderr=subprocess.PIPE
        )
        assert proc.stderr is not None
        phases: dict[str, float] = {}
        err = []
        for line in proc.stderr:
            err.append(line)
            if timeline is not None:
                timeline.append(f"{time.monotonic() - start:7.2f} {line.rstrip()}")
            for phase, pattern in PHASES:
                if pattern.match(line):
                    phases[phase] = round(time.monotonic() - start, 2)
        proc.wait()
        seconds = time.monotonic() - start
        out.seek(0)
        result = subprocess.CompletedProcess(argv, proc.returncode, out.read(), "".join(err))
    phases["end"] = round(seconds, 2)
    return result, seconds, phases


def shape_key(shape: dict[str, Any], op: str) -> str:
    if op == "gemm":
        return str((shape["M"], shape["N"]))
    return str((shape["M"], shape["N"]))


def calls(result: dict[str, Any]) -> dict[str, str]:
    shapes = result.get("statistics", {}).get("shapes", {})
    return {label: e["call"] for label, e in shapes.items()}


def summarize(kind: str, results: list[dict[str, Any]], slowed: str) -> list[dict[str, Any]]:
    """The table's rows for one kind of round: one row, or for "slow" one per shape slowed (a
    result names its own slowed shape; older files name one for the whole call: SLOWED)."""
    if kind != "slow":
        return [_summary(kind, results, slowed)]
    by_shape: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        by_shape.setdefault(result.get("slowed", slowed), []).append(result)
    return [_summary(kind, group, shape) for shape, group in sorted(by_shape.items())]


def _summary(kind: str, results: list[dict[str, Any]], slowed: str) -> dict[str, Any]:
    done = [r for r in results if "verdict" in r]
    decisions = [r["verdict"]["decision"] for r in done]
    accepted = sum(d.startswith("ACCEPTED") for d in decisions)
    agg = [r["statistics"].get("aggregate", {}) for r in done]
    changes = [(e.get("ratio", 1.0) - 1) * 100 for e in agg if e]
    row: dict[str, Any] = {
        "condition": kind if kind != "slow" else f"slow {slowed}",
        "validations": len(results),
        "errors": len(results) - len(done),
        "accepted": accepted,
        "mean_s": statistics.fmean(r["seconds"] for r in results) if results else None,
        "agg_change_pct": statistics.fmean(changes) if changes else None,
    }
    if kind == "aa":
        claims = [
            r
            for r in done
            if r["statistics"].get("aggregate", {}).get("call") in ("better", "worse")
            or any(c in ("better", "worse") for c in calls(r).values())
        ]
        row["false_claims"] = len(claims)
    if kind == "slow":
        row["found"] = sum(
            calls(r).get(slowed) == "worse" and not r["verdict"]["decision"].startswith("ACCEPTED")
            for r in done
        )
        est = [
            (r["statistics"]["shapes"][slowed]["ratio"] - 1) * 100
            for r in done
            if slowed in r["statistics"].get("shapes", {})
        ]
        row["slowed_change_pct"] = statistics.fmean(est) if est else None
        floors = [
            r["statistics"]["shapes"][slowed].get("detectable_pct")
            for r in done
            if slowed in r["statistics"].get("shapes", {})
        ]
        floors = [f for f in floors if f is not None]
        row["slowed_detectable_pct"] = statistics.median(floors) if floors else None
    if kind == "fast":
        row["found"] = accepted
    detect = [
        e.get("detectable_pct")
        for r in done
        for e in r["statistics"].get("shapes", {}).values()
        if e.get("detectable_pct") is not None
    ]
    row["detectable_pct_median"] = statistics.median(detect) if detect else None
    row["pairs_mean"] = (
        statistics.fmean(r["statistics"].get("pairs", 0) for r in done) if done else None
    )
    return row


def print_table(rows: list[dict[str, Any]], seed_s: float | None) -> None:
    print(
        "| condition | validations | errors | claims/found | accepted | est. change % | "
        "detectable % (median; slow: its shape's) | pairs | s per validation | vs seed |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        hits = r.get("false_claims", r.get("found"))
        detectable = r.get("slowed_detectable_pct", r["detectable_pct_median"])
        ratio = f"{r['mean_s'] / seed_s:.2f}x" if seed_s and r["mean_s"] else "-"
        change = r.get("slowed_change_pct", r["agg_change_pct"])
        print(
            f"| {r['condition']} | {r['validations']} | {r['errors']} | {hits} | {r['accepted']} | "
            f"{_f(change, '+.2f')} | {_f(detectable, '.2f')} | "
            f"{_f(r['pairs_mean'], '.1f')} | {_f(r['mean_s'], '.1f')} | {ratio} |"
        )


def pool(paths: list[Path]) -> int:
    """One table per kernel over what several calls measured; the seed policy's time is each
    call's own, so the wall-time ratio is given per call and never across calls."""
    calls_by_kernel: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    for path in paths:
        data = json.loads(path.read_text())
        calls_by_kernel.setdefault(data["kernel"], []).append((path, data))
    for kernel_name, found in calls_by_kernel.items():
        # A call's partial file is a prefix of its whole file: given both, it would count twice.
        firsts = [
            json.dumps(data["results"][kind][0], sort_keys=True)
            for _, data in found
            for kind in ("aa", "slow", "fast")
            if data["results"][kind]
        ]
        if len(firsts) != len(set(firsts)):
            sys.exit(f"{kernel_name}: two files hold the same call's validations; give one")
        slowed = sorted(
            {r.get("slowed", data["slowed"]) for _, data in found for r in data["results"]["slow"]}
        )
        print(f"\n{kernel_name}: {len(found)} calls pooled; slowed shapes {', '.join(slowed)}")
        print(
            "| call | A/A | slow | fast | seed s per validation | s per validation | vs seed "
            "| seed baseline s | baseline s | vs seed |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        pooled: dict[str, list[dict[str, Any]]] = {"aa": [], "slow": [], "fast": []}
        for path, data in found:
            seed = data.get("seed") or data.get("seed_results") or []
            results = data["results"]
            every = [r for kind in pooled for r in results[kind]]
            for kind in pooled:
                pooled[kind] += results[kind]
            seed_s = statistics.fmean(r["seconds"] for r in seed) if seed else None
            mean_s = statistics.fmean(r["seconds"] for r in every) if every else None
            ratio = f"{mean_s / seed_s:.2f}x" if seed_s and mean_s else "-"
            each = ", ".join(f"{r['seconds']:.1f}" for r in seed)
            base, seed_base = data.get("baseline_s"), data.get("seed_baseline_s")
            base_ratio = f"{base / seed_base:.2f}x" if base and seed_base else "-"
            print(
                f"| {path} | {len(results['aa'])} | {len(results['slow'])} | "
                f"{len(results['fast'])} | {_f(seed_s, '.1f')} ({each}) | {_f(mean_s, '.1f')} | "
                f"{ratio} | {_f(seed_base, '.1f')} | {_f(base, '.1f')} | {base_ratio} |"
            )
        print()
        rows = [row for kind in pooled for row in summarize(kind, pooled[kind], slowed[0])]
        print_table(rows, None)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernel", choices=sorted(KERNELS), default="gemm")
    parser.add_argument("--aa", type=int, default=10)
    parser.add_argument("--slow", type=int, default=6)
    parser.add_argument("--fast", type=int, default=6)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--pct", type=float, default=3.0)
    parser.add_argument("--shapes", help="comma-separated labels to keep (default: all)")
    parser.add_argument(
        "--slow-shapes",
        help="representative shapes the slow rounds slow, in turn (comma-separated, or 'all'; "
        "default: the middle one)",
    )
    parser.add_argument(
        "--gate",
        choices=sorted(GATES),
        default="tests",
        help="the campaign's test_command: the example's tests (default), or one that does nothing",
    )
    parser.add_argument(
        "--audit",
        type=int,
        help="gate_audit_mutants of the interleaved campaign (default: the manifest's default)",
    )
    parser.add_argument("--dir", type=Path)
    parser.add_argument(
        "--pool", nargs="+", type=Path, metavar="JSON", help="pool earlier calls' files; no run"
    )
    args = parser.parse_args()
    if args.pool:
        return pool(args.pool)

    kernel = KERNELS[args.kernel]
    if sys.flags.dont_write_bytecode:
        print(
            "warning: PYTHONDONTWRITEBYTECODE is set: where no .pyc is installed, every process "
            "compiles its imports anew, and both policies' times include it",
            flush=True,
        )
    gpu = _has_cuda()
    gpu_name = _gpu_name() if gpu else "CPU"
    shapes = kernel.gpu_shapes if gpu else kernel.cpu_shapes
    if args.kernel == "gemm" and gpu:  # 256^3 .. 8192^3, as the issue's campaign
        shapes = [
            {"label": f"{m}x{m}x{m}", "M": m, "N": m, "K": m, "dtype": "bf16"}
            for m in (256, 1024, 4096, 8192)
        ]
    if args.shapes:
        keep = args.shapes.split(",")
        shapes = [s for s in shapes if s["label"] in keep]
    representative = (
        [s["label"] for s in shapes][-3:] if len(shapes) > 3 else [s["label"] for s in shapes]
    )
    if args.kernel == "gemm" and gpu:
        representative = ["256x256x256", "4096x4096x4096", "8192x8192x8192"]
    root = args.dir or Path(tempfile.mkdtemp(prefix="kgit-verdicts-"))
    root.mkdir(parents=True, exist_ok=True)
    source = examples_dir() / kernel.folder
    for name in (kernel.kernel_file, kernel.test_file, kernel.harness_file):
        shutil.copy(source / name, root / name)
    (root / ".gitignore").write_text("__pycache__/\n.pytest_cache/\nmanifest-*.yaml\n")
    sh("git", "init", "-q", "-b", "main", cwd=root)
    sh("git", "config", "user.name", "verdict check", cwd=root)
    sh("git", "config", "user.email", "check@kgit.invalid", cwd=root)
    kernel_path = root / kernel.kernel_file
    text = kernel_path.read_text()
    for name, value in kernel.baseline.items():  # the GEMM without its autotuner, as the demo
        text = re.sub(rf"^{name} = \d+$", f"{name} = {value}", text, flags=re.M)
    kernel_path.write_text(text)
    camp = Campaign(kernel, root, shapes)
    camp.write_kernel({})
    sh("git", "add", ".", cwd=root)
    sh("git", "commit", "-qm", "example kernel", cwd=root)

    # Measure the unplanted kernel once to size the delays, then baseline the planted one.
    print(f"sizing the delays on {args.kernel}: {', '.join(representative)}", flush=True)
    # The seed's baseline, for the cost comparison: the gate then one pass (the seed has no audit).
    seed_baseline_s = camp.start("sizing", "seed", representative, args.gate, 0)
    times = camp.times_ms()
    print(f"seed baseline: {seed_baseline_s:.1f} s; call times (ms) {times}", flush=True)
    # The seed policy's wall time, on the same machine and kernel: A/A rounds of this campaign.
    seed_results = []
    for j in range(args.seed):
        seed_results.append(camp.round(f"seed aa {j}", {}, f"seed aa {j}", timeline=j == 1))
        decision = seed_results[-1].get("verdict", {}).get("decision")
        print(
            f"[seed {j}] {decision} {seed_results[-1]['seconds']:.1f} s "
            f"{seed_results[-1].get('phases', {})}",
            flush=True,
        )
    keys = {s["label"]: shape_key(s, args.kernel) for s in shapes}
    planted = {
        keys[label]: int(times[label] * args.pct / 100 * CYCLES_PER_MS) for label in representative
    }
    slowed = representative[len(representative) // 2]
    slow_shapes = (
        representative
        if args.slow_shapes == "all"
        else args.slow_shapes.split(",")
        if args.slow_shapes
        else [slowed]
    )
    sh("git", "checkout", "-q", "main", cwd=root)  # a best line moves only through kgit
    camp.write_kernel(planted)
    sh("git", "commit", "-qam", f"planted {args.pct}% delays", cwd=root)
    baseline_s = camp.start("verdicts", "interleaved", representative, args.gate, args.audit)
    print(
        f"baseline with calibration and audit: {baseline_s:.1f} s "
        f"({baseline_s / seed_baseline_s:.2f}x the seed's); delays {planted}",
        flush=True,
    )

    results: dict[str, list[dict[str, Any]]] = {"aa": [], "slow": [], "fast": []}

    def slower(shape: str) -> dict[str, int]:
        return {**planted, keys[shape]: 2 * planted[keys[shape]]}

    plan = {"aa": args.aa, "slow": args.slow, "fast": args.fast}
    i = 0
    while any(len(results[k]) < plan[k] for k in plan):
        for kind in ("aa", "slow", "fast"):
            if len(results[kind]) >= plan[kind]:
                continue
            i += 1
            shape = slow_shapes[len(results["slow"]) % len(slow_shapes)]
            kernel_planted = {"aa": planted, "slow": slower(shape), "fast": {}}[kind]
            # The first validation's every output line, timed: where its seconds go.
            result = camp.round(f"{kind} {i}", kernel_planted, f"{kind} {i}", timeline=i <= 2)
            if kind == "slow":
                result["slowed"] = shape
            results[kind].append(result)
            if os.environ.get("OUT"):  # what was measured survives a timeout of the call
                partial = {
                    "kernel": args.kernel,
                    "gpu_name": gpu_name,
                    "pct": args.pct,
                    "call_ms": times,
                    "seed_baseline_s": seed_baseline_s,
                    "baseline_s": baseline_s,
                    "slowed": slowed,
                    "results": results,
                    "seed": seed_results,
                }
                Path(os.environ["OUT"], f"partial_{args.kernel}.json").write_text(
                    json.dumps(partial)
                )
            v = result.get("verdict", {})
            print(
                f"[{i}] {kind}: {v.get('decision', 'ERROR')} "
                f"{result['statistics'].get('aggregate', {}).get('call', '') if 'statistics' in result else ''} "
                f"calls {calls(result)} pairs {result.get('statistics', {}).get('pairs')} "
                f"{result['seconds']:.1f} s {result.get('phases', {})}"
                + (f"\n{result['error']}" if "error" in result else ""),
                flush=True,
            )

    rows = [
        row for kind in ("aa", "slow", "fast") for row in summarize(kind, results[kind], slowed)
    ]
    seed_s = statistics.fmean(r["seconds"] for r in seed_results) if seed_results else None
    out = {
        "kernel": args.kernel,
        "gpu": gpu,
        "gpu_name": gpu_name,
        "call_ms": times,
        "seed_baseline_s": seed_baseline_s,
        "pct": args.pct,
        "slowed": slowed,
        "rows": rows,
        "seed_mean_s": seed_s,
        "baseline_s": baseline_s,
        "planted_cycles": planted,
        "results": results,
        "seed_results": seed_results,
    }
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], f"verdict_check_{args.kernel}.json").write_text(
            json.dumps(out, indent=1)
        )
    every = [r for kind in results.values() for r in kind]
    mean_s = statistics.fmean(r["seconds"] for r in every) if every else None
    print(
        f"\n{args.kernel} on {gpu_name}: planted {args.pct}% (slowed: {', '.join(slow_shapes)}); "
        f"gate: {args.gate}"
    )
    print(
        f"baseline: {baseline_s:.1f} s against the seed's {seed_baseline_s:.1f} s: "
        f"{baseline_s / seed_baseline_s:.2f}x (goal <= 1.5x)"
    )
    if seed_s and mean_s:
        print(
            f"validation: {mean_s:.1f} s against the seed's {seed_s:.1f} s: "
            f"{mean_s / seed_s:.2f}x (goal <= 1.2x)"
        )
    print_table(rows, seed_s)
    return 0


def _f(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _gpu_name() -> str:
    import torch

    return str(torch.cuda.get_device_name())


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


if __name__ == "__main__":
    sys.exit(main())
