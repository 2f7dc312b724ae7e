"""A campaign as stored in git: the record ref (manifest, state, frozen harness copy, every note
kgit wrote), round and bench notes, gate notes on trees, and the refs that keep every round
reachable.

Notes are kgit's record, and anyone can rewrite a notes ref (`git notes add -f`). So every note
kgit writes goes into the campaign record first, as `notes/<kind>/<target>` holding the note's
blob, in the same compare-and-swap transaction that moves the notes ref: a kill leaves both moved
or neither. kgit reads its notes from the record; the notes refs are their published copy, for
`git log --notes`, and a copy that differs is reported (kgit/engine/guards/seal.py), never believed."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kgit.engine.note_cache import NoteCache
from kgit.errors import KgitError, UsageError
from kgit.gitdoor import RefsMoved, Repo
from kgit.records.lognote import log_summary
from kgit.records.manifest import Manifest, manifest_from_stored
from kgit.records.names import (
    MANIFEST_FILE,
    NOTE_KINDS,
    NOTES_DIR,
    NOTES_README,
    STATE_FILE,
    CampaignRefs,
    campaign_of_branch,
    validate_campaign_name,
)
from kgit.records.notes import BASELINE, CampaignState, GateNote, RoundNote

# A save swaps again when a notes ref only grew under the write lock (Campaign._notes_only_grew):
# git's notes copy, one per amend or rebase, so a few tries a moment apart outlast a burst.
SAVE_TRIES, SAVE_PAUSE_S = 5, 0.05

_NOTES_README_TEXT = b"""\
Every note kgit wrote for this campaign, as it wrote it: notes/<kind>/<target> is the blob kgit
attached to <target> in refs/notes/kgit/<campaign>/<kind>. kgit reads its notes from here; the
notes refs are their published copy (git log --notes), and `kgit doctor` reports one that differs.
"""


def now() -> str:
    from datetime import datetime, timezone  # only writers stamp: not loaded by the views

    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def list_campaigns(repo: Repo) -> list[str]:
    names = []
    for ref in repo.refs("refs/kgit/"):
        parts = ref.split("/")
        if len(parts) == 4 and parts[3] == "campaign":
            names.append(parts[2])
    return sorted(names)


def resolve_campaign(repo: Repo, name: str | None, *, branch: str | None = None) -> str:
    """The campaign NAME, else the one of the checked-out kgit branch (BRANCH where the caller
    read it already), else the only one."""
    if name:
        validate_campaign_name(name)
        if name not in list_campaigns(repo):
            raise UsageError(
                f"no campaign named {name!r} in this repository",
                hint="kgit status --all lists the campaigns; kgit init NAME creates one",
            )
        return name
    from_branch = campaign_of_branch(branch or repo.current_branch())
    if from_branch:
        return from_branch
    names = list_campaigns(repo)
    if len(names) == 1:
        return names[0]
    if not names:
        raise UsageError(
            "no kgit campaign in this repository",
            hint=_pull_hint(repo) or "kgit init NAME --manifest FILE",
        )
    raise UsageError(
        f"several campaigns here ({', '.join(names)}) and none is checked out",
        hint="pass --campaign NAME (or set KGIT_CAMPAIGN)",
    )


def _pull_hint(repo: Repo) -> str | None:
    """A clone of a repository that holds campaigns (git clone fetches none of kgit's refs but
    the branches) is told to pull them, not to start a new one. Only on this error path: it
    may ask the remote (a few seconds at most)."""
    from kgit.engine.remote import remote_campaign_hint  # it builds on this module

    return remote_campaign_hint(repo)


@dataclass(frozen=True)
class NoteWrite:
    """A note about to be written: its kind (a notes ref of NOTE_KINDS), the object it is
    attached to, and its blob, already stored."""

    kind: str
    target: str
    blob: str
    log: str | None = None  # a round note's summary for `git log` (kgit/records/lognote.py), stored


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
    manifest_blob: bytes = b""  # the manifest as stored: what `kgit trust` approves
    sealed: bool = True  # the record holds its notes (False: written by a kgit before that)
    recorded_rounds: dict[str, str] | None = None  # commit -> round note blob, as recorded

    @property
    def name(self) -> str:
        return self.refs.name

    @classmethod
    def load(cls, repo: Repo, name: str) -> Campaign:
        refs = CampaignRefs(name)
        record, manifest, state, best, notes, readme, rounds = repo.read_objects(
            [
                refs.record,
                f"{refs.record}:{MANIFEST_FILE}",
                f"{refs.record}:{STATE_FILE}",
                refs.best,
                refs.round_notes,
                f"{refs.record}:{NOTES_README}",
                f"{refs.record}:{NOTES_DIR}/rounds",
            ]
        )
        if record is None or manifest is None or state is None:
            raise UsageError(f"no campaign named {name!r}", hint="kgit init NAME --manifest FILE")
        if readme is None:
            _require_never_sealed(repo, refs, record[0])
        return cls(
            repo,
            refs,
            manifest_from_stored(manifest[1].decode()),
            CampaignState.from_json(state[1]),
            record[0],
            best[0] if best else None,
            notes[0] if notes else None,
            manifest[1],
            readme is not None,
            _listing(rounds[1]) if rounds else {},
        )

    # -- the record ref ------------------------------------------------------------------------

    def save(
        self,
        message: str,
        extra_files: Mapping[str, bytes | None] | None = None,
        notes: Iterable[NoteWrite] = (),
        moves: Iterable[tuple[str, str, str | None]] = (),
    ) -> None:
        """Write the state, EXTRA_FILES (None: a file removed) and NOTES as a new record commit,
        and attach NOTES, in one compare-and-swap transaction of the record ref, the notes refs
        and MOVES (other refs: REF, NEW, OLD), so that a kill leaves all or none. Callers hold
        the write lock and have re-read the campaign under it. The manifest is kept byte for
        byte unless EXTRA_FILES holds a revision of it (kgit/engine/rounds/revise.py): its bytes are what
        `kgit trust` approved."""
        notes = list(notes)
        notes += [NoteWrite("log", n.target, n.log) for n in notes if n.log]
        moves = list(moves)
        files: dict[str, bytes | str | None] = dict(extra_files or {})
        files[STATE_FILE] = self.state.to_json()
        if not self.sealed:
            files.update(self._adopted_notes())
        files.update({f"{NOTES_DIR}/{n.kind}/{n.target}": n.blob for n in notes})
        tree = self.repo.tree_with(self.record_sha, files)
        commit = self.repo.commit_tree(tree, [self.record_sha], f"kgit {self.name}: {message}\n")
        for attempt in range(1, SAVE_TRIES + 1):
            updates = moves + self._notes_moves(notes)
            updates.append((self.refs.record, commit, self.record_sha))
            try:
                self.repo.update_refs(updates, f"kgit: {message}")
                break
            except RefsMoved:
                if attempt == SAVE_TRIES or not self._notes_only_grew(updates, len(moves)):
                    raise
                time.sleep(SAVE_PAUSE_S * attempt)
        self.record_sha, self.sealed = commit, True
        if self.recorded_rounds is not None:
            self.recorded_rounds.update({n.target: n.blob for n in notes if n.kind == "rounds"})

    def _notes_moves(self, notes: list[NoteWrite]) -> list[tuple[str, str, str | None]]:
        """(ref, new, old) of each notes ref that NOTES touch: its notes as they are now, with
        NOTES attached."""
        moves: list[tuple[str, str, str | None]] = []
        for kind in dict.fromkeys(n.kind for n in notes):
            attached = {n.target: n.blob for n in notes if n.kind == kind}
            old, new = self.repo.notes_commit(self.refs.notes(kind), attached)
            moves.append((self.refs.notes(kind), new, old))
        return moves

    def _notes_only_grew(self, updates: list[tuple[str, str, str | None]], moves: int) -> bool:
        """Whether a lost swap of UPDATES (the caller's MOVES first, then the notes refs, then
        the record ref) lost only to notes refs that grew: the record ref and the caller's
        moves are where they were read, and each notes ref is where it was or a descendant of
        it. Under the write lock no kgit process moves them, but git does, unlocked, when
        `notes.rewriteRef` names them (a kgit before this set it, a user may): its copy of a
        note onto an amended or rebased commit adds one commit to the ref. The notes are then
        rebuilt on what git left, and swapped again; a rewound or replaced notes ref, or any
        other ref moved, is a writer that bypassed the lock, and the save stops."""
        fixed = [(ref, old) for ref, _, old in [*updates[:moves], updates[-1]]]
        if any(self.repo.rev_parse(ref) != old for ref, old in fixed):
            return False
        for ref, _, old in updates[moves:-1]:
            now = self.repo.rev_parse(ref)
            if old is not None and now != old and not (now and self.repo.is_ancestor(old, now)):
                return False
        return True

    def _adopted_notes(self) -> dict[str, bytes | str | None]:
        """A record written before kgit kept its notes there takes the notes refs as they are
        now, once: what kgit can vouch for from here on is what they held at this write."""
        files: dict[str, bytes | str | None] = {NOTES_README: _NOTES_README_TEXT}
        for kind in NOTE_KINDS:
            for target, blob in self.repo.notes_list(self.refs.notes(kind)).items():
                files[f"{NOTES_DIR}/{kind}/{target}"] = blob
        self.recorded_rounds = None  # re-read on demand
        return files

    @staticmethod
    def create(repo: Repo, name: str, manifest: Manifest, base: str) -> Campaign:
        refs = CampaignRefs(name)
        state = CampaignState(name=name, base=base, created=now())
        stored = manifest.to_stored_text().encode()
        files = {
            MANIFEST_FILE: stored,
            STATE_FILE: state.to_json(),
            NOTES_README: _NOTES_README_TEXT,
        }
        commit = repo.commit_tree(repo.make_tree(files), [], f"kgit {name}: campaign created\n")
        repo.update_ref(refs.record, commit, None, "kgit: campaign created")
        return Campaign(
            repo, refs, manifest, state, commit, manifest_blob=stored, recorded_rounds={}
        )

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

    def note(self, kind: str, target: str, data: bytes) -> NoteWrite:
        """DATA stored as a blob, byte-exact, ready to be recorded and attached by `save`."""
        return NoteWrite(kind, target, self.repo.write_blob(data))

    def recorded(self, kind: str) -> dict[str, str]:
        """target -> blob of every note of KIND, as kgit recorded it (for a record from before
        kgit kept its notes, the notes ref as it is)."""
        if not self.sealed:
            return self.repo.notes_list(self.refs.notes(kind))
        if kind == "rounds" and self.recorded_rounds is not None:
            return self.recorded_rounds
        found = self.repo.read_objects([f"{self.record_sha}:{NOTES_DIR}/{kind}"])[0]
        listing = _listing(found[1]) if found else {}
        if kind == "rounds":
            self.recorded_rounds = listing
        return listing

    def read_note(self, kind: str, target: str) -> bytes | None:
        """The note of KIND on TARGET as kgit recorded it."""
        if not self.sealed:
            return self.repo.note_read(self.refs.notes(kind), target)
        found = self.repo.read_objects([f"{self.record_sha}:{NOTES_DIR}/{kind}/{target}"])[0]
        return found[1] if found else None

    def write_round(self, commit: str, note: RoundNote) -> None:
        self.save(f"round-{note.round} note", notes=[self.round_note(commit, note)])

    def round_note(self, commit: str, note: RoundNote) -> NoteWrite:
        """The round note and, written with it, its summary that `git log` displays, with the
        changes every view shows (vs baseline chains the recorded rounds' pairs)."""
        from kgit.judge.figures import Figures  # written, not read: not loaded by the views

        pcts = None
        if note.status != BASELINE:  # the baseline's summary has no change (nor a record yet)
            figures = Figures([*self.all_rounds(with_shapes=False), (commit, note)])
            changes = (figures.vs_best(note), figures.vs_baseline(note))
            pcts = (changes[0].pct if changes[0] else None, changes[1].pct if changes[1] else None)
        summary = self.repo.write_blob(log_summary(note, pcts).encode())
        return NoteWrite("rounds", commit, self.repo.write_blob(note.to_text().encode()), summary)

    def read_round(self, commit: str) -> RoundNote | None:
        data = self.read_note("rounds", commit)
        return RoundNote.from_text(data) if data is not None else None

    def all_rounds(
        self, with_shapes: bool = True, *, verified: bool = False
    ) -> list[tuple[str, RoundNote]]:
        """(commit, note) of every recorded round, in round order. The listing comes with the
        record (`Campaign.load`); parsed notes are cached by blob, so no git process at all once
        the cache holds them. VERIFIED reads them from the record's blobs instead: what a verdict
        is judged against never comes from a file under .git/kgit/ that any process of the
        user's may rewrite (the views may show a cache; a judgement may not)."""
        listing = self.recorded("rounds")
        if verified:
            blobs = self.repo.read_blobs(list(dict.fromkeys(listing.values())))
            notes = {blob: RoundNote.from_text(text) for blob, text in blobs.items()}
        else:
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
        or rewritten by hand (a record written before kgit kept its notes). Every view and
        verdict reads the baseline from it, so kgit stops here rather than judging against
        nothing."""
        ref = self.refs.round_notes
        return KgitError(
            f"campaign {self.name} has its baseline, but {ref} holds no baseline note "
            "(the round notes were deleted or rewritten outside kgit)",
            hint=f"restore {ref} from a clone or remote (git fetch origin '{ref}:{ref}'), or "
            "find its last commit with `git fsck --lost-found` and "
            f"`git update-ref {ref} <commit>`",
        )

    def write_bench(self, commit: str, csv_bytes: bytes) -> None:
        self.save("benchmark CSV note", notes=[self.bench_note(commit, csv_bytes)])

    def bench_note(self, commit: str, csv_bytes: bytes) -> NoteWrite:
        return self.note("bench", commit, csv_bytes)

    def read_bench(self, commit: str) -> bytes | None:
        return self.read_note("bench", commit)

    def gate_note(self, tree: str, note: GateNote) -> NoteWrite:
        return self.note("gate", tree, note.to_text().encode())

    def read_gate(self, tree: str) -> GateNote | None:
        data = self.read_note("gate", tree)
        return GateNote.from_text(data) if data is not None else None


def _require_never_sealed(repo: Repo, refs: CampaignRefs, record: str) -> None:
    """A record without notes/ is one a kgit before this wrote, read from its notes refs until
    its next write; unless an earlier record commit had notes/: then someone removed them, and
    reading the notes refs instead would believe whatever they now say. One git call, paid only
    by records without notes/."""
    found = repo.commits_touching(record, NOTES_README, limit=1)
    if found:
        raise KgitError(
            f"the campaign record {refs.record} lost the notes kgit kept in it (they are in "
            f"{found[0][:10]}, not in {record[:10]}): it was rewritten outside kgit",
            hint=f"inspect it (git log --stat {refs.record}), then restore it: git update-ref "
            f"{refs.record} <the last commit kgit wrote> {record}",
        )


def _listing(tree: bytes) -> dict[str, str]:
    """target -> blob of a raw `notes/<kind>` tree of the record."""
    return {name: sha for name, (_mode, sha) in Repo.parse_tree(tree).items()}
