"""Where a harness pass's seconds go: one plain pass of a bundled example under cProfile.

    python3 bench/pass_profile.py --kernel rmsnorm [--shapes 4096x4096,...] [--top 40]

Run it twice on a fresh machine: the first pass also pays Python's bytecode compilation where the
install has none cached (the H200 hosts here: ~5 s a process, `PYTHONDONTWRITEBYTECODE=1`; set
`PYTHONPYCACHEPREFIX` to a writable folder and unset it). The profile (cumulative, then own
time) goes to $OUT/pass_profile_<kernel>.txt when OUT is set; the harness's own lines and the
total are printed last.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import runpy
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from kgit.demo import GEMM, RMSNORM  # noqa: E402
from kgit.resources import examples_dir  # noqa: E402

KERNELS = {"gemm": GEMM, "rmsnorm": RMSNORM}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernel", choices=sorted(KERNELS), default="rmsnorm")
    parser.add_argument("--shapes", help="comma-separated labels (default: the harness's own)")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    kernel = KERNELS[args.kernel]
    folder = examples_dir() / kernel.folder
    scratch = Path(tempfile.mkdtemp(prefix="kgit-profile-"))
    argv = [kernel.harness_file, "--summary-csv", str(scratch / "summary.csv")]
    if args.shapes:
        labels = args.shapes.split(",")
        shapes = [s for s in kernel.gpu_shapes + kernel.cpu_shapes if s["label"] in labels]
        (scratch / "shapes.json").write_text(json.dumps(shapes))
        argv += ["--shapes", str(scratch / "shapes.json")]
    os.chdir(folder)
    sys.path.insert(0, str(folder))
    sys.argv = argv
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    with contextlib.suppress(SystemExit):
        runpy.run_path(kernel.harness_file, run_name="__main__")
    profile.disable()
    total = time.perf_counter() - start
    text = io.StringIO()
    stats = pstats.Stats(profile, stream=text)
    stats.sort_stats("cumulative").print_stats(args.top)
    stats.sort_stats("tottime").print_stats(args.top // 2)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], f"pass_profile_{args.kernel}.txt").write_text(text.getvalue())
    else:
        print(text.getvalue())
    print(f"\n{args.kernel}: one plain pass in {total:.2f} s (profiled)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
