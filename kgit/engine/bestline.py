"""The best line moves only by kgit: its tip must be the commit of the last accept the record
holds (the campaign's base before any), or the tip of an accept that a kill interrupted.

A newcomer who edited the best line after a rollback committed there and the commit became the
next round's reference, with no gate and no verdict; `git branch -f` moves it as easily. The
commit hook refuses a commit on a best line (hooks/pre-commit), but `--no-verify` and plain ref
moves pass any hook: so every command that measures against the best line, builds on it or
reports it checks its tip against the record first (`require_best_where_recorded`), and says
the one command that puts it back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kgit.engine.campaign import Campaign
from kgit.errors import KgitError
from kgit.records.notes import ACCEPTING, RoundNote, kept_by


@dataclass(frozen=True)
class BestLine:
    tip: str
    recorded: str  # where the record says it is
    round: int | None  # the round whose accept put it there (None: the base)

    @property
    def moved(self) -> bool:
        return self.tip != self.recorded


def best_line(campaign: Campaign, tip: str, accepted: Mapping[str, int] | None = None) -> BestLine:
    """TIP (the best line's) against the record: its last accept's commit, or the base.
    ACCEPTED: the commits of the rounds that kept their change (round-1's included), by round
    number, where the caller has them already (`kgit status`, from the lineage's cached rows:
    listing every note again cost ~1 s at 10,000 rounds); what is made of them is checked
    against the record all the same (`_in_record`). Without ACCEPTED they come from the
    record's own notes, never the views' cache of parsed notes: a cache that called the last
    accept rolled back made an earlier accept the recorded tip, and a best line moved back there
    was built on, measured against and accepted over."""
    if accepted is None:
        recorded, number = _last_accept(campaign, tip, _recorded_accepts(campaign))
    else:
        recorded, number = _last_accept(campaign, tip, accepted)
        if not _in_record(campaign, recorded, number):
            recorded, number = _last_accept(campaign, tip, _recorded_accepts(campaign))
    if tip != recorded and _interrupted_accept(campaign, tip, recorded):
        recorded = tip
    return BestLine(tip, recorded, number)


def _recorded_accepts(campaign: Campaign) -> dict[str, int]:
    rounds = campaign.all_rounds(False, verified=True)
    return {commit: note.round for commit, note in rounds if note.accepted}


def _last_accept(
    campaign: Campaign, tip: str, accepted: Mapping[str, int]
) -> tuple[str, int | None]:
    """The commit of the last of ACCEPTED and its round (the base and None before any)."""
    if not accepted:
        return campaign.state.base, None
    heads = campaign.repo.heads_of(sorted(accepted))
    # Accepts move one line forward: one commit leads from all the others. Several (a record
    # that merged two clones' lines) leave the tip to be any one of them.
    recorded = tip if tip in heads else max(heads, key=lambda c: accepted[c])
    return recorded, accepted[recorded]


def _in_record(campaign: Campaign, recorded: str, number: int | None) -> bool:
    """Whether the record holds what a listing from the views' cache (which any process of the
    user's can rewrite) made of the best line: RECORDED accepted as round NUMBER, and no round
    after it that kept its change. The rounds after it are found by their keep-refs and their
    notes read from the record: the rounds since the last accept, not every note. A cache that
    left out the last accept, or called it rolled back, hid a best line moved back to the accept
    before it from `kgit status`."""
    state, listing = campaign.state, campaign.recorded("rounds")
    own = listing.get(recorded) if number is not None else None
    if number is not None and own is None:
        return False  # no note of the accept in the record
    unkept = {entry.get("round") for entry in state.abandoned}
    unkept |= {found.number for found in state.open_rounds}
    later = range((number or 0) + 1, state.next_round)
    # One git process for the accept's note and the keep-refs of the rounds since, one for
    # their notes.
    found = campaign.repo.read_objects([*([own] if own else []), *map(campaign.refs.kept, later)])
    if own:
        note = found.pop(0)
        if note is None or not _kept(campaign, note[1]):
            return False
    blobs = []
    for round_number, kept in zip(later, found, strict=True):
        if kept is None and round_number not in unkept:
            return False  # a round with no commit kept: the whole record decides
        if kept is not None and kept[0] in listing:
            blobs.append(listing[kept[0]])
    texts = campaign.repo.read_blobs(blobs).values()
    return not any(_kept(campaign, text) for text in texts)


def _kept(campaign: Campaign, text: bytes) -> bool:
    """Whether the recorded round note TEXT is the campaign's and kept its change."""
    kept = kept_by(text, campaign.name)
    if kept is None:  # not plainly as kgit writes it: the parser decides
        note = RoundNote.from_text(text)
        kept = note.campaign == campaign.name and note.accepted
    return kept


def _interrupted_accept(campaign: Campaign, tip: str, recorded: str) -> bool:
    """Whether TIP is an open round's commit with an accepting verdict, straight above the
    recorded tip: an accept killed after it moved the best line (accept completes it). A best
    line moved by hand onto a round's rolled-back commit is not one: measured against as the
    reference, a kernel twice as slow as the baseline read +102% against a four-times-slower
    "best" and was accepted."""
    note = campaign.read_round(tip)
    if note is None or note.decision not in ACCEPTING:
        return False
    open_round = campaign.state.open_numbered(note.round)
    return open_round is not None and open_round.parent == recorded


def restore_command(campaign: Campaign, line: BestLine) -> str:
    """The one command line that puts the best line back where the record says, keeping what
    was put there under a branch of its own (replayed later as a round: git cherry-pick)."""
    best = campaign.refs.best
    keep = f"git branch kgit-moved-{line.tip[:10]} {line.tip}"
    if campaign.repo.current_branch() == best:  # the work tree follows the branch back
        return f"{keep} && git reset --keep {line.recorded}"
    return f"{keep} && git update-ref {best} {line.recorded} {line.tip}"


def moved_error(campaign: Campaign, line: BestLine) -> KgitError:
    best = campaign.refs.best
    where = (
        f"round-{line.round}'s accept"
        if line.round and line.round > 1
        else "the baseline"
        if line.round
        else "the campaign's base"
    )
    return KgitError(
        f"the best line {best.removeprefix('refs/heads/')} was moved outside kgit: it is at "
        f"{line.tip[:10]}, and the record puts it at {line.recorded[:10]} ({where}); nothing "
        "is measured against, or built on, a commit no verdict accepted",
        hint=f"put it back: {restore_command(campaign, line)} (then replay the change as a "
        "round: kgit round start, git cherry-pick)",
    )


def require_best_where_recorded(campaign: Campaign) -> str:
    """The best line's tip, once it is where the record puts it (else refused)."""
    line = best_line(campaign, campaign.best_tip())
    if line.moved:
        raise moved_error(campaign, line)
    return line.tip
