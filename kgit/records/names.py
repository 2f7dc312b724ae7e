"""Campaign names and the public ref layout built from them.

The layout is kgit's public interface (docs/storage.md); keep these names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kgit.errors import UsageError

# Letters, digits, '.', '_' and '-', starting with a letter or digit: safe in a ref name, a
# folder name and a shell word. Rules out '..', '/', spaces, a leading '-' and '.lock' games.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def validate_campaign_name(name: str) -> str:
    if not _NAME.fullmatch(name) or ".." in name or name.endswith((".lock", ".")):
        raise UsageError(
            f"invalid campaign name {name!r}",
            hint="use letters, digits, '.', '_' and '-' (start with a letter or digit, no '..'), "
            "e.g. gemm_triton_h200_20261202",
        )
    return name


@dataclass(frozen=True)
class CampaignRefs:
    """Every ref and notes ref of one campaign."""

    name: str

    @property
    def best(self) -> str:
        return f"refs/heads/kgit/{self.name}/best"

    def round_branch(self, number: int) -> str:
        return f"refs/heads/kgit/{self.name}/round-{number}"

    @property
    def record(self) -> str:
        """A commit chain whose tree holds kgit's own files: manifest, state, harness copy."""
        return f"refs/kgit/{self.name}/campaign"

    @property
    def kept_prefix(self) -> str:
        return f"refs/kgit/{self.name}/rounds/"

    def kept(self, number: int) -> str:
        """Keeps every round's commit reachable (rolled-back ones too) so `git gc` never takes it."""
        return f"{self.kept_prefix}{number}"

    @property
    def round_notes(self) -> str:
        return f"refs/notes/kgit/{self.name}/rounds"

    @property
    def bench_notes(self) -> str:
        return f"refs/notes/kgit/{self.name}/bench"

    @property
    def gate_notes(self) -> str:
        """Gate results, attached to the tree that was tested (not the commit)."""
        return f"refs/notes/kgit/{self.name}/gate"

    @property
    def final_notes(self) -> str:
        """`kgit finish`'s report, on the best line's tip."""
        return f"refs/notes/kgit/{self.name}/final"

    def notes(self, kind: str) -> str:
        """The notes ref of KIND (one of NOTE_KINDS)."""
        return f"refs/notes/kgit/{self.name}/{kind}"


# Every notes ref kgit writes, by its last component.
# `log` holds the short summary of each round note that plain `git log` displays.
NOTE_KINDS = ("rounds", "bench", "gate", "final", "log")


_ROUND_BRANCH = re.compile(r"refs/heads/kgit/(?P<campaign>[^/]+)/round-(?P<round>[0-9]+)")
_ANY_BRANCH = re.compile(r"refs/heads/kgit/(?P<campaign>[^/]+)/(best|round-[0-9]+)")


def parse_round_branch(ref: str | None) -> tuple[str, int] | None:
    """(campaign, round) when REF is a kgit round branch."""
    match = _ROUND_BRANCH.fullmatch(ref or "")
    return (match["campaign"], int(match["round"])) if match else None


def campaign_of_branch(ref: str | None) -> str | None:
    match = _ANY_BRANCH.fullmatch(ref or "")
    return match["campaign"] if match else None


# The campaign record's files (refs/kgit/<campaign>/campaign, one commit per write).
MANIFEST_FILE = "manifest.yaml"
STATE_FILE = "state.json"
HARNESS_DIR = "harness"  # copies of protected_paths as frozen at baseline
NOTES_DIR = "notes"  # notes/<kind>/<target>: every note kgit wrote, the blob it attached
NOTES_README = f"{NOTES_DIR}/README"  # also marks a record that holds its notes
