"""The merge rules of `kgit pull` for what two clones may both have written: notes refs and tips
chains. Neither rule drops anything. A merged tips chain's commit has both sides' commits as
parents, so either history stays reachable (and the next push is a fast-forward); a notes ref
holds one commit without parents (kgit/gitdoor/git_notes.py), and its merge holds the union of both
sides' notes, which the next push checks by content (kgit/engine/sharing/push.py).

Notes: kgit reads its notes from the campaign record (kgit/engine/campaign.py), and a notes ref is
their published copy for `git log --notes`. So after a pull a notes ref holds what the record
holds, whatever either notes ref said: the record's note on every target it recorded, this
clone's other notes (a copy `notes.rewriteRef` made, a note of the user's), and the remote's
copies of kgit's notes. A remote note that is none of those (a note its record never held, or
another note on a recorded target: a forged or hand-edited one) is not taken, and is reported.

Tips: one YAML file per tip, named after its content (kgit/records/tips.py), so the union of two
chains' trees loses nothing; a name on both sides with other contents is reported and ours kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgit.gitdoor import Repo


@dataclass
class Merged:
    """The commit a ref should move to (None: it stays), and what was not taken."""

    new: str | None
    not_taken: dict[str, str] = field(default_factory=dict)  # target or file -> their blob


def _settle(
    repo: Repo, ours: str | None, theirs: str | None, contents: dict[str, str], declined: bool
) -> str | None:
    """The notes commit for CONTENTS, or None when OURS already is it; THEIRS itself when it
    holds exactly CONTENTS. A new one has no parent, as every notes commit of kgit's
    (kgit/gitdoor/git_notes.py), unless DECLINED (THEIRS holds notes not taken): THEIRS is then its
    parent, so that the next push, which replaces them, is a fast-forward."""
    if ours is not None and not declined and repo.notes_at(ours) == contents:
        return None
    if theirs is not None and repo.notes_at(theirs) == contents:
        return theirs
    if ours is None and not contents and not declined:
        return None
    parents = [theirs] if declined and theirs is not None else []
    return repo.notes_tree_commit(contents, parents, "Notes merged by kgit pull\n")


def merge_notes(
    repo: Repo, ours: str | None, theirs: str | None, recorded: dict[str, str]
) -> Merged:
    """A notes ref of one kind after a pull: OURS and THEIRS are the two notes commits (None:
    no such ref), RECORDED target -> blob what the campaign record (as taken) holds."""
    have = repo.notes_at(ours) if ours else {}
    their_notes = repo.notes_at(theirs) if theirs else {}
    kgit_blobs = set(recorded.values())
    copies = {t: b for t, b in their_notes.items() if t not in recorded and b in kgit_blobs}
    contents = {**copies, **have, **recorded}
    not_taken = {t: b for t, b in their_notes.items() if contents.get(t) != b}
    replaced = ours is not None and theirs is not None and repo.is_ancestor(theirs, ours)
    declined = bool(not_taken) and not replaced  # a pull before already set them aside
    return Merged(_settle(repo, ours, theirs, contents, declined), not_taken)


def merge_tips(repo: Repo, ours: str | None, theirs: str) -> Merged:
    """A tips chain after a pull: THEIRS taken, fast-forwarded or united with OURS."""
    if ours == theirs or (ours is not None and repo.is_ancestor(theirs, ours)):
        return Merged(None)
    if ours is None or repo.is_ancestor(ours, theirs):
        return Merged(theirs)
    mine = {path: sha for path, (_mode, sha) in repo.ls_tree(ours).items()}
    their_files = {path: sha for path, (_mode, sha) in repo.ls_tree(theirs).items()}
    clashes = {p: s for p, s in their_files.items() if p in mine and mine[p] != s}
    files = {**their_files, **mine}
    tree = repo.tree_with(ours, {p: s for p, s in files.items() if p not in mine})
    new = repo.commit_tree(tree, [ours, theirs], "kgit pull: tips of both clones\n")
    return Merged(new, clashes)
