"""`kgit campaign delete NAME`: everything kgit keeps for one campaign, removed from this clone.

Its record, its kept rounds, its notes refs, its branches (kgit/NAME/best, kgit/NAME/round-N),
this clone's copies of a remote's (refs/kgit-remotes/...), kgit's work trees and caches under
.git/kgit, and the trust approval in the repository's config. The commits themselves stay in the
object store until `git gc` finds them unreachable; a remote keeps whatever was pushed there.
"""

from __future__ import annotations

import re

from kgit.engine.campaign import list_campaigns
from kgit.engine.guards.audit_background import forget
from kgit.engine.guards.trust import config_key
from kgit.engine.measuring.sides.trees import campaign_folder, checkouts_in, remove_trees
from kgit.engine.remote import TRACKING
from kgit.errors import KgitError, UsageError
from kgit.gitdoor import Repo
from kgit.records.names import validate_campaign_name
from kgit.records.upkeep_results import CampaignDeleted

# kgit's cache files of one campaign (kgit/engine/campaign.py, kgit/engine/lineage.py).
CACHES = ("round-notes-{name}.json", "round-notes-{name}.light.json", "lineage-{name}.json")


def campaign_refs(repo: Repo, name: str) -> dict[str, str]:
    """Every ref of campaign NAME in this clone, ref -> sha."""
    found: dict[str, str] = {}
    for prefix in (f"refs/kgit/{name}/", f"refs/notes/kgit/{name}/", f"refs/heads/kgit/{name}/"):
        found.update(repo.refs(prefix))
    tracked = re.compile(
        rf"{re.escape(TRACKING)}[^/]+/(kgit|notes/kgit|heads/kgit)/{re.escape(name)}/"
    )
    found.update({ref: sha for ref, sha in repo.refs(TRACKING).items() if tracked.match(ref)})
    return found


def delete_campaign(repo: Repo, name: str) -> CampaignDeleted:
    validate_campaign_name(name)
    refs = campaign_refs(repo, name)
    if name not in list_campaigns(repo) and not refs:
        raise UsageError(
            f"no campaign named {name!r} in this repository",
            hint="kgit status --all lists the campaigns",
        )
    branches = {ref for ref in refs if ref.startswith(f"refs/heads/kgit/{name}/")}
    elsewhere = (repo.checked_out_branches() & branches) - {repo.current_branch()}
    if elsewhere:
        raise KgitError(
            f"{', '.join(sorted(elsewhere))} is checked out in another work tree",
            hint="switch that work tree to another branch (git switch), then delete again",
        )
    detached = repo.current_branch() in branches
    if detached:
        if repo.dirty_paths():
            raise KgitError(
                f"{repo.current_branch()} is checked out with uncommitted changes",
                hint="commit or discard them (or switch to another branch), then delete again",
            )
        repo.detach()  # the files stay; HEAD no longer names the branch
    with repo.write_lock():
        repo.delete_refs(refs, f"kgit: campaign {name} deleted")
    audit_stopped = forget(repo, name)  # before the trees: its gate runs may be in one
    trees = _remove_work_trees(repo, name)
    for cache in CACHES:
        (repo.kgit_dir() / "cache" / cache.format(name=name)).unlink(missing_ok=True)
    repo.config_unset_local(config_key(name))
    return CampaignDeleted(name, tuple(sorted(refs)), tuple(trees), detached, audit_stopped)


def _remove_work_trees(repo: Repo, name: str) -> list[str]:
    folder = campaign_folder(repo, name)
    trees = [str(tree) for tree in checkouts_in(folder)]
    remove_trees(repo, folder, whole=True)
    return trees
