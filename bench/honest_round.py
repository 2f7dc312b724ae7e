"""Wall time of an honest round through the CLI: the red-team corpus's `control-honest` attempt
(round start, commit through the hook, validate, accept) under the default policy, on this CPU.

    PYTHONPATH=. python bench/honest_round.py [RUNS]

Run it from two checkouts (each with PYTHONPATH set to its own root) to compare what a change
costs an honest round; the last lines are the figures.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.corpus.redteam import ATTEMPTS, build_template, run_attempt


def main(runs: int) -> None:
    attempt = next(a for a in ATTEMPTS if a.id == "control-honest")
    root = Path(tempfile.mkdtemp(prefix="kgit-honest-"))
    (root / "template").mkdir()
    template = build_template(root / "template", policy=None)
    for run in range(runs):
        where = root / f"run{run}"
        where.mkdir()
        outcome = run_attempt(attempt, template, where)
        print(f"run {run}: {outcome.seconds:.1f} s, accepted: {outcome.best_moved}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
