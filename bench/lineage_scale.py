"""How kgit's read path and commit hook scale: a campaign with 1,000 recorded rounds.

Builds a throwaway repository, records a baseline through the real CLI, then 999 rounds through
kgit's own store (the same note format and refs as `kgit round ...`, without running a harness
999 times), and times, as subprocesses a user would type:

  kgit status, kgit log, kgit log --json       median wall time (goal <= 0.3 s each)
  kgit report (Markdown, no plots)             median wall time (goal <= 2 s)
  git commit off kgit branches, hook vs none   median added time (goal <= 50 ms)

Usage: python bench/lineage_scale.py [--rounds 1000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from kgit.engine.campaign import Campaign  # noqa: E402
from kgit.gitdoor import open_repo  # noqa: E402
from kgit.records.notes import ACCEPTED, ROLLED_BACK, RoundNote, ShapeResult  # noqa: E402
from tests.conftest import CHECK, MANIFEST  # noqa: E402

ENV = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
ENV.update(
    {
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
)


def sh(cwd: Path, *args: str) -> str:
    return subprocess.run(args, cwd=cwd, env=ENV, check=True, capture_output=True, text=True).stdout


def build(root: Path, rounds: int) -> Path:
    repo = root / "repo"
    repo.mkdir()
    sh(repo, "git", "init", "-q", "-b", "main")
    (repo / "kernel.txt").write_text("speed: 100\n")
    (repo / "check.py").write_text(CHECK)
    shutil.copy(HERE.parent / "tests" / "fake_harness.py", repo / "harness.py")
    sh(repo, "git", "add", ".")
    sh(repo, "git", "commit", "-q", "-m", "kernel")
    (repo / "manifest.yaml").write_text(
        MANIFEST.format(python=sys.executable).replace(
            "timeout_s: 30", "timeout_s: 30\nmax_iterations: 119"
        )
    )
    kgit = [sys.executable, "-m", "kgit", "-q"]
    sh(repo, *kgit, "init", "big", "-m", "manifest.yaml")
    sh(repo, *kgit, "baseline")
    record_rounds(repo, rounds)
    return repo


def record_rounds(path: Path, rounds: int) -> None:
    repo = open_repo(path)
    campaign = Campaign.load(repo, "big")
    rng = random.Random(7)
    tree = repo.tree_of("HEAD")
    labels = campaign.manifest.shape_labels
    best = campaign.best_tip()
    for number in range(2, rounds + 1):
        commit = repo.commit_tree(
            tree, [best], f"[optimize] gemm FAKE round-{number}: try {number}\n"
        )
        gain = rng.uniform(-4, 3)
        status = ACCEPTED if gain > 1 else ROLLED_BACK
        note = RoundNote(
            campaign="big",
            round=number,
            status=status,
            decision=status,
            hypothesis=f"hypothesis {number}: retile for shape class {number % 7}",
            metric="Forward TFLOPS",
            aggregate=100 + gain,
            delta_vs_best_pct=gain,
            reasons=[f"aggregate {gain:+.3f}% vs best"],
            shapes=[ShapeResult(label, "PASS", 100 + gain, 100.0, gain) for label in labels[:3]],
        )
        campaign.write_round(commit, note)
        campaign.write_bench(commit, b"label,...\r\n")
        repo.update_ref(campaign.refs.kept(number), commit, None)
        if status == ACCEPTED:
            repo.update_ref(campaign.refs.best, commit, best)
            best = commit
    campaign.state.next_round = rounds + 1
    campaign.save("bench: recorded rounds")
    sh(path, "git", "checkout", "-q", "kgit/big/best")


def timed(cwd: Path, args: list[str], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(args, cwd=cwd, env=ENV, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def hook_overhead(root: Path, repeats: int) -> tuple[float, float]:
    """Median `git commit` time on a plain branch with kgit's hooks installed and without."""
    results = []
    for with_hooks in (False, True):
        repo = root / f"hook-{with_hooks}"
        repo.mkdir()
        sh(repo, "git", "init", "-q", "-b", "main")
        (repo / "f").write_text("0")
        sh(repo, "git", "add", "f")
        sh(repo, "git", "commit", "-q", "-m", "0")
        if with_hooks:
            sh(repo, sys.executable, "-m", "kgit", "hooks", "install")
        samples = []
        for i in range(repeats):
            (repo / "f").write_text(str(i + 1))
            start = time.perf_counter()
            sh(repo, "git", "commit", "-q", "-a", "-m", str(i))
            samples.append(time.perf_counter() - start)
        results.append(statistics.median(samples))
    return results[0], results[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kgit-scale-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        repo = build(root, args.rounds)
        print(f"built {args.rounds} rounds in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        kgit = [sys.executable, "-m", "kgit"]
        rows = [
            (" ".join(["kgit", *c]), timed(repo, kgit + c, args.repeats), goal)
            for c, goal in (
                (["status"], 300),
                (["log"], 300),
                (["log", "--json"], 300),
                (["report"], 2000),
            )
        ]
        plain, hooked = hook_overhead(root, max(args.repeats * 2, 15))
    print(f"\n{'what':<40} {'median':>10}  goal")
    for name, seconds, goal in rows:
        print(f"{name + f' ({args.rounds} rounds)':<40} {seconds * 1000:>8.0f} ms  <= {goal} ms")
    print(f"{'git commit, no hook':<40} {plain * 1000:>8.1f} ms")
    print(f"{'git commit, kgit hooks, off kgit branch':<40} {hooked * 1000:>8.1f} ms")
    print(f"{'hook overhead':<40} {(hooked - plain) * 1000:>8.1f} ms  <= 50 ms")


if __name__ == "__main__":
    main()
