"""What a push sends and what git says of it, one ref at a time (kgit/gitdoor/remotes.py pushes).
Apart from the remotes, so that a command that pushes nothing does not create these classes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RefPush:
    """One ref of a push: REF to NEW (None: delete it) if the remote still has EXPECT there."""

    ref: str
    new: str | None
    expect: str | None


@dataclass(frozen=True)
class PushedRef:
    """What `git push --porcelain` said of one ref."""

    ref: str
    ok: bool
    summary: str  # git's words: "[new branch]", "[rejected] (stale info)", "(fetch first)"...
