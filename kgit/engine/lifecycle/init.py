"""`kgit init`: a campaign's record, its best line, the approval of its commands, git's config
and the commit gate's hooks."""

from __future__ import annotations

from kgit.engine.campaign import Campaign, list_campaigns
from kgit.engine.guards.hooks import configure_git, install_hooks
from kgit.engine.guards.trust import record_trust
from kgit.errors import KgitError, UsageError
from kgit.gitdoor import Repo
from kgit.records.campaign_results import CampaignCreated
from kgit.records.manifest import Manifest
from kgit.records.names import CampaignRefs, validate_campaign_name


def init_campaign(repo: Repo, name: str, manifest: Manifest) -> CampaignCreated:
    validate_campaign_name(name)
    refs = CampaignRefs(name)
    base = repo.rev_parse("HEAD")
    if base is None:
        raise KgitError(
            "this repository has no commit yet", hint="commit the kernel and its tests first"
        )
    missing = [
        p for p, blob in repo.path_blobs(base, manifest.protected_paths).items() if blob is None
    ]
    if missing:
        raise UsageError(
            f"protected path(s) not committed at HEAD: {', '.join(missing)}",
            hint="commit the harness first (it is frozen at baseline), or set protected_paths",
        )
    with repo.write_lock():
        if name in list_campaigns(repo) or repo.rev_parse(refs.best):
            raise UsageError(f"campaign {name!r} already exists", hint=f"kgit status -c {name}")
        campaign = Campaign.create(repo, name, manifest, base)
        repo.update_ref(refs.best, base, None, f"kgit: {name} best line")
    record_trust(campaign)  # the user just defined these commands
    configure_git(repo)
    hooks = install_hooks(repo)
    return CampaignCreated(name, base, refs.best, tuple(hooks))
