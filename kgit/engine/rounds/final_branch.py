"""The branch to merge (`kgit/<campaign>/final`, step 4 of final acceptance): one commit per
accepted round, in the order the best line took them, its commits squashed, built with
commit-tree from the round commits' trees, each message carrying the round's hypothesis and
result (from its note) and the round's author."""

from __future__ import annotations

from dataclasses import dataclass

from kgit.engine.campaign import Campaign
from kgit.errors import KgitError
from kgit.judge.figures import Figure, Figures
from kgit.records.notes import ACCEPTING, RoundNote, in_line_order


def final_branch(campaign: Campaign) -> str:
    return f"refs/heads/kgit/{campaign.name}/final"


@dataclass(frozen=True)
class FinalCommit:
    """One commit of the final branch: an accepted round, its commits squashed."""

    round: int
    source: str  # the round's commit on the best line
    tree: str
    squashed: int  # how many best-line commits it stands for
    message: str
    author: tuple[str, str, str]  # name, email, date (raw) of the round's last commit


def final_commits(
    campaign: Campaign, best: str, rounds: list[tuple[str, RoundNote]], line: list[str]
) -> list[FinalCommit]:
    """The final branch's commits, one per accepted round on the best line (LINE: its
    first-parent history from BEST, newest first), in the order the line took them."""
    repo, base = campaign.repo, campaign.state.base
    on_line = [
        (commit, (commit, note))
        for commit, note in rounds
        if note.status in ACCEPTING and commit != base and repo.is_ancestor(commit, best)
    ]
    # In the order the best line took them: with rounds in parallel, round-3 may come first.
    accepted = in_line_order(on_line, line)
    messages = repo.commit_messages([c for c, _ in accepted])
    authors = repo.commit_authors([c for c, _ in accepted])
    result, previous = [], base
    figures = Figures(rounds)
    for commit, note in accepted:
        subjects = repo.subjects(previous, commit, first_parent=True)[::-1]
        changes = (figures.vs_best(note), figures.vs_baseline(note))
        message = _round_message(campaign, note, messages[commit], subjects, commit, changes)
        result.append(
            FinalCommit(
                note.round, commit, repo.tree_of(commit), len(subjects), message, authors[commit]
            )
        )
        previous = commit
    if previous != best:
        raise KgitError(
            f"the best line's tip {best[:10]} is not an accepted round's commit",
            hint="kgit log shows the lineage; the best line moves only by kgit round accept",
        )
    return result


def _round_message(
    campaign: Campaign,
    note: RoundNote,
    original: str,
    subjects: list[str],
    commit: str,
    changes: tuple[Figure | None, Figure | None],
) -> str:
    manifest = campaign.manifest
    prefix = f"[optimize] {manifest.target_op} {manifest.target_backend} round-{note.round}: "
    first = original.strip().splitlines()[0] if original.strip() else ""
    if len(subjects) == 1 and first:
        subject = first if first.startswith("[optimize]") else prefix + first
    else:
        subject = prefix + note.hypothesis
    body = [f"Hypothesis: {note.hypothesis}", f"Result: {result_line(note, changes)}"]
    if len(subjects) > 1:
        body += ["", f"Squashes {len(subjects)} commits:", *(f"  - {s}" for s in subjects)]
    trailers = [
        f"Kgit-Campaign: {campaign.name}",
        f"Kgit-Round: {note.round}",
        f"Kgit-Round-Commit: {commit}",
    ]
    return "\n".join([subject, "", *body, "", *trailers]) + "\n"


def result_line(note: RoundNote, changes: tuple[Figure | None, Figure | None]) -> str:
    """`ACCEPTED: Forward TFLOPS 110 (+10.000% vs best, +10.000% vs baseline; quick validation)`,
    CHANGES the round's vs best and vs baseline (kgit/judge/figures.py), as every view has them."""
    parts = [
        f"{found.pct:+.3f}% {words}"
        for found, words in zip(changes, ("vs best", "vs baseline"), strict=True)
        if found is not None
    ]
    value = f" {note.aggregate:.4g}" if note.aggregate is not None else ""
    return (
        f"{note.status}: {note.metric}{value} ({', '.join(parts)}; {note.level} validation)"
        if parts
        else f"{note.status}: {note.metric}{value} ({note.level} validation)"
    )


def write_final_branch(campaign: Campaign, commits: list[FinalCommit], best: str) -> str:
    """Commit the final branch (CAS on its ref) and return its tip. Authors are the rounds'
    authors; the committer is kgit, so the branch works in a repository with no identity."""
    repo, tip = campaign.repo, campaign.state.base
    for final in commits:
        tip = repo.commit_tree(final.tree, [tip], final.message, author=final.author)
    if repo.tree_of(tip) != repo.tree_of(best):
        raise KgitError("internal: the final branch's tree differs from the best line's")
    ref = final_branch(campaign)
    repo.update_ref(ref, tip, repo.rev_parse(ref), f"kgit: {campaign.name} final")
    return tip
