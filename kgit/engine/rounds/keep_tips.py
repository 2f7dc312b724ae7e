"""Recording and reading historical tips (kgit/records/tips.py has the format and the ref layout).

Every write is one new commit on the key's chain, made under the repository's write lock and
moved compare-and-swap, so two campaigns recording lessons at once lose none.
"""

from __future__ import annotations

from kgit.engine.campaign import Campaign, now
from kgit.errors import KgitError, UsageError
from kgit.gitdoor import Repo
from kgit.progress import Say
from kgit.records.notes import ROLLED_BACK
from kgit.records.tips import Tip, check_tip_text, tips_ref


def campaign_tips_ref(campaign: Campaign) -> str:
    manifest = campaign.manifest
    return tips_ref(manifest.target_gpu, manifest.target_op, manifest.target_backend)


def add_tip(
    campaign: Campaign,
    context: str | None,
    signal: str | None,
    takeaway: str | None,
    applicability: str | None,
    round_number: int | None = None,
) -> Tip:
    """Record a lesson keyed by the campaign's GPU, op and backend; with ROUND_NUMBER, tied to
    that round (its status and commit). Callable from `round accept`/`rollback` after the round
    is closed: `add_tip(campaign, ..., round_number=n)`."""
    text = check_tip_text(
        {
            "context": context,
            "signal": signal,
            "takeaway": takeaway,
            "applicability": applicability,
        }
    )
    outcome, commit = _round_origin(campaign, round_number)
    manifest = campaign.manifest
    tip = Tip(
        context=text["context"],
        signal=text["signal"],
        takeaway=text["takeaway"],
        applicability=text["applicability"],
        gpu=manifest.target_gpu,
        op=manifest.target_op,
        backend=manifest.target_backend,
        recorded_at=now(),
        campaign=campaign.name,
        round=round_number,
        outcome=outcome,
        commit=commit,
    )
    _append(campaign.repo, campaign_tips_ref(campaign), tip)
    return tip


def _round_origin(campaign: Campaign, number: int | None) -> tuple[str | None, str | None]:
    """(status, commit) of round NUMBER: from its note, or from the state for a round rolled
    back before any commit; an open round has no outcome yet."""
    if number is None:
        return None, None
    commit = campaign.kept_rounds().get(number)
    if commit is not None:
        note = campaign.read_round(commit)
        return (note.status if note else None), commit
    if any(lost["round"] == number for lost in campaign.state.abandoned):
        return ROLLED_BACK, None
    if campaign.state.open_numbered(number) is not None:
        return None, None
    raise UsageError(
        f"round-{number} has no record in campaign {campaign.name}",
        hint="kgit log lists the recorded rounds",
    )


def _append(repo: Repo, ref: str, tip: Tip) -> None:
    with repo.write_lock():
        old = repo.rev_parse(ref)
        files = repo.read_tree_files(old) if old else {}
        files[tip.file_name()] = tip.to_text().encode()
        where = f"{tip.campaign} round-{tip.round}" if tip.round else (tip.campaign or "")
        message = f"kgit tip ({where}): {tip.takeaway[:60]}\n"
        commit = repo.commit_tree(repo.make_tree(files), [old] if old else [], message)
        repo.update_ref(ref, commit, old, "kgit: tip recorded")


def read_tips(repo: Repo, ref: str) -> list[Tip]:
    """Every tip under REF, oldest first (file names start with the time)."""
    if repo.rev_parse(ref) is None:
        return []
    files = repo.read_tree_files(ref)
    return [Tip.from_text(files[name]) for name in sorted(files)]


def tips_for(campaign: Campaign) -> list[Tip]:
    """The tips that apply to CAMPAIGN: recorded on the same GPU, op and backend, by any
    campaign of this repository (or fetched from another). The report's "directions that did
    not work" are those with `outcome == ROLLED BACK` (see `lessons_from_rollbacks`)."""
    return read_tips(campaign.repo, campaign_tips_ref(campaign))


def lessons_from_rollbacks(campaign: Campaign) -> list[Tip]:
    """This campaign's lessons from rolled-back rounds."""
    return [
        tip
        for tip in tips_for(campaign)
        if tip.campaign == campaign.name and tip.outcome == ROLLED_BACK
    ]


def print_tips(campaign: Campaign, say: Say) -> None:
    """Say the lessons earlier campaigns left for this target (for `kgit baseline`). A tips ref
    that cannot be read is reported and never stops the caller."""
    try:
        tips = [tip for tip in tips_for(campaign) if tip.campaign != campaign.name]
    except KgitError as exc:
        say(f"warning: cannot read tips: {exc.message}")
        return
    if not tips:
        return
    say(f"{len(tips)} lesson(s) from earlier campaigns on this target (kgit tips):")
    for tip in tips:
        say(f"  - {render_tip_line(tip)}")


def render_tip_line(tip: Tip) -> str:
    origin = tip.campaign or "?"
    if tip.round:
        origin += f" round-{tip.round}"
    if tip.outcome:
        origin += f", {tip.outcome}"
    return f"{tip.takeaway} [{origin}; when: {tip.applicability}]"
