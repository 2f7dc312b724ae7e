"""The one door to git: refs, objects, notes, branches and the write lock.

Every other module speaks in campaign terms and calls the small typed functions here.

Why `git` plumbing through `subprocess` rather than GitPython: importing GitPython costs
110-150 ms on the CI machine (half of the 0.3 s budget of `kgit status`), it keeps `git cat-file`
processes alive until `Repo.close()`, and its own README says it is in maintenance mode and unsuited
to long-running processes. kgit needs byte-exact stdin/stdout for notes and NUL-separated output,
which plain `subprocess` gives directly. Each call is logged as a user could type it
(`KGIT_TRACE=1`).
"""

from kgit.gitdoor.refs import RefsMoved
from kgit.gitdoor.repo import Repo, open_repo
from kgit.gitdoor.runner import KILL_ENV, ZERO_SHA, clean_env

__all__ = [
    "KILL_ENV",
    "ZERO_SHA",
    "RefsMoved",
    "Repo",
    "clean_env",
    "open_repo",
]
