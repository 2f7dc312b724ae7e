"""Which campaigns may run their commands here: `kgit trust`.

A campaign's manifest names shell commands (test_command, quick_command, rebuild_command,
acceptance_command, benchmark_command) that kgit runs: the commit hook, `baseline`, `round
validate`, `round accept` (it may gate), `finish`. A campaign record fetched from another clone
carries its manifest, and git itself refuses to run hooks it received, for the same reason. So
kgit runs a manifest's commands only when this repository's own config approves that exact
manifest: `kgit.<campaign>.trust` holds the SHA-256 of the manifest's bytes as stored in the
record. Git never transfers a repository's config; `kgit init` and `kgit import` approve what the
user just defined, `kgit trust` approves a campaign that arrived any other way after showing its
commands, and a manifest revision (`kgit manifest edit`, or fetched) that changes a command needs
approval again; a revision that keeps every command keeps the approval.

This guards against records that arrive from elsewhere. A process that can write this
repository's config (an agent running as the user) can approve on the user's behalf, as it can
install a hook; kgit cannot tell the two apart and does not try.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kgit.engine.campaign import Campaign, list_campaigns
from kgit.errors import KgitError
from kgit.gitdoor import Repo
from kgit.records.names import MANIFEST_FILE

if TYPE_CHECKING:  # built only by `kgit trust`: not on every command's path
    from kgit.records.upkeep_results import CampaignTrust

# The manifest fields whose values kgit runs through the shell, in the order they run.
COMMAND_FIELDS = (
    "rebuild_command",
    "test_command",
    "quick_command",
    "acceptance_command",
    "benchmark_command",
)


def config_key(campaign: str) -> str:
    # `kgit.<name>.trust`: the campaign name is the config subsection, which may hold any
    # character a campaign name can (a variable name could not hold '_' or '.').
    return f"kgit.{campaign}.trust"


def digest(campaign: Campaign) -> str:
    return hashlib.sha256(campaign.manifest_blob).hexdigest()


@dataclass(frozen=True)
class Trust:
    """Whether CAMPAIGN's manifest is approved here, and what was approved before if not."""

    campaign: str
    digest: str  # of the manifest in the record now
    approved: str | None  # the digest this repository's config approves, if any

    @property
    def trusted(self) -> bool:
        return self.approved == self.digest


def trust_of(campaign: Campaign) -> Trust:
    """A manifest revised without changing a command (max_iterations, thresholds...) keeps the
    approval of the revision before it; one whose commands changed needs `kgit trust` again."""
    approved, now = campaign.repo.config_local(config_key(campaign.name)), digest(campaign)
    if approved is not None and approved != now:
        fields = changed_fields(campaign, approved)
        if fields is not None and not set(fields) & set(COMMAND_FIELDS):
            approved = now
    return Trust(campaign.name, now, approved)


def record_trust(campaign: Campaign) -> None:
    """Approve CAMPAIGN's manifest as it is in the record now (the user defined or reviewed it)."""
    campaign.repo.config_set_local(config_key(campaign.name), digest(campaign))


def commands(campaign: Campaign) -> dict[str, str]:
    """The manifest's commands that kgit would run, field -> command line."""
    manifest = campaign.manifest.to_dict()
    return {key: manifest[key] for key in COMMAND_FIELDS if manifest.get(key)}


def changed_fields(campaign: Campaign, approved: str) -> list[str] | None:
    """The manifest fields that differ from the revision with digest APPROVED in the record's
    history; None when no revision there has it (a manifest approved in another campaign)."""
    repo, record = campaign.repo, campaign.record_sha
    revisions = repo.commits_touching(record, MANIFEST_FILE)
    found = repo.read_objects([f"{sha}:{MANIFEST_FILE}" for sha in revisions])
    for entry in found:
        if entry and hashlib.sha256(entry[1]).hexdigest() == approved:
            before: dict[str, Any] = json.loads(entry[1])
            now = campaign.manifest.to_dict()
            return sorted(k for k in {*before, *now} if before.get(k) != now.get(k))
    return None


def require_trusted(campaign: Campaign, action: str) -> None:
    """Refuse ACTION (it would run the manifest's commands) unless the manifest is approved."""
    trust = trust_of(campaign)
    if trust.trusted:
        return
    raise untrusted_error(campaign, trust, action)


def untrusted_error(campaign: Campaign, trust: Trust, action: str) -> KgitError:
    run = f"kgit trust --campaign {campaign.name}"
    if trust.approved is None:
        why = (
            f"campaign {campaign.name}'s commands are not trusted in this repository (its record "
            "was not created here: fetched, or copied from another clone)"
        )
    else:
        fields = changed_fields(campaign, trust.approved)
        changed = f" ({', '.join(fields)})" if fields else ""
        why = f"campaign {campaign.name}'s manifest changed since you trusted it{changed}"
    return KgitError(
        f"cannot {action}: {why}",
        hint=f"{run} shows the commands it would run and asks you to approve them",
    )


def untrusted_campaigns(repo: Repo) -> list[str]:
    """The campaigns of REPO whose manifest is not approved here."""
    return [
        name for name in list_campaigns(repo) if not trust_of(Campaign.load(repo, name)).trusted
    ]


def trust_data(campaign: Campaign) -> CampaignTrust:
    """What `kgit trust` shows before it asks (and prints with --json)."""
    from kgit.records.upkeep_results import CampaignTrust

    trust = trust_of(campaign)
    fields = (
        changed_fields(campaign, trust.approved) if trust.approved and not trust.trusted else None
    )
    return CampaignTrust(
        campaign=campaign.name,
        manifest_sha256=trust.digest,
        record=campaign.record_sha,
        trusted=trust.trusted,
        previously_approved=trust.approved,
        changed_since_approved=tuple(fields) if fields is not None else None,
        commands=commands(campaign),
        config_key=config_key(campaign.name),
    )


def render_trust(data: CampaignTrust) -> str:
    lines = [
        f"campaign {data.campaign}: manifest sha256 {data.manifest_sha256[:16]}... in "
        f"record {data.record[:10]}"
    ]
    if data.changed_since_approved:
        lines.append(f"changed: {', '.join(data.changed_since_approved)} (since you trusted it)")
    lines.append("commands kgit runs for it (through the shell, in this repository):")
    lines += [f"  {field}: {shown(command)}" for field, command in data.commands.items()]
    return "\n".join(lines)


def shown(command: str) -> str:
    """COMMAND as the terminal must show it to be approved: a fetched manifest is not validated,
    and a newline, a carriage return or an escape sequence in it could hide what runs behind a
    harmless-looking line. Anything not printable is shown escaped."""
    if command.isprintable():
        return command
    return command.encode("unicode_escape").decode("ascii") + "   (escaped: control characters)"
