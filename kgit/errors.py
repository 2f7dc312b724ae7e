"""Expected failures and their exit codes.

Every failure a user can cause is a `KgitError` with a message and a hint; the CLI turns it into an
exit code in one place. Anything else is a crash (exit 3) and leaves a log under `.git/kgit/`.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_REFUSED = 1  # a gate failed, a verdict refused, the repository is not in the needed state
EXIT_USAGE = 2  # bad input: a flag, a manifest, a name
EXIT_CRASH = 3  # a bug in kgit: a log is written under .git/kgit/
EXIT_INTERRUPTED = 130  # Ctrl-C, SIGTERM or SIGHUP, as shells report a SIGINT


class KgitError(Exception):
    """A refusal or failure the user can act on."""

    exit_code = EXIT_REFUSED

    def __init__(self, message: str, hint: str | None = None, details: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = details

    def to_dict(self) -> dict[str, object]:
        return {
            "error": self.message,
            "hint": self.hint,
            "details": self.details,
            "exit_code": self.exit_code,
        }


class UsageError(KgitError):
    """Bad input: the command line, a manifest, a campaign name."""

    exit_code = EXIT_USAGE


class GitError(KgitError):
    """A git command failed where kgit expected it to succeed."""


class SchemaError(UsageError):
    """A benchmark CSV or a stored record does not match its schema."""
