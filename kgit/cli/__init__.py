"""The command line: thin click commands over the engine and the views.

`main` (entry) holds the one mapping from errors to exit codes (1 refused, 2 usage, 3 crash with
a log); `app` holds click's group and context; each `cmd_*` module registers one family of
commands on `cli`, loaded when one of its commands runs. `kgit status` and `kgit log` run
without click at all (quick). torch and triton are never imported on this path.
"""

from __future__ import annotations

from kgit.cli.entry import main, run

__all__ = ["cli", "main", "run"]


def __getattr__(name: str) -> object:
    """`cli`, the click group, loaded with click only when asked for (click's test runner)."""
    if name == "cli":
        from kgit.cli.app import cli

        return cli
    raise AttributeError(f"module 'kgit.cli' has no attribute {name!r}")
