"""What a view may read of a campaign: its record, through an interface with no way to write.

`kgit/views/` renders; it never moves a ref, writes a note or runs git itself. The engine builds
the one implementation (`kgit/engine/read_only.py: CampaignReader`, over its `Campaign` model) and
the CLI hands it to the view, so a view can reach neither the write lock nor `Campaign.save`.
Each read batches its git objects for every round at once (one process, not one per round).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from kgit.records.manifest import Manifest
from kgit.records.names import CampaignRefs
from kgit.records.notes import CampaignState, RoundNote

# A changed path's text before and after (None: absent on that side).
ChangedFiles = dict[str, tuple[str | None, str | None]]


class RecordReader(Protocol):
    """One campaign's record, read once per command (kgit/engine/campaign.py: Campaign.load)."""

    @property
    def name(self) -> str: ...

    @property
    def manifest(self) -> Manifest: ...

    @property
    def state(self) -> CampaignState: ...

    @property
    def refs(self) -> CampaignRefs: ...

    @property
    def record_sha(self) -> str:
        """The record ref's commit the campaign was read from."""
        ...

    def policy_words(self) -> str:
        """The campaign's decision policy in a few words (its module says them)."""
        ...

    def best_commit(self) -> str:
        """The best line's tip, as it was when the campaign was read."""
        ...

    def best_line(self) -> list[str]:
        """The best line's commits from `best_commit()`, newest first: its first-parent
        history, the order in which accepts moved it (kgit/records/notes.py: in_line_order)."""
        ...

    def all_rounds(self, with_shapes: bool = True) -> list[tuple[str, RoundNote]]:
        """(commit, note) of every recorded round, in round order."""
        ...

    def recorded(self, kind: str) -> dict[str, str]:
        """target -> blob of every note of KIND (rounds, bench, gate, ...) kgit recorded."""
        ...

    def note_problems(self, kinds: Iterable[str]) -> dict[str, list[str]]:
        """commit -> what differs between the notes refs of KINDS and what kgit recorded."""
        ...

    def read_blobs(self, shas: Sequence[str]) -> dict[str, bytes]: ...

    def read_objects(self, names: Sequence[str]) -> list[tuple[str, bytes] | None]:
        """(sha, content) of each object name (`rev:path`, a sha), None where missing."""
        ...

    def record_files(self) -> dict[str, bytes]:
        """Every file of the campaign record's tree (manifest, state, the harness copy...)."""
        ...

    def diffstats(
        self, pairs: Sequence[tuple[str, str]], paths: Sequence[str] = ()
    ) -> dict[str, str]:
        """new commit -> `git diff --stat` of each (old, new) pair, limited to PATHS."""
        ...

    def commit_messages(self, shas: Sequence[str]) -> dict[str, str]: ...

    def change_files(self, old: str, new: str) -> ChangedFiles:
        """Each path changed from commit OLD to NEW, with its text on both sides."""
        ...
