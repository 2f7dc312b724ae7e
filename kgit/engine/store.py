"""A campaign as stored in git: the record ref (manifest, state, frozen harness copy), round and
bench notes, gate notes on trees, and the refs that keep every round reachable."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kgit.errors import KgitError, UsageError
from kgit.gitdoor import Repo
from kgit.records.manifest import Manifest, manifest_from_stored
from kgit.records.names import CampaignRefs, campaign_of_branch, validate_campaign_name
from kgit.records.notes import BASELINE, NOTE_VERSION, CampaignState, GateNote, RoundNote

MANIFEST_FILE = "manifest.yaml"
STATE_FILE = "state.json"
HARNESS_DIR = "harness"  # copies of protected_paths as frozen at baseline


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def list_campaigns(repo: Repo) -> list[str]:
    names = []
    for ref in repo.refs("refs/kgit/"):
        parts = ref.split("/")
        if len(parts) == 4 and parts[3] == "campaign":
            names.append(parts[2])
    return sorted(names)


def resolve_campaign(repo: Repo, name: str | None) -> str:
    """The campaign NAME, else the one of the checked-out kgit branch, else the only one."""
    if name:
        validate_campaign_name(name)
        if name not in list_campaigns(repo):
            raise UsageError(
                f"no campaign named {name!r} in this repository",
                hint="kgit status --all lists the campaigns; kgit init NAME creates one",
            )
        return name
    from_branch = campaign_of_branch(repo.current_branch())
    if from_branch:
        return from_branch
    names = list_campaigns(repo)
    if len(names) == 1:
        return names[0]
    if not names:
        raise UsageError(
            "no kgit campaign in this repository", hint="kgit init NAME --manifest FILE"
        )
    raise UsageError(
        f"several campaigns here ({', '.join(names)}) and none is checked out",
        hint="pass --campaign NAME (or set KGIT_CAMPAIGN)",
    )


@dataclass
class Campaign:
    """One campaign's stored record, read once per command."""

    repo: Repo
    refs: CampaignRefs
    manifest: Manifest
    state: CampaignState
    record_sha: str  # the record ref's commit this was read from (for compare-and-swap)
    best_at_load: str | None = None  # for views; writers re-read it under the lock
    notes_at_load: str | None = None  # the round notes ref's commit: keys the views' cache

    @property
    def name(self) -> str:
        return self.refs.name

    @classmethod
    def load(cls, repo: Repo, name: str) -> Campaign:
        refs = CampaignRefs(name)
        record, manifest, state, best, notes = repo.read_objects(
            [
                refs.record,
                f"{refs.record}:{MANIFEST_FILE}",
                f"{refs.record}:{STATE_FILE}",
                refs.best,
                refs.round_notes,
            ]
        )
        if record is None or manifest is None or state is None:
            raise UsageError(f"no campaign named {name!r}", hint="kgit init NAME --manifest FILE")
        return cls(
            repo,
            refs,
            manifest_from_stored(manifest[1].decode()),
            CampaignState.from_json(state[1]),
            record[0],
            best[0] if best else None,
            notes[0] if notes else None,
        )

    # -- the record ref ------------------------------------------------------------------------

    def save(self, message: str, extra_files: dict[str, bytes] | None = None) -> None:
        """Write manifest and state as a new record commit (compare-and-swap on the ref).
        Callers hold the write lock and have re-read the campaign under it."""
        files = {
            path: data
            for path, data in self.repo.read_tree_files(self.record_sha).items()
            if path not in (MANIFEST_FILE, STATE_FILE)
        }
        files.update(extra_files or {})
        files[MANIFEST_FILE] = self.manifest.to_stored_text().encode()
        files[STATE_FILE] = self.state.to_json()
        tree = self.repo.make_tree(files)
        commit = self.repo.commit_tree(tree, [self.record_sha], f"kgit {self.name}: {message}\n")
        self.repo.update_ref(self.refs.record, commit, self.record_sha, f"kgit: {message}")
        self.record_sha = commit

    @staticmethod
    def create(repo: Repo, name: str, manifest: Manifest, base: str) -> Campaign:
        refs = CampaignRefs(name)
        state = CampaignState(name=name, base=base, created=now())
        files = {MANIFEST_FILE: manifest.to_stored_text().encode(), STATE_FILE: state.to_json()}
        commit = repo.commit_tree(repo.make_tree(files), [], f"kgit {name}: campaign created\n")
        repo.update_ref(refs.record, commit, None, "kgit: campaign created")
        return Campaign(repo, refs, manifest, state, commit)

    def reload(self) -> Campaign:
        return Campaign.load(self.repo, self.name)

    # -- refs ----------------------------------------------------------------------------------

    def best_tip(self) -> str:
        sha = self.repo.rev_parse(self.refs.best)
        if sha is None:
            raise KgitError(
                f"the best line {self.refs.best} is missing",
                hint=f"restore it: git update-ref {self.refs.best} <last accepted commit>",
            )
        return sha

    def kept_rounds(self) -> dict[int, str]:
        """Round number -> commit, for every round that was recorded."""
        return {
            int(ref.rsplit("/", 1)[1]): sha
            for ref, sha in self.repo.refs(self.refs.kept_prefix).items()
        }

    # -- notes ---------------------------------------------------------------------------------

    def write_round(self, commit: str, note: RoundNote) -> None:
        self.repo.note_write(self.refs.round_notes, commit, note.to_text().encode())

    def read_round(self, commit: str) -> RoundNote | None:
        data = self.repo.note_read(self.refs.round_notes, commit)
        return RoundNote.from_text(data) if data is not None else None

    def all_rounds(self, with_shapes: bool = True) -> list[tuple[str, RoundNote]]:
        """(commit, note) of every recorded round, in round order: two git processes in all."""
        listing = self.repo.notes_list(self.refs.round_notes)
        notes = NoteCache(self.repo, self.name).parse(listing.values(), with_shapes)
        rounds = [(commit, notes[blob]) for commit, blob in listing.items()]
        rounds = [(c, n) for c, n in rounds if n.campaign == self.name]
        numbers = [n.round for _, n in rounds]
        if len(set(numbers)) != len(numbers):
            # A round validated twice (a correctness fix) has a note on each commit; the round's
            # record is the one on the commit its keep-ref points at. Reading 1,000 keep-refs
            # costs ~25 ms, so only when some round has several notes.
            kept = self.kept_rounds()
            rounds = [(c, n) for c, n in rounds if kept.get(n.round) == c]
        if self.state.baselined and not any(n.status == BASELINE for _, n in rounds):
            raise self._notes_lost()
        return sorted(rounds, key=lambda item: item[1].round)

    def _notes_lost(self) -> KgitError:
        """The record says round-1 was measured but its note is gone: the notes ref was deleted
        or rewritten by hand. Every view and verdict reads the baseline from it, so kgit stops
        here rather than judging against nothing."""
        ref = self.refs.round_notes
        return KgitError(
            f"campaign {self.name} has its baseline, but {ref} holds no baseline note "
            "(the round notes were deleted or rewritten outside kgit)",
            hint=f"restore {ref} from a clone or remote (git fetch origin '{ref}:{ref}'), or "
            "find its last commit with `git fsck --lost-found` and "
            f"`git update-ref {ref} <commit>`",
        )

    def write_bench(self, commit: str, csv_bytes: bytes) -> None:
        self.repo.note_write(self.refs.bench_notes, commit, csv_bytes)

    def read_bench(self, commit: str) -> bytes | None:
        return self.repo.note_read(self.refs.bench_notes, commit)

    def write_gate(self, tree: str, note: GateNote) -> None:
        self.repo.note_write(self.refs.gate_notes, tree, note.to_text().encode())

    def read_gate(self, tree: str) -> GateNote | None:
        data = self.repo.note_read(self.refs.gate_notes, tree)
        return GateNote.from_text(data) if data is not None else None


# Fields a listing of rounds (status, log) does not read: kept out of the light cache file.
_HEAVY_FIELDS = (
    "shapes",
    "statistics",
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
        self.light = folder / f"round-notes-{campaign}.light.json"
        self.repo = repo

    @staticmethod
    def _load(path: Path) -> dict[str, Any]:
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            return {}
        ok = isinstance(data, dict) and data.get("v") == NOTE_VERSION
        notes = data.get("notes") if ok else None
        return notes if isinstance(notes, dict) else {}

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
        light = {
            blob: {k: v for k, v in note.items() if k not in _HEAVY_FIELDS}
            for blob, note in full.items()
        }
        self._store(self.full, full)
        self._store(self.light, light)
        return full

    @staticmethod
    def _store(path: Path, notes: dict[str, Any]) -> None:
        write_cache(path, {"v": NOTE_VERSION, "notes": notes})


def write_cache(path: Path, data: Any) -> None:
    """Write a cache file under .git/kgit/cache/ whole or not at all (a reader never sees half;
    two writers racing only cost a recomputation)."""
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)
