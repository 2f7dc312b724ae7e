"""A stand-in quick harness for kgit's own tests: it honours the harness contract without a GPU.

It reads `kernel.txt` from the current directory. `speed: X` sets Forward TFLOPS of every shape to
X times the shape's factor; `speed.<label>: X` overrides one shape; `fail: <label>` makes that
shape FAIL (`oom: <label>`: FAIL, said to be an out-of-memory as a kgit.measure harness says it); `exit: N` forces an exit code; `hang` sleeps; `flood` prints 50 MB; `drift` renames a
column; `snr: X` writes out_snr X (50 by default); `crlf` writes CRLF line ends with trailing spaces; `torch: V` reports that torch version in a fingerprint line (`gpu: NAME` that GPU); `noise: S` multiplies every value by
exp(N(0, S)), fresh each run; `boost.NAME: F` multiplies every speed by F (each line its own NAME, so
changes to different lines merge); `speeds: A,B,...` with `counter: PATH` gives the n-th run (counted
in the file PATH) speed A, B, ... in turn.

Started by kgit with KGIT_WORKER=1, a kernel with the flag `worker` speaks the resident harness
protocol (kgit/records/protocol.py, written out here: a harness need not import kgit);
`worker_crash_at: N` exits in the middle of the N-th block request, `worker_hang_at: N` never
answers it, `print_ready: LINE` says it is ready with LINE; `hold` makes it honour
KGIT_WORKER_HOLD (say it is held, wait for `start`) and log when it was held and when its first
pass ran to `events.log` beside its work tree (`pass_sleep: S` lengthens that pass); `tamper_reference` (a hostile kernel)
rewrites the sibling reference work tree's kernel.txt from the candidate's; `log_requests`
appends each block request, with the side's work tree, to `requests.log` beside its work tree;
`exit_sleep: S` takes S seconds to exit when asked, logging `exit-asked` and `exit-done` to
`events.log`. `block_sleep: S` takes S seconds over each block request.

`recorded_log: PATH` (an absolute path) appends a line per run to PATH: `recorded` when kgit
asked it to record its launches (KGIT_LAUNCH_LOG set), else `unrecorded`.

`orphan_log: PATH` (an absolute path) appends a line per run to PATH: its pid, its process group
and the pids of the earlier lines still running (`-` when none): a run beside a process left by a
killed kgit names it. The first run (PATH missing) then sleeps without a word: a long pass that
outlives a kgit killed in the middle of it.
"""

import argparse
import json
import math
import os
import random
import sys
import time
from pathlib import Path

HEADER = (
    "label,B,M,N,K,Check,Forward TFLOPS,Forward TFLOPS_stddev,Backward TFLOPS,"
    "Backward TFLOPS_stddev,Forward Time (ms),Backward Time (ms),out_snr,da_snr,db_snr"
)


def read_kernel() -> tuple[dict[str, str], set[str]]:
    settings: dict[str, str] = {}
    flags: set[str] = set()
    for line in Path("kernel.txt").read_text().splitlines():
        key, sep, value = line.partition(":")
        if sep:
            settings[key.strip()] = value.strip()
        elif line.strip():
            flags.add(line.strip())
    return settings, flags


def next_speed(settings: dict[str, str]) -> None:
    """`speeds` + `counter`: this run's speed is the next in the list (the last one repeats)."""
    if "speeds" not in settings:
        return
    counter = Path(settings["counter"])
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    speeds = settings["speeds"].split(",")
    settings["speed"] = speeds[min(n, len(speeds) - 1)].strip()


def write_csv(path: str, shapes: list[dict], settings: dict[str, str], flags: set[str]) -> bool:
    """The summary CSV of SHAPES; True when some shape FAILed."""
    header = HEADER.replace("Check", "check") if "drift" in flags else HEADER
    end = " \r\n" if "crlf" in flags else "\n"
    lines = [header]
    failing = False
    for shape in shapes:
        label = shape["label"]
        m, n, k, b = shape["M"], shape["N"], shape["K"], shape.get("B", 1)
        if settings.get("oom") == label:
            report = {"shape": label, "asked_bytes": 512 * 1024**2, "share": 0.25}
            print("\nkgit-out-of-memory: " + json.dumps(report), flush=True)
        if settings.get("fail") == label or settings.get("oom") == label:
            failing = True
            lines.append(f"{label},{b},{m},{n},{k},FAIL,nan,nan,nan,nan,nan,nan,nan,nan,nan")
            continue
        # Bigger shapes run faster, as on a GPU; the factor depends on the shape alone, so a quick
        # run on a subset measures each shape as the full run did.
        factor = 1 + math.log2(m / 64) / 10
        speed = float(settings.get(f"speed.{label}", settings.get("speed", "100"))) * factor
        for key, value in settings.items():  # `boost.NAME: F` lines multiply every shape's speed
            speed *= float(value) if key.startswith("boost.") else 1.0
        if "noise" in settings:  # run-to-run noise, relative sd (unseeded: every run differs)
            speed *= math.exp(random.gauss(0.0, float(settings["noise"])))
        fwd_ms = 2 * b * m * n * k / (speed * 1e12) * 1e3
        bwd_ms = 2 * fwd_ms
        lines.append(
            f"{label},{b},{m},{n},{k},PASS,{speed:.6f},{speed * 0.01:.6f},{speed:.6f},"
            f"{speed * 0.01:.6f},{fwd_ms:.9f},{bwd_ms:.9f},{settings.get('snr', '50.0')},50.0,50.0"
        )
    # CRLF mode: CRLF everywhere, and a trailing blank after each data row's last number.
    text = (
        lines[0] + ("\r\n" if "crlf" in flags else "\n") + "".join(line + end for line in lines[1:])
    )
    Path(path).write_bytes(text.encode())
    return failing


def running(pid: int) -> bool:
    """PID is a process that still runs (a zombie has ended: only its parent's wait is missing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def log_orphans(path: Path) -> bool:
    """`orphan_log`: this run's line; True for the first run."""
    earlier = path.read_text().splitlines() if path.exists() else []
    alive = [line.split()[0] for line in earlier if running(int(line.split()[0]))]
    with open(path, "a") as log:
        log.write(f"{os.getpid()} {os.getpgrp()} {','.join(alive) or '-'}\n")
    return not earlier


def log_event(event: str) -> None:
    with open(Path.cwd().parent / "events.log", "a") as log:
        log.write(f"{time.time():.6f} {Path.cwd().name} {event}\n")


def serve(settings: dict[str, str], flags: set[str], code: int) -> None:
    """The resident harness protocol, by hand."""
    ready = "kgit-worker-ready: " + json.dumps({"protocol": 1, "exit": code})
    print("\n" + settings.get("print_ready", ready), flush=True)
    for blocks, line in enumerate(sys.stdin, 1):
        request = json.loads(line)
        if request.get("cmd") != "block":
            if "exit_sleep" in settings:  # a slow teardown (a CUDA context), logged
                log_event("exit-asked")
                time.sleep(float(settings["exit_sleep"]))
                log_event("exit-done")
            return
        if int(settings.get("worker_crash_at", 0)) == blocks:
            print("worker: crashing mid-request", flush=True)
            os._exit(9)
        if int(settings.get("worker_hang_at", 0)) == blocks:
            time.sleep(600)
        if "log_requests" in flags:
            with open(Path.cwd().parent / "requests.log", "a") as log:
                log.write(json.dumps({"side": Path.cwd().name, **request}) + "\n")
        time.sleep(float(settings.get("block_sleep", 0)))
        shapes = json.loads(Path(request["shapes"]).read_text())
        failing = write_csv(request["summary_csv"], shapes, settings, flags)
        reply = {"id": request["id"], "exit": int(failing)}
        print("\nkgit-worker-reply: " + json.dumps(reply), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--summary-csv", required=True)
    parser.add_argument("--shapes", required=True)
    args = parser.parse_args()
    settings, flags = read_kernel()
    if "orphan_log" in settings and log_orphans(Path(settings["orphan_log"])):
        time.sleep(600)
    if "tamper_reference" in flags and Path.cwd().name == "candidate":  # a hostile kernel
        target = Path.cwd().parent / "reference" / "kernel.txt"
        target.write_text(target.read_text().replace("speed: 100", "speed: 50"))
    if "hang" in flags:
        time.sleep(600)
    if "flood" in flags:
        for _ in range(50_000):
            sys.stdout.write("x" * 1000 + "\n")
    held = os.environ.get("KGIT_WORKER_HOLD") == "1" and {"worker", "hold"} <= flags
    if held:
        log_event("held")
        print("\nkgit-worker-held: " + json.dumps({"protocol": 1}), flush=True)
        line = sys.stdin.readline()
        if not line.strip() or json.loads(line).get("cmd") != "start":
            return 0
    next_speed(settings)  # a held process counts as run once released: in kgit's order
    if "recorded_log" in settings:
        with open(settings["recorded_log"], "a") as log:
            log.write("recorded\n" if os.environ.get("KGIT_LAUNCH_LOG") else "unrecorded\n")
    if "hold" in flags:
        log_event("pass-start")
    time.sleep(float(settings.get("pass_sleep", 0)))
    shapes = json.loads(Path(args.shapes).read_text())
    failing = write_csv(args.summary_csv, shapes, settings, flags)
    if "hold" in flags:
        log_event("pass-end")
    if "torch" in settings or "gpu" in settings:  # the environment, as kgit.measure reports it
        info = {"gpu": settings.get("gpu", "FakeGPU")}
        visible = os.environ.get("CUDA_VISIBLE_DEVICES") or "0"  # the device, as kgit pinned it
        info.update({"gpu_index": "0", "gpu_uuid": f"GPU-fake-{visible}"})
        info.update({"torch": settings["torch"]} if "torch" in settings else {})
        print("fingerprint: " + json.dumps(info))
    print(f"all_pass: {str(not failing).lower()}", flush=True)
    code = int(settings.get("exit", 1 if failing else 0))
    if os.environ.get("KGIT_WORKER") == "1" and "worker" in flags:
        serve(settings, flags, code)
    return code


if __name__ == "__main__":
    sys.exit(main())
