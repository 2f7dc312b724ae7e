"""Accept conflicts tried N times each, and how each ended (the figures in
docs/clones.md): `python -m tests.engine.race_figures [N]` from the repository root.

Not collected by pytest (a few minutes at N=20 on 2 cores). Three races, the fake harness:
two `kgit round accept` of one round at once in one clone; two clones each accepting its own
round-N and pushing at once; `kgit push` racing `kgit round accept` in one clone (then a fresh
clone pulls and runs `kgit doctor`).
"""

from __future__ import annotations

import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.conftest import CHECK, MANIFEST, git
from tests.engine.remotes import (
    fresh_clone,
    kgit_in,
    kgit_process,
    kgit_refs,
    log,
    make_remote,
    validated,
)

HERE = Path(__file__).resolve().parent.parent
OUTCOMES = (
    "closed by another kgit process",
    "no round in progress",
    "stale info",
    "same moment",
    "both wrote the campaign record",
    "fetch first",
)
ACCEPT_AND_PUSH = (
    "import sys\nfrom kgit.cli import main\n"
    "code = main(['-q', 'round', 'accept'])\nsys.exit(code or main(['push']))\n"
)
_speed = [4]


def speed() -> int:
    """Each round 6% faster than the last, so every verdict accepts."""
    _speed[0] += 1
    return int(100 * 1.06 ** _speed[0])


def campaign(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "kernel.txt").write_text("speed: 100\n")
    (repo / "check.py").write_text(CHECK)
    shutil.copy(HERE / "fake_harness.py", repo / "harness.py")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "kernel, test and harness")
    (repo / "manifest.yaml").write_text(MANIFEST.format(python=sys.executable))
    assert kgit_in(repo, "init", "c1", "--manifest", "manifest.yaml").code == 0
    assert kgit_in(repo, "-q", "baseline").code == 0
    return repo


def outcome(results: list[tuple[int, str]]) -> tuple[tuple[int, ...], str]:
    codes = tuple(sorted(code for code, _ in results))
    err = next((err for code, err in results if code), "")
    return codes, next((key for key in OUTCOMES if key in err), err.strip()[-200:])


def wait(procs: list[subprocess.Popen[str]]) -> list[tuple[int, str]]:
    return [(proc.wait(300), proc.communicate()[1]) for proc in procs]


def local_accepts(root: Path, trials: int) -> collections.Counter[object]:
    repo, seen = campaign(root / "local"), collections.Counter[object]()
    for trial in range(trials):
        number, _ = validated(repo, f"idea {trial}", speed())
        seen[outcome(wait([kgit_process(repo, "round", "accept") for _ in range(2)]))] += 1
        assert [r["status"] for r in log(repo) if r["round"] == number] == ["ACCEPTED"]
    return seen


def remote_accepts(repo: Path, clone: Path, trials: int) -> collections.Counter[object]:
    seen = collections.Counter[object]()
    for trial in range(trials):
        validated(repo, f"mine {trial}", speed())
        validated(clone, f"theirs {trial}", speed())
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", ACCEPT_AND_PUSH],
                cwd=where,
                stderr=subprocess.PIPE,
                text=True,
            )
            for where in (repo, clone)
        ]
        seen[outcome(wait(procs))] += 1
        for where in (repo, clone):  # the loser sets its round aside; the winner is up to date
            assert kgit_in(where, "pull", "--take-remote").code == 0
        assert kgit_refs(repo) == kgit_refs(clone)
    return seen


def push_racing_accept(repo: Path, bare: Path, trials: int) -> collections.Counter[object]:
    seen = collections.Counter[object]()
    for trial in range(trials):
        validated(repo, f"race {trial}", speed())
        accept = kgit_process(repo, "round", "accept")
        time.sleep(0.05 * trial)  # the push starts earlier or later in the accept
        results = wait([accept, kgit_process(repo, "push")])
        check = fresh_clone(bare, f"check-{trial}", ready=False)
        published = git(bare, "rev-parse", "refs/heads/kgit/c1/best")
        state = "accepted" if published == git(repo, "rev-parse", "kgit/c1/best") else "before"
        doctor = kgit_in(check, "doctor").code
        seen[(tuple(code for code, _ in results), f"doctor {doctor}", f"pushed {state}")] += 1
        assert kgit_in(repo, "push").code == 0
    return seen


def main(trials: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="kgit-races-"))
    os.environ["GIT_CONFIG_GLOBAL"] = str(root / "gitconfig")
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
    (root / "gitconfig").write_text(
        "[user]\n\tname = E\n\temail = e@example.com\n[commit]\n\tgpgsign = false\n"
    )
    try:
        print("two accepts, one clone:", dict(local_accepts(root, trials)))
        repo = campaign(root / "remote")
        bare = make_remote(repo)
        assert kgit_in(repo, "push").code == 0
        clone = fresh_clone(bare, "clone")
        print("two clones accept and push:", dict(remote_accepts(repo, clone, trials)))
        print("push racing accept:", dict(push_racing_accept(repo, bare, trials)))
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
