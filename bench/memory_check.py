"""One-call check of the measuring sides' device memory on the card at hand (docs/measured.md,
"Device memory of the measuring sides").

Steps (each a real campaign run through the CLI, defaults kept):
  campaign  the user's 4-shape RMSNorm campaign (bf16 4096x4096, 16384x4096, 32768x8192,
            8192x2048) on the bundled RMSNorm kernel and its memory-template harness, played
            as `kgit demo --kernel rmsnorm` plays its own: baseline, two validations, finish;
  rmsnorm   `kgit demo --kernel rmsnorm` (its shapes reach 32768x8192);
  gemm      `kgit demo` (the GEMM, up to 8192^3).

Each harness process appends its peak device memory (torch's reserved bytes, the CUDA context
left out) per phase to KGIT_MEMORY_LOG; a thread reads the card's used memory from nvidia-smi
every 0.2 s (contexts and every process included). A side's goal is 2x the working set (inputs
and outputs of one call, the backward's) of its largest shape plus the block pool's L2-spanning
bytes; both sides together, half of an 80 GB card.

    PYTHONPATH=. python3 bench/memory_check.py --steps campaign,rmsnorm --out $OUT
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

GiB = 1024**3
BLOCK_POOL_BYTES = 128 * 1024**2  # kgit/measure/timing_blocks.py
CAMPAIGN_SHAPES = [(4096, 4096), (16384, 4096), (32768, 8192), (8192, 2048)]
# Bytes of one backward call, inputs and outputs: RMSNorm x, dy, w in, dx, dw out (bf16);
# GEMM A, B, dC in, dA, dB out (bf16).
WORKING_SET = {
    "campaign": (3 * 32768 * 8192 + 2 * 8192) * 2,
    "rmsnorm": (3 * 32768 * 8192 + 2 * 8192) * 2,
    "gemm": 5 * 8192 * 8192 * 2,
}


class CardPoller(threading.Thread):
    """The card's used memory (MiB, nvidia-smi) every 0.2 s: its peak over a step."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak_mib = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                out = subprocess.run(
                    ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                    capture_output=True,
                    text=True,
                    timeout=5,
                ).stdout
                self.peak_mib = max(self.peak_mib, int(out.split()[0]))
            except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
                pass
            self.stop.wait(0.2)


def campaign_child(where: Path) -> None:
    """The 4-shape campaign, played as the demo plays its own (in this child process)."""
    import kgit.demo as demo

    shapes = [{"label": f"x_{m}x{n}", "M": m, "N": n} for m, n in CAMPAIGN_SHAPES]
    demo.KERNELS["campaign"] = dataclasses.replace(demo.RMSNORM, gpu_shapes=shapes)
    demo.run_demo("campaign", where, gpu=True)


def run_step(step: str, out: Path, timeout_s: float) -> dict[str, object]:
    log = out / f"{step}_memory.jsonl"
    log.unlink(missing_ok=True)
    where = Path(tempfile.mkdtemp(prefix=f"kgit-mem-{step}-"))
    if step == "campaign":
        command = [sys.executable, __file__, "--campaign-child", str(where)]
    else:
        command = [sys.executable, "-m", "kgit", "demo", "--dir", str(where)]
        command += ["--kernel", "rmsnorm"] if step == "rmsnorm" else []
    env = {**os.environ, "KGIT_MEMORY_LOG": str(log), "PYTHONUNBUFFERED": "1"}
    poller = CardPoller()
    poller.start()
    start = time.monotonic()
    with open(out / f"{step}.log", "w") as handle:
        try:
            code: int | None = subprocess.run(
                command, stdout=handle, stderr=subprocess.STDOUT, env=env, timeout=timeout_s
            ).returncode
        except subprocess.TimeoutExpired:
            code = None
    seconds = time.monotonic() - start
    poller.stop.set()
    poller.join()
    records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return {
        "step": step,
        "exit": code,
        "seconds": round(seconds, 1),
        "card_peak_gib": round(poller.peak_mib / 1024, 2),
        "records": records,
    }


def summary(result: dict[str, object]) -> dict[str, object]:
    records = result["records"]
    assert isinstance(records, list)
    peak = {phase: 0 for phase in ("first pass", "first pass (blocks)", "blocks")}
    for record in records:
        phase = record["phase"]
        peak[phase] = max(peak[phase], record["peak_reserved"])
    side = max(peak.values(), default=0)
    working = WORKING_SET[str(result["step"])]
    goal = 2 * working + BLOCK_POOL_BYTES
    return {
        "step": result["step"],
        "side_peak_gib": round(side / GiB, 2),
        "plain_pass_gib": round(peak["first pass"] / GiB, 2),
        "blocks_gib": round(max(peak["first pass (blocks)"], peak["blocks"]) / GiB, 2),
        "working_set_gib": round(working / GiB, 2),
        "goal_gib": round(goal / GiB, 2),
        "ratio_to_goal": round(side / goal, 2),
        "card_peak_gib": result["card_peak_gib"],
        "exit": result["exit"],
        "seconds": result["seconds"],
        "processes": len({r["pid"] for r in records}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="campaign,rmsnorm,gemm")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--timeout", type=float, default=420.0, help="seconds a step may take")
    parser.add_argument("--campaign-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.campaign_child:
        campaign_child(Path(args.campaign_child))
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import torch

    device = torch.cuda.get_device_name(0)
    total = torch.cuda.mem_get_info(0)[1]
    del torch
    rows = []
    for step in args.steps.split(","):
        result = run_step(step, out, args.timeout)
        rows.append(summary(result))
        (out / "memory_check.json").write_text(json.dumps({"device": device, "rows": rows}))
        print(json.dumps(rows[-1]), flush=True)
    print(f"\n{device}, {total / GiB:.1f} GiB; peaks in GiB (torch reserved per process)")
    header = (
        "step | largest side | its plain pass | its blocks | working set | goal (2 WS + pool) "
        "| side/goal | card peak (nvidia-smi) | exit | wall s"
    )
    print(header)
    for row in rows:
        print(
            f"{row['step']} | {row['side_peak_gib']} | {row['plain_pass_gib']} | "
            f"{row['blocks_gib']} | {row['working_set_gib']} | {row['goal_gib']} | "
            f"{row['ratio_to_goal']} | {row['card_peak_gib']} | {row['exit']} | {row['seconds']}"
        )


if __name__ == "__main__":
    main()
