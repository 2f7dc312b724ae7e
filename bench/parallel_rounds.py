"""Rounds per hour with 1, 2 and 4 `kgit worker`s on the fake harness (no GPU needed).

    python3 bench/parallel_rounds.py [--rounds 8] [--pass-sleep 2.0]

Each configuration gets a fresh repository and campaign (tests/fake_harness.py as the quick
harness, its `pass_sleep` standing in for the device time of one harness pass), a queue of
ROUNDS hypotheses (half gains, half losses, each on its own line of the kernel so that rebases
merge), and N workers started at once, each pinned to a device of its own; one more row runs
2 workers on one device, sharing it through the measuring lock, and one 2 workers in 2 clones
of a bare remote on local disk (`kgit worker --remote origin`, the queue's lines dealt out
between the clones), with the pushes another clone's push beat (`refused`), how many of those
were replayed on the remote's record, and how many steps were done again (`redone`): a round
number another clone took first (`renumbered`), or an accept after another clone's accept
(`accepts redone`: rebased, validated again). A round that ended other than by its verdict is
printed with its reason. Rounds per hour = rounds ended / wall time of the slowest worker. The
table is printed last.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import CHECK, MANIFEST  # noqa: E402  (the test suite's fake campaign)

WORKER = [sys.executable, "-m", "kgit", "-q", "worker", "--hypotheses"]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def kgit(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "kgit", "-q", *args], cwd=cwd, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"kgit {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done


def campaign(folder: Path, rounds: int, pass_sleep: float) -> tuple[Path, Path]:
    """A fresh repository with campaign c1 baselined, and its queue of ROUNDS hypotheses."""
    repo = folder / "repo"
    repo.mkdir(parents=True)
    names = [f"h{n}" for n in range(rounds)]
    kernel = "speed: 100\n\n" + "".join(f"boost.{x}: 1.0\n\n" for x in names)
    (repo / "kernel.txt").write_text(kernel + f"pass_sleep: {pass_sleep}\n")
    (repo / "check.py").write_text(CHECK)
    shutil.copy(ROOT / "tests" / "fake_harness.py", repo / "harness.py")
    (repo / "manifest.yaml").write_text(MANIFEST.format(python=sys.executable))
    git(repo, "init", "-q")
    git(repo, "add", "kernel.txt", "check.py", "harness.py")
    git(repo, "commit", "-qm", "fake kernel")
    kgit(repo, "init", "c1", "--manifest", "manifest.yaml")
    kgit(repo, "baseline")
    queue = folder / "ideas.txt"
    lines = [
        f"{'boost' if n % 2 == 0 else 'slow'} {x} :: sed -i 's/^boost.{x}: .*/boost.{x}: "
        f"{1.1 if n % 2 == 0 else 0.9}/' kernel.txt"
        for n, x in enumerate(names)
    ]
    queue.write_text("\n".join(lines) + "\n")
    return repo, queue


def clones(repo: Path, queue: Path, count: int) -> list[tuple[Path, Path]]:
    """COUNT clones of a bare remote holding REPO's campaign, ready to run rounds, each with its
    share of QUEUE's lines: (clone, its queue)."""
    bare = repo.parent / "remote.git"
    git(repo.parent, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/main")
    git(bare, "symbolic-ref", "HEAD", "refs/heads/main")
    kgit(repo, "push")
    lines = queue.read_text().splitlines()
    found = []
    for n in range(count):
        clone = repo.parent / f"clone-{n}"
        git(repo.parent, "clone", "-q", str(bare), str(clone))
        kgit(clone, "pull")
        kgit(clone, "trust", "--campaign", "c1", "--yes")
        kgit(clone, "hooks", "install")
        share = repo.parent / f"ideas-{n}.txt"
        share.write_text("\n".join(lines[n::count]) + "\n")
        found.append((clone, share))
    return found


def run(
    workers: int, devices: list[str], rounds: int, pass_sleep: float, shared: bool = False
) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="kgit-parallel-") as tmp:
        repo, queue = campaign(Path(tmp), rounds, pass_sleep)
        places = clones(repo, queue, workers) if shared else [(repo, queue)] * workers
        remote = ["--json", "--remote", "origin"] if shared else ["--json"]
        start = time.monotonic()
        procs = [
            subprocess.Popen(
                [*WORKER, str(places[n][1]), "--device", devices[n], "--name", f"w{n}", *remote],
                cwd=places[n][0],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in range(workers)
        ]
        lines = []
        for proc in procs:
            out, err = proc.communicate()
            if proc.returncode != 0:
                raise SystemExit(f"a worker failed:\n{err}")
            lines += [json.loads(line) for line in out.splitlines()]
        wall = time.monotonic() - start
        for line in lines:  # a round that ended other than by its verdict: say why
            reason = str(line.get("reason", ""))
            if line["event"] == "round" and reason and "aggregate not improved" not in reason:
                print(f"round-{line['round']} {line['status']}: {reason}", file=sys.stderr)
        done = sum(1 for line in lines if line["event"] == "round")
        rebased = sum(int(line.get("rebases", 0)) for line in lines if line["event"] == "round")
        sharing = [line["sharing"] for line in lines if line["event"] == "done"]
        logs = []
        for place, _queue in places:
            if shared:
                kgit(place, "pull")
            logs.append(kgit(place, "log", "--json").stdout)
        if len(set(logs)) != 1:
            raise SystemExit("the clones' lineages differ after kgit pull")
        log = json.loads(logs[0])
    return {
        "workers": workers,
        "clones": len({place for place, _queue in places}),
        "devices": len(set(devices)),
        "rounds": done,
        "accepted": sum(row["status"] == "ACCEPTED" for row in log),
        "wall s": round(wall, 1),
        "rounds/hour": round(done / wall * 3600),
        "rebased": rebased,
        "refused": sum(s.get("push_refusals", 0) for s in sharing),
        "replayed": sum(s.get("replayed", 0) for s in sharing),
        "redone": sum(s.get("redone", 0) for s in sharing),
        "renumbered": sum("opened round" in c for s in sharing for c in s.get("conflicts", [])),
        "accepts redone": sum("accepted" in c for s in sharing for c in s.get("conflicts", [])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--pass-sleep", type=float, default=2.0, help="seconds per harness pass")
    args = parser.parse_args()
    os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    configs = [
        (1, ["0"], False),
        (2, ["0", "1"], False),
        (4, ["0", "1", "2", "3"], False),
        (2, ["0", "0"], False),
        (2, ["0", "1"], True),
    ]
    rows = []
    for workers, devices, shared in configs:
        rows.append(run(workers, devices, args.rounds, args.pass_sleep, shared))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    base = float(rows[0]["rounds/hour"])  # type: ignore[arg-type]
    for row in rows:
        row["speed-up"] = f"{float(row['rounds/hour']) / base:.2f}x"  # type: ignore[arg-type]
    print(f"{args.rounds} rounds per configuration, {args.pass_sleep} s of device time a pass")
    print(tabulate(rows, headers="keys", tablefmt="github"))


if __name__ == "__main__":
    main()
