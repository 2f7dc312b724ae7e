"""A small campaign on the fake harness (no GPU, ~20 s), then its HTML report, for looking at the
report in a browser: `python bench/report_demo.py OUT_DIR` writes OUT_DIR/report.html (and the
repository it was built in, OUT_DIR/repo). Rounds: two accepted, one slower and rolled back, one
blocked by the gate and rolled back, one rolled back before any commit; one shape slower than
baseline, so the speedup plot has a bar under 1.0.

    chromium --headless --screenshot=docs/report.png --window-size=1280,4200 OUT_DIR/report.html
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from tests.conftest import CHECK, MANIFEST  # noqa: E402  (the fake kernel's test and manifest)


def sh(repo: Path, *args: str, ok: bool = True) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(args, cwd=repo, capture_output=True, text=True, env=env)
    if ok and proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: {proc.stdout}{proc.stderr}")
    return proc.stdout


def kgit(repo: Path, *args: str, ok: bool = True) -> str:
    return sh(repo, sys.executable, "-m", "kgit", "-q", *args, ok=ok)


def change(repo: Path, text: str, message: str, *flags: str) -> None:
    (repo / "kernel.txt").write_text(text)
    sh(repo, "git", "commit", "-q", "-a", "-m", message, *flags)


def main(out: Path) -> None:
    repo = out / "repo"
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    sh(repo, "git", "init", "-q")
    sh(repo, "git", "config", "user.email", "dev@example.com")
    sh(repo, "git", "config", "user.name", "Kernel Engineer")
    (repo / "kernel.txt").write_text("speed: 100\n")
    (repo / "check.py").write_text(CHECK)
    shutil.copy(HERE / "tests" / "fake_harness.py", repo / "harness.py")
    sh(repo, "git", "add", ".")
    sh(repo, "git", "commit", "-q", "-m", "kernel, test and harness")
    (repo / "manifest.yaml").write_text(
        MANIFEST.format(python=sys.executable) + "performance_target: 140\n"
    )
    kgit(repo, "init", "gemm_fake_cpu", "-m", "manifest.yaml")
    kgit(repo, "baseline")

    kgit(repo, "round", "start", "128x128 tiles: 4x fewer programs")
    change(repo, "speed: 112\nspeed.s64: 97\n", "128x128 tiles")
    kgit(repo, "round", "validate")
    kgit(repo, "round", "accept", "--attribution", "fewer programs, better L2 reuse")

    kgit(repo, "round", "start", "split-K for the small shapes")
    change(repo, "speed: 104\nspeed.s64: 90\n", "split-K")
    kgit(repo, "round", "validate")
    kgit(repo, "round", "rollback", "--reason", "reduction overhead", "--lesson", "no split-K")

    kgit(repo, "round", "start", "drop the K-tail mask")
    change(repo, "speed: 130\nBUG\n", "no mask", "--no-verify")
    kgit(repo, "round", "validate", ok=False)  # the gate fails: never measured
    kgit(repo, "round", "rollback", "--reason", "the gate failed on K tails")

    kgit(repo, "round", "start", "swizzle the tile order")
    kgit(repo, "round", "rollback", "--reason", "superseded before any commit")

    kgit(repo, "round", "start", "software pipelining, 3 stages")
    change(repo, "speed: 121\nspeed.s64: 96.5\n", "3 stages")
    kgit(repo, "round", "validate")
    kgit(repo, "round", "accept", "--attribution", "latency hidden", "--lesson", "stages > tiles")

    kgit(repo, "report", "--format", "html", "-o", str(out / "report.html"))
    print(out / "report.html")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "report-demo").resolve())
