"""Work trees that follow a branch kgit moves. The best line is typically checked out in the
user's main work tree while rounds are accepted from others (a round's own work tree, a worker's,
a pull run there): git moves the ref and leaves that tree's index and files at the old commit,
so `git status` there shows the old kernel as changes against the new tip (the trap
`receive.denyCurrentBranch` guards against on a push). A tree that was clean at the old commit
gets the new one's files; one with local changes is left as it is, and said so."""

from __future__ import annotations

from kgit.errors import GitError
from kgit.gitdoor import Repo, open_repo
from kgit.progress import Say
from kgit.records.round_results import TreeFollowed


def other_trees_on(repo: Repo, branch: str) -> list[Repo]:
    """The work trees of REPO, other than this one, that have BRANCH (a full ref) checked out
    (one whose folder is gone is not a tree to follow)."""
    here = repo.root.resolve()
    return [
        open_repo(path)
        for path, checked_out in repo.checkouts()
        if checked_out == branch and path.resolve() != here and path.is_dir()
    ]


def follow_branch(repo: Repo, branch: str, old: str, new: str, say: Say) -> list[TreeFollowed]:
    """BRANCH (a full ref) was just moved from OLD to NEW: each other work tree that has it
    checked out and held OLD's files exactly gets NEW's; one with local changes (or where the
    move would overwrite an untracked file) keeps its files, and SAY tells how to bring it along.
    One entry per tree: `path`, `followed`, `files_at` (the commit whose files it holds, local
    changes aside)."""
    trees = []
    for tree in other_trees_on(repo, branch):
        followed = tree.clean_at(old) and _moved(tree, old, new)
        if not followed:
            say(
                f"warning: {tree.root} has {branch.removeprefix('refs/heads/')} checked out with "
                f"local changes: its files stay at {old[:10]}, the branch moved to {new[:10]}\n"
                f"hint: there: git diff {old[:10]} > FILE keeps your changes; git reset --hard "
                "takes the new tip's files; git apply --3way FILE puts your changes back"
            )
        trees.append(TreeFollowed(str(tree.root), followed, new if followed else old))
    return trees


def _moved(tree: Repo, old: str, new: str) -> bool:
    try:
        tree.move_work_tree(old, new)
    except GitError:  # a file git will not overwrite: read-tree changed nothing
        return False
    return True
