"""What a remote's campaign record must be before `kgit pull` takes it, and how a refusal
names what it found: a record that diverged (the colliding rounds, on each side), one that
rewrites what this clone recorded, one holding a round note kgit cannot read, a best line no
round accepted. kgit/engine/sharing/pull.py calls these before it moves anything."""

from __future__ import annotations

from kgit.engine.remote import SALVAGE, RecordAt, Sides
from kgit.errors import KgitError
from kgit.gitdoor import Repo
from kgit.records.manifest import REVISABLE_AFTER_BASELINE, differing_fields, manifest_from_stored
from kgit.records.names import HARNESS_DIR, MANIFEST_FILE
from kgit.records.notes import (
    ACCEPTING,
    FINAL,
    NOTE_VERSION,
    RoundNote,
    load_record,
    type_problems,
)


def unsealed(sides: Sides, remote: str | None) -> KgitError:
    where = f"{remote}'s" if remote else "this clone's"
    return KgitError(
        f"{where} record of campaign {sides.name} was written by a kgit that did not keep its "
        "notes in it: a changed note could not be told from kgit's",
        hint=("in a clone that has it: " if remote else "")
        + "kgit doctor --fix (records the notes as they are), "
        + (f"kgit push; then kgit pull {remote}" if remote else "then kgit pull again"),
    )


def round_words(repo: Repo, record: RecordAt, base: RecordAt, number: int) -> str:
    """Round NUMBER as RECORD has it, e.g. `round-5 "bigger tiles" ACCEPTED on 1a2b3c4d5e`."""
    open_round = record.state.open_numbered(number)
    if open_round is not None:
        return f'round-{number} "{open_round.hypothesis}" in progress'
    for lost in record.state.abandoned:
        if lost.get("round") == number:
            return f'round-{number} "{lost.get("hypothesis")}" rolled back before any commit'
    new = {t: b for t, b in record.notes["rounds"].items() if base.notes["rounds"].get(t) != b}
    texts = repo.read_blobs(list(new.values()))
    for target, blob in new.items():
        note = RoundNote.from_text(texts[blob])
        if note.round == number:
            return f'round-{number} "{note.hypothesis}" {note.status} on {target[:10]}'
    return f"round-{number}"


def diverged(
    repo: Repo, sides: Sides, ours: RecordAt, theirs: RecordAt, base: RecordAt
) -> KgitError:
    """The refusal of two records that both moved since BASE: the rounds both numbered, else
    what each side wrote (no new round on the remote's side can be a record rewritten there:
    the hint then offers to publish this clone's again as well as to take the remote's)."""
    start = base.state.next_round
    both = sorted(
        set(range(start, ours.state.next_round)) & set(range(start, theirs.state.next_round))
    )
    take = (
        f"keep {sides.remote}'s record and set this clone's aside: kgit pull {sides.remote} -c "
        f"{sides.name} --take-remote (every ref of yours stays under {SALVAGE}{sides.name}/"
        "<time>/"
    )
    if both:
        what = "; ".join(
            f"here {round_words(repo, ours, base, n)}, on {sides.remote} "
            f"{round_words(repo, theirs, base, n)}"
            for n in both
        )
        return KgitError(
            f"campaign {sides.name}: this clone and {sides.remote} both recorded round(s) "
            f"{', '.join(map(str, both))} since {base.commit[:10]} ({what}); round numbers are "
            "never reused, so kgit will not merge the two records",
            hint=f'{take}; redo a hypothesis as a new round: kgit round start "..." then git '
            "cherry-pick its commit). Next time, kgit push right after kgit round start "
            "reserves the round's number",
        )
    here, there = _written(repo, base, ours), _written(repo, base, theirs)
    rewritten = theirs.state.next_round == start
    return KgitError(
        f"campaign {sides.name}: since {base.commit[:10]} this clone's record has {here} that "
        f"{sides.remote}'s lacks, and {sides.remote}'s has {there}"
        + (
            f" but no new round: {sides.remote}'s record may have been rewritten there"
            if rewritten
            else ""
        )
        + "; kgit does not merge two records",
        hint=f"compare them: git log --stat {base.commit[:10]}..refs/kgit-remotes/{sides.remote}/"
        f"kgit/{sides.name}/campaign; {take})"
        + (
            f"; or, if {sides.remote}'s is wrong, publish this clone's again: git push "
            f"--force-with-lease=refs/kgit/{sides.name}/campaign:{theirs.commit} {sides.remote} "
            f"refs/kgit/{sides.name}/campaign, then kgit push"
            if rewritten
            else ""
        ),
    )


def _written(repo: Repo, base: RecordAt, side: RecordAt) -> str:
    """`3 commits ("round-5: ACCEPTED", ...)`: what SIDE's record wrote since BASE."""
    subjects = repo.subjects(base.commit, side.commit)
    shown = ", ".join(f'"{s.split(": ", 1)[-1]}"' for s in subjects[:3])
    more = ", ..." if len(subjects) > 3 else ""
    return f"{len(subjects)} commit(s) ({shown}{more})"


def require_no_rewrite(repo: Repo, sides: Sides, ours: RecordAt, theirs: RecordAt) -> None:
    """The remote's record contains this clone's commits, but its newer commits may still undo
    what this clone recorded: a note removed, a closed round's note changed, what the baseline
    froze changed."""
    problems = []
    for kind, listing in ours.notes.items():
        gone = [t for t in listing if t not in theirs.notes[kind]]
        problems += [f"its {kind} note on {t[:10]} was removed" for t in gone]
    in_flight = {found.number for found in ours.state.open_rounds}
    changed = {
        t: b
        for t, b in ours.notes["rounds"].items()
        if theirs.notes["rounds"].get(t) not in (None, b)
    }
    texts = repo.read_blobs(list(changed.values()))
    for target, blob in changed.items():
        note = RoundNote.from_text(texts[blob])
        if note.status in FINAL and note.round not in in_flight:
            problems.append(f"round-{note.round}'s closed note on {target[:10]} was changed")
    if theirs.state.abandoned[: len(ours.state.abandoned)] != ours.state.abandoned:
        problems.append("a round rolled back before any commit was dropped from its state")
    if theirs.state.next_round < ours.state.next_round:
        problems.append("its next round number went down (round numbers would be reused)")
    problems += _baseline_changes(repo, ours, theirs)
    if problems:
        raise KgitError(
            f"{sides.remote}'s record of campaign {sides.name} rewrites what this clone "
            f"recorded: {'; '.join(problems)}",
            hint=f"nothing was taken; inspect it: git log --stat {sides.ours[sides.refs.record]}.."
            f"refs/kgit-remotes/{sides.remote}/kgit/{sides.name}/campaign; this clone's record "
            "is intact (kgit push would be refused as it is not a fast-forward there)",
        )


# What `kgit baseline` freezes in the state: nothing after it changes them (kgit/engine/lifecycle/baseline.py).
FROZEN_AT_BASELINE = (
    "base",
    "frozen_header",
    "protected",
    "representative",
    "inactive",
    "noise_floors",
    "fingerprint",
)


def _baseline_changes(repo: Repo, ours: RecordAt, theirs: RecordAt) -> list[str]:
    """What the baseline froze that the remote's record changes: the CSV header, the protected
    harness's hashes and its frozen copy, the representative shapes, the noise floors. A record
    appended with a new harness hash would let a changed harness pass as the frozen one."""
    if not ours.state.baselined:
        return []
    found = [
        f"its state's {name} (frozen at baseline) changed"
        for name in FROZEN_AT_BASELINE
        if getattr(ours.state, name) != getattr(theirs.state, name)
    ]
    harness = [repo.rev_parse(f"{side.commit}:{HARNESS_DIR}") for side in (ours, theirs)]
    if harness[0] != harness[1]:
        found.append(f"its frozen harness copy ({HARNESS_DIR}/) changed")
    mine, remote = repo.read_objects([f"{side.commit}:{MANIFEST_FILE}" for side in (ours, theirs)])
    if mine and remote and mine[0] != remote[0]:
        before, after = (manifest_from_stored(m[1].decode()) for m in (mine, remote))
        frozen = [k for k in differing_fields(before, after) if k not in REVISABLE_AFTER_BASELINE]
        if frozen:
            found.append(f"its manifest changes {', '.join(frozen)} (fixed at baseline)")
    return found


def require_readable(repo: Repo, sides: Sides, ours: RecordAt | None, theirs: RecordAt) -> None:
    """Every round note the remote's record brings (new or changed since OURS) must read as a
    round note of this campaign: one that does not would stop every view here, and one built
    to expand (YAML aliases) would hang them, and a field of the wrong type would crash them.
    One parse per new note (~0.6 ms)."""
    known = ours.notes["rounds"] if ours is not None else {}
    new = {t: b for t, b in theirs.notes["rounds"].items() if known.get(t) != b}
    texts = repo.read_blobs(list(dict.fromkeys(new.values())))
    for target, blob in sorted(new.items()):
        try:
            data = load_record(texts[blob], "round", NOTE_VERSION, "round note")
        except KgitError as exc:
            problem = exc.message
        else:
            wrong = type_problems(RoundNote, data)
            if not wrong:
                continue
            problem = "; ".join(wrong[:3])
        raise KgitError(
            f"{sides.remote}'s record of campaign {sides.name} holds a round note on "
            f"{target[:10]} that kgit cannot take: {problem}",
            hint=f"nothing was taken; see it: git cat-file blob {blob}",
        )


def check_best(repo: Repo, sides: Sides, theirs: RecordAt) -> None:
    """The remote's best line must be on a commit its record accepted (or the base), and hold
    the protected files (harness, the gate's tests) as the baseline froze them."""
    best = sides.theirs.get(sides.refs.best)
    if best is None:
        raise KgitError(
            f"{sides.remote} has campaign {sides.name}'s record but not its best line "
            f"({sides.refs.best})",
            hint="in the clone that pushed it: kgit push again",
        )
    protected = theirs.state.protected
    changed = [p for p, b in repo.path_blobs(best, list(protected)).items() if b != protected[p]]
    if changed:
        raise KgitError(
            f"{sides.remote}'s best line of campaign {sides.name} changes file(s) frozen at "
            f"baseline: {', '.join(changed)} (no verdict accepts that)",
            hint=f"nothing was taken; see it: git diff {theirs.state.base[:10]} "
            f"refs/kgit-remotes/{sides.remote}/heads/kgit/{sides.name}/best -- {changed[0]}",
        )
    if best == theirs.state.base and not theirs.state.baselined:
        return
    blob = theirs.notes["rounds"].get(best)
    note = RoundNote.from_text(repo.read_blob(blob)) if blob else None
    if note is not None and note.campaign == sides.name and note.accepted:
        return
    interrupted = (
        note is not None
        and theirs.state.open_numbered(note.round) is not None
        and sides.theirs.get(sides.refs.round_branch(note.round)) == best
        and note.decision in ACCEPTING
    )
    if interrupted:
        return  # an accept of an accepting verdict interrupted after it moved the best line
    said = f"its note says {note.status}" if note is not None else "its record has no round note"
    raise KgitError(
        f"{sides.remote}'s best line of campaign {sides.name} is at {best[:10]}, and {said}: "
        "no accepted round put it there",
        hint=f"nothing was taken; in the clone that pushed it: kgit doctor (then kgit push); "
        f"see it: git log -1 refs/kgit-remotes/{sides.remote}/heads/kgit/{sides.name}/best",
    )


def best_elsewhere(repo: Repo, sides: Sides) -> list[str]:
    """A remote whose record this clone has (or is ahead of) but whose best line is elsewhere:
    kept as it is here, and said (someone moved it there outside kgit)."""
    mine, there = sides.ours.get(sides.refs.best), sides.theirs.get(sides.refs.best)
    if mine is None or there is None or there == mine or repo.is_ancestor(there, mine):
        return []
    return [
        f"{sides.remote}'s best line is at {there[:10]}, which this clone's ({mine[:10]}) does "
        f"not lead from although it has {sides.remote}'s record: it differs, moved outside "
        "kgit there; this clone's is kept (kgit push puts it back)"
    ]
