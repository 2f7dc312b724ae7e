"""How kgit's read path and commit hook scale: a campaign with 1,000 recorded rounds.

Builds a throwaway repository, records a baseline through the real CLI, then 999 rounds through
kgit's own store (the same note format and refs as `kgit round ...`, without running a harness
999 times), and times, as subprocesses a user would type:

  kgit status, kgit log                        median wall and CPU time (goal <= 0.1 s each)
  kgit log --json                              median wall and CPU time (goal <= 0.3 s)
  kgit report (Markdown, no plots)             median wall time (goal <= 2 s)
  git commit off kgit branches, hook vs none   median added time (goal <= 50 ms)

With --campaigns N, N campaigns of --rounds rounds each in one repository (each baselined through
the CLI), timed in the last one: `--campaigns 100 --rounds 100` is the read path among many
campaigns, `--rounds 10000` the read path of one long campaign. The rounds are recorded in
batches (one record commit per 1,000 rounds), so the build grows linearly with the rounds.

With --keep DIR the repository is built under DIR and left there, and a later run given the same
DIR times it again without building (the build of 100 x 100 takes minutes; an A/B of two trees
wants one repository timed by both).

With --against TREE (another checkout of kgit, e.g. `git worktree add /tmp/base main`), status,
log and log --json are timed with kgit from TREE and from this tree in turns, call for call, and
only those: this host's speed moves up to 2x within an hour, and in turns both sides see the same.

Usage: python bench/lineage_scale.py [--rounds 1000] [--campaigns 1] [--repeats 7] [--no-report]
                                     [--keep DIR] [--against TREE]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from kgit.engine.campaign import Campaign, NoteWrite  # noqa: E402
from kgit.gitdoor import open_repo  # noqa: E402
from kgit.records.notes import ACCEPTED, ROLLED_BACK, RoundNote, ShapeResult  # noqa: E402
from tests.conftest import CHECK, MANIFEST  # noqa: E402

# PYTHONDONTWRITEBYTECODE left out: an installed kgit starts from its bytecode, and without it
# every command compiles kgit, click and yaml from source (about 90 ms of a `kgit status` on a
# loaded 2-core machine). The first timed call of each command writes the bytecode (`timed`).
ENV = {
    k: v
    for k, v in os.environ.items()
    if not k.startswith("GIT_") and k != "PYTHONDONTWRITEBYTECODE"
}
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


BATCH = 1000  # rounds per record commit


def build(root: Path, rounds: int, campaigns: int = 1) -> Path:
    """The repository, on the best line of the last campaign built."""
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
            # No background gate audits: they would run beside the timings.
            "timeout_s: 30",
            "timeout_s: 30\nmax_iterations: 119\ngate_audit_mutants: 0",
        )
    )
    kgit = [sys.executable, "-m", "kgit", "-q"]
    names = ["big"] if campaigns == 1 else [f"c{i:03d}" for i in range(campaigns)]
    for name in names:
        sh(repo, *kgit, "init", name, "-m", "manifest.yaml")
        sh(repo, *kgit, "-c", name, "baseline")
        record_rounds(repo, name, rounds)
    sh(repo, "git", "checkout", "-q", f"kgit/{names[-1]}/best")
    return repo


def record_rounds(path: Path, name: str, rounds: int) -> None:
    repo = open_repo(path)
    campaign = Campaign.load(repo, name)
    # These notes carry no pairs, so a round's figures are its own first pass (kgit/judge/
    # figures.py) and its `git log` summary needs no earlier round: reading them all back for
    # each new round (as `round_note` does) made 10,000 rounds a quadratic build.
    campaign.all_rounds = lambda **_: []  # type: ignore[method-assign]
    rng = random.Random(7)
    tree = repo.tree_of("HEAD")
    labels = campaign.manifest.shape_labels
    best = start = campaign.best_tip()
    bench = repo.write_blob(b"label,...\r\n")
    notes: list[NoteWrite] = []
    moves: list[tuple[str, str, str | None]] = []
    for number in range(2, rounds + 1):
        commit = repo.commit_tree(
            tree, [best], f"[optimize] gemm FAKE round-{number}: try {number}\n"
        )
        gain = rng.uniform(-4, 3)
        status = ACCEPTED if gain > 1 else ROLLED_BACK
        note = RoundNote(
            campaign=name,
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
        notes += [campaign.round_note(commit, note), NoteWrite("bench", commit, bench)]
        moves.append((campaign.refs.kept(number), commit, None))
        best = commit if status == ACCEPTED else best
        if len(moves) == BATCH or number == rounds:
            campaign.state.next_round = number + 1
            moves.append((campaign.refs.best, best, start))
            campaign.save(f"bench: rounds to {number}", notes=notes, moves=moves)
            notes, moves, start = [], [], best


def timed(cwd: Path, args: list[str], repeats: int) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system) of ARGS, after one call that
    warms the bytecode and the note cache. CPU time says more than wall time on a loaded
    machine, where a process waits for a core."""
    subprocess.run(args, cwd=cwd, env=ENV, check=True, capture_output=True)
    walls, cpus = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(args, cwd=cwd, env=ENV, check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def in_turns(cwd: Path, args: list[str], repeats: int, other: Path) -> tuple[float, float]:
    """Median wall time of ARGS with kgit imported from OTHER and from this tree (PYTHONPATH),
    run in turns after one warming call of each."""
    sides = [{**ENV, "PYTHONPATH": str(other)}, {**ENV, "PYTHONPATH": str(HERE.parent)}]
    walls: list[list[float]] = [[], []]
    for env in sides:
        subprocess.run(args, cwd=cwd, env=env, check=True, capture_output=True)
    for _ in range(repeats):
        for side, env in enumerate(sides):
            start = time.perf_counter()
            subprocess.run(args, cwd=cwd, env=env, check=True, capture_output=True)
            walls[side].append(time.perf_counter() - start)
    return statistics.median(walls[0]), statistics.median(walls[1])


def compare(repo: Path, other: Path, repeats: int) -> None:
    print(f"\n{'what':<24} {str(other)[-24:]:>24} {'this tree':>12}  change")
    for command in (["status"], ["log"], ["log", "--json"]):
        against, ours = in_turns(repo, [sys.executable, "-m", "kgit", *command], repeats, other)
        print(
            f"{'kgit ' + ' '.join(command):<24} {against * 1000:>21.1f} ms {ours * 1000:>9.1f} ms"
            f"  {(ours / against - 1) * 100:+.0f}%"
        )
    print(f"medians of {repeats} runs each, in turns")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cpus")


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


def kept_or_built(keep: Path | None, tmp: Path, rounds: int, campaigns: int) -> Path:
    """The repository under KEEP when an earlier run left one there, else one built (under KEEP
    to stay, or under TMP). The hook repositories are built under TMP either way."""
    if keep is not None and (keep / "repo" / ".git").is_dir():
        print(f"reusing {keep / 'repo'} (its size is the one it was built with)", file=sys.stderr)
        return keep / "repo"
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    repo = build(keep or tmp, rounds, campaigns)
    print(
        f"built {campaigns} campaign(s) x {rounds} rounds in {time.perf_counter() - start:.1f} s",
        file=sys.stderr,
    )
    return repo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000, help="rounds per campaign")
    parser.add_argument("--campaigns", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-report", action="store_true", help="skip timing kgit report")
    parser.add_argument("--keep", type=Path, help="build the repository here, or reuse it")
    parser.add_argument("--against", type=Path, help="time against kgit from this checkout")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kgit-scale-") as tmp:
        root = Path(tmp)
        repo = kept_or_built(args.keep, root, args.rounds, args.campaigns)
        if args.against is not None:
            compare(repo, args.against.resolve(), args.repeats)
            return
        kgit = [sys.executable, "-m", "kgit"]
        # status and log: <= 100 ms at 100 campaigns x 100 rounds (issue 36, item 6)
        commands = [(["status"], 100), (["log"], 100), (["log", "--json"], 300)]
        commands += [] if args.no_report else [(["report"], 2000)]
        rows = [
            (" ".join(["kgit", *c]), timed(repo, kgit + c, args.repeats), goal)
            for c, goal in commands
        ]
        plain, hooked = hook_overhead(root, max(args.repeats * 2, 15))
    size = f"{args.campaigns} x {args.rounds}" if args.campaigns > 1 else f"{args.rounds} rounds"
    print(f"\n{'what':<44} {'median':>10} {'cpu':>8}  goal")
    for what, (wall, cpu), goal in rows:
        print(
            f"{what + f' ({size})':<44} {wall * 1000:>7.0f} ms {cpu * 1000:>5.0f} ms  <= {goal} ms"
        )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cpus")
    print(f"{'git commit, no hook':<44} {plain * 1000:>8.1f} ms")
    print(f"{'git commit, kgit hooks, off kgit branch':<44} {hooked * 1000:>8.1f} ms")
    print(f"{'hook overhead':<44} {(hooked - plain) * 1000:>8.1f} ms  <= 50 ms")


if __name__ == "__main__":
    main()
