"""Notes that differ from what kgit recorded: found, named, and put back.

kgit writes every note into the campaign record and onto its notes ref in one transaction
(kgit/engine/campaign.py), and reads notes from the record. A notes ref that says something else was
changed after kgit wrote it (`git notes add -f`, `git notes edit`, a fetch that overwrote it) or
has lost a note. kgit never believes such a note; it reports it here (`kgit doctor`, `kgit log`,
`kgit show`, the report), `round accept` refuses to move the best line while one of the round
notes differs, and `kgit doctor --fix` publishes kgit's version again (the other one stays in the
notes ref's history).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kgit.engine.campaign import Campaign
from kgit.errors import KgitError
from kgit.records.names import NOTE_KINDS
from kgit.records.notes import CHANGED, MISSING, UNRECORDED


@dataclass(frozen=True)
class Drift:
    """One note whose published copy differs from the campaign record."""

    how: str  # CHANGED, MISSING or UNRECORDED
    kind: str  # the notes ref: rounds, bench, gate, final
    target: str  # the commit (tree, for gate notes) it is attached to
    recorded: str | None  # the blob kgit recorded
    found: str | None  # the blob the notes ref holds


def compare(
    kind: str, recorded: dict[str, str], published: dict[str, str], copies: set[str]
) -> list[Drift]:
    """The drifts between what kgit RECORDED for KIND and what its notes ref PUBLISHED (both
    target -> blob). A note on a target kgit never wrote is not a drift when its blob is one of
    COPIES, kgit's own notes: git's `notes.rewriteRef` (which a kgit before this set) copied them
    onto amended or rebased commits."""
    drifts = [
        Drift(
            CHANGED if target in published else MISSING, kind, target, blob, published.get(target)
        )
        for target, blob in recorded.items()
        if published.get(target) != blob
    ]
    drifts += [
        Drift(UNRECORDED, kind, target, None, blob)
        for target, blob in published.items()
        if target not in recorded and blob not in copies
    ]
    return sorted(drifts, key=lambda d: (d.kind, d.target))


def drifts(campaign: Campaign, kinds: Iterable[str] = NOTE_KINDS) -> list[Drift]:
    """Every drift of CAMPAIGN's notes refs of KINDS: one `git notes list` per kind."""
    if not campaign.sealed:
        return []  # a record from before kgit kept its notes: nothing to compare with yet
    found = []
    for kind in kinds:
        recorded = campaign.recorded(kind)
        published = campaign.repo.notes_list(campaign.refs.notes(kind))
        found += compare(kind, recorded, published, set(recorded.values()))
    return found


def subject(campaign: Campaign, drift: Drift, rounds: dict[str, int] | None = None) -> str:
    """What the note is about, in the campaign's words: `note of round-3`, `gate note of tree
    1a2b3c4d5e`. ROUNDS maps commits to round numbers (the keep-refs), when the caller has it."""
    if drift.kind == "gate":
        return f"gate note of tree {drift.target[:10]}"
    if drift.kind == "final":
        return f"final report note on {drift.target[:10]}"
    rounds = rounds if rounds is not None else round_numbers(campaign)
    number = rounds.get(drift.target)
    what = f"round-{number}" if number is not None else f"commit {drift.target[:10]}"
    kind = {"rounds": "note", "log": "git log summary"}.get(drift.kind, "benchmark CSV note")
    return f"{kind} of {what}"


def round_numbers(campaign: Campaign) -> dict[str, int]:
    """Commit -> round number, from the keep-refs and the branches of the rounds in flight."""
    numbers = {commit: number for number, commit in campaign.kept_rounds().items()}
    for open_round in campaign.state.open_rounds:
        tip = campaign.repo.rev_parse(campaign.refs.round_branch(open_round.number))
        if tip is not None:
            numbers.setdefault(tip, open_round.number)
    return numbers


def problem(campaign: Campaign, drift: Drift, rounds: dict[str, int] | None = None) -> str:
    """The drift in one sentence, e.g. `note of round-3 changed after kgit wrote it: ...`."""
    what, ref = subject(campaign, drift, rounds), campaign.refs.notes(drift.kind)
    if drift.how == CHANGED:
        return (
            f"{what} changed after kgit wrote it: {ref} on {drift.target[:10]} holds blob "
            f"{(drift.found or '')[:10]}, kgit recorded {(drift.recorded or '')[:10]} (kgit reads "
            "the recorded one)"
        )
    if drift.how == MISSING:
        return f"{what} was removed from {ref} after kgit wrote it (kgit reads the recorded one)"
    return f"{ref} holds a note on {drift.target[:10]} that kgit did not write (kgit ignores it)"


def repair(campaign: Campaign, drift: Drift) -> str:
    if drift.how == UNRECORDED:
        return f"git notes --ref={campaign.refs.notes(drift.kind)} remove {drift.target}"
    return (
        "kgit doctor --fix (publishes kgit's note again; the other stays in the notes ref's reflog)"
    )


def problems_by_commit(campaign: Campaign, kinds: Iterable[str]) -> dict[str, list[str]]:
    """Target -> the problems of its notes of KINDS, for views that show one round at a time."""
    found: dict[str, list[str]] = {}
    rounds: dict[str, int] | None = None
    for drift in drifts(campaign, kinds):
        if drift.how != UNRECORDED:
            rounds = rounds if rounds is not None else round_numbers(campaign)
            found.setdefault(drift.target, []).append(problem(campaign, drift, rounds))
    return found


def require_unchanged(campaign: Campaign, kinds: Iterable[str], action: str) -> None:
    """Refuse ACTION while a note of KINDS that kgit recorded differs on its notes ref. Record
    and notes refs are read together under the write lock: another work tree's write between
    reading one and the other (rounds in parallel) once read as a changed note."""
    with campaign.repo.write_lock():
        current = campaign.reload()
        found = [d for d in drifts(current, kinds) if d.how != UNRECORDED]
    if found:
        first = problem(current, found[0])
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise KgitError(
            f"cannot {action}: {first}{more}",
            hint="kgit doctor shows every changed note; kgit doctor --fix puts kgit's back "
            f"(see the change: git diff {(found[0].recorded or '')[:10]} "
            f"{(found[0].found or '')[:10] or '(none)'})",
        )


def republish(campaign: Campaign, changed: list[Drift]) -> None:
    """Attach kgit's recorded note again wherever CHANGED says the notes ref differs, in one
    compare-and-swap transaction; the record itself does not change. Callers hold the lock."""
    moves: list[tuple[str, str, str | None]] = []
    for kind in dict.fromkeys(d.kind for d in changed):
        notes = {d.target: d.recorded for d in changed if d.kind == kind and d.recorded}
        old, new = campaign.repo.notes_commit(campaign.refs.notes(kind), notes)
        moves.append((campaign.refs.notes(kind), new, old))
    if moves:
        campaign.repo.update_refs(moves, "kgit doctor: notes as kgit recorded them")
