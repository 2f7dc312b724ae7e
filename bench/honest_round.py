"""Wall time of an honest round through the CLI: the red-team corpus's `control-honest` attempt
(round start, commit through the hook, validate, accept) under the default policy, on this CPU.

    PYTHONPATH=. python bench/honest_round.py [RUNS] [--template DIR]

Run it from two checkouts (each with PYTHONPATH set to its own root) to compare what a change
costs an honest round; the last lines are the figures. With --template, the campaign's template
is built in DIR once and reused by later calls: two checkouts can then take turns, one round
each, on a machine whose speed drifts.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from tests.corpus.redteam import ATTEMPTS, build_template, run_attempt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=3)
    parser.add_argument("--template", type=Path, help="build the template here once, then reuse it")
    args = parser.parse_args()
    attempt = next(a for a in ATTEMPTS if a.id == "control-honest")
    root = Path(tempfile.mkdtemp(prefix="kgit-honest-"))
    if args.template is not None and (args.template / "built").is_file():
        template = Path((args.template / "built").read_text())
    else:
        folder = args.template or root / "template"
        folder.mkdir(parents=True, exist_ok=True)
        template = build_template(folder, policy=None)
        if args.template is not None:
            (args.template / "built").write_text(str(template))
    for run in range(args.runs):
        where = root / f"run{run}"
        where.mkdir()
        outcome = run_attempt(attempt, template, where)
        print(f"run {run}: {outcome.seconds:.1f} s, accepted: {outcome.best_moved}", flush=True)


if __name__ == "__main__":
    main()
