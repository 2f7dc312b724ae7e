"""The command line: thin click commands over the engine and the views.

`app` holds the context, the output and the one mapping from errors to exit codes (1 refused,
2 usage, 3 crash with a log); each `cmd_*` module registers one family of commands on `cli`.
torch and triton are never imported on this path.
"""

from kgit.cli import cmd_guards, cmd_lifecycle, cmd_review, cmd_rounds, cmd_sharing
from kgit.cli.app import cli, main

__all__ = ["cli", "cmd_guards", "cmd_lifecycle", "cmd_review", "cmd_rounds", "cmd_sharing", "main"]
