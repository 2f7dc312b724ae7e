"""Parsed round notes cached by blob sha under .git/kgit/cache/, and the cache files' writer."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kgit.gitdoor import Repo
from kgit.records.notes import NOTE_VERSION, RoundNote, type_problems

# Fields a listing of rounds (status, log) does not read: kept out of the light cache file.
# Of the statistics a listing reads the aggregate's estimate only (its change, kgit/judge/figures.py).
_HEAVY_FIELDS = (
    "shapes",
    "environment",
    "hashes",
    "diagnostics",
    "harness_tail",
    "evidence",
)


class NoteCache:
    """Parsed round notes keyed by blob sha, in .git/kgit/cache/.

    Parsing 1,000 YAML notes costs ~0.6 s, over the budget of `kgit status`. A blob's content
    never changes, so a parse keyed by its sha never goes stale; entries no longer listed are
    dropped on rewrite. Losing a file (or a race between two writers) only costs a re-parse.
    Two files: the whole notes, and a light copy without per-shape results for listings (a
    third of the bytes to read and decode at 1,000 rounds).
    """

    def __init__(self, repo: Repo, campaign: str) -> None:
        folder = repo.kgit_dir() / "cache"
        self.full = folder / f"round-notes-{campaign}.json"
        # light2: with the aggregate's estimate (a light file without it would read as unpaired)
        self.light = folder / f"round-notes-{campaign}.light2.json"
        self.repo = repo

    @staticmethod
    def _load(path: Path) -> dict[str, Any]:
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            return {}
        ok = isinstance(data, dict) and data.get("v") == NOTE_VERSION
        notes = data.get("notes") if ok else None
        if not isinstance(notes, dict):
            return {}
        # An entry rewritten with values of the wrong types is parsed again from its blob:
        # trusted as it is, a round number written as text crashed every listing.
        return {
            blob: note
            for blob, note in notes.items()
            if isinstance(note, dict) and not type_problems(RoundNote, note)
        }

    def parse(self, blobs: Iterable[str], with_shapes: bool = True) -> dict[str, RoundNote]:
        wanted = list(dict.fromkeys(blobs))
        cached = self._load(self.light if not with_shapes else self.full)
        if any(blob not in cached for blob in wanted) or len(cached) != len(wanted):
            cached = self._refresh(wanted)
        return {blob: RoundNote.from_dict(cached[blob], with_shapes) for blob in wanted}

    def _refresh(self, wanted: list[str]) -> dict[str, Any]:
        """Parse what the full cache lacks, rewrite both files; return the full notes."""
        full = self._load(self.full)
        missing = [blob for blob in wanted if blob not in full]
        for blob, text in self.repo.read_blobs(missing).items():
            full[blob] = RoundNote.from_text(text).to_dict()
        full = {blob: full[blob] for blob in wanted}
        light = {blob: _light(note) for blob, note in full.items()}
        self._store(self.full, full)
        self._store(self.light, light)
        return full

    @staticmethod
    def _store(path: Path, notes: dict[str, Any]) -> None:
        write_cache(path, {"v": NOTE_VERSION, "notes": notes})


def _light(note: dict[str, Any]) -> dict[str, Any]:
    light = {k: v for k, v in note.items() if k not in _HEAVY_FIELDS}
    aggregate = (note.get("statistics") or {}).get("aggregate")
    light["statistics"] = {"aggregate": aggregate} if aggregate else {}
    return light


def write_cache(path: Path, data: Any) -> None:
    """Write a cache file under .git/kgit/cache/ whole or not at all (a reader never sees half;
    two writers racing only cost a recomputation)."""
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)
