"""`kgit manifest edit`: a manifest revised in the campaign record, and only as far as the rounds
already judged stay comparable.

Before the baseline nothing has been measured: any field may change (the same checks as `kgit
init`). After it, a revision may change only REVISABLE_AFTER_BASELINE (max_iterations,
performance_target, thresholds, acceptance_command); shapes, metric, harness, gate or measuring
method are a new campaign. Each revision is a record commit that changes manifest.yaml, so `git
log refs/kgit/<campaign>/campaign -- manifest.yaml` lists them. Trust follows the commands: a
revision that leaves every command as it was keeps the approval (kgit/engine/guards/trust.py), one that
changes a command needs `kgit trust` again.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kgit.engine.campaign import Campaign
from kgit.engine.guards.trust import COMMAND_FIELDS, record_trust, trust_of
from kgit.errors import KgitError, UsageError
from kgit.records.manifest import (
    REVISABLE_AFTER_BASELINE,
    Manifest,
    differing_fields,
    load_manifest_fields,
    parse_manifest,
)
from kgit.records.names import MANIFEST_FILE
from kgit.records.upkeep_results import ManifestRevised


def revisions(campaign: Campaign) -> int:
    """How many revisions of the manifest the record holds (1: as `kgit init` wrote it)."""
    return len(campaign.repo.commits_touching(campaign.record_sha, MANIFEST_FILE))


def editable_text(campaign: Campaign) -> str:
    """The manifest as the editor shows it: YAML, with what may change said on top."""
    import yaml

    allowed = (
        "any field (nothing is measured yet)"
        if not campaign.state.baselined
        else ", ".join(REVISABLE_AFTER_BASELINE) + " (the baseline is measured)"
    )
    body = yaml.safe_dump(campaign.manifest.to_dict(), sort_keys=False, allow_unicode=True)
    return (
        f"# campaign {campaign.name}: manifest revision {revisions(campaign)}\n"
        f"# may change now: {allowed}\n"
        "# save and quit to record a new revision; an unchanged file records nothing\n" + body
    )


def edit_manifest(campaign: Campaign, text: str, source: str) -> ManifestRevised:
    """Record TEXT (a whole manifest) as CAMPAIGN's next manifest revision."""
    old = campaign.manifest
    # A whole manifest that names no policy keeps the campaign's: the default changed once
    # (seed -> interleaved), and a file written for a seed campaign must not switch it.
    fields = load_manifest_fields(text, source)
    fields.setdefault("decision_policy", old.decision_policy)
    new, warnings = parse_manifest("", source, fields)
    changed = differing_fields(old, new)
    result = ManifestRevised(
        campaign=campaign.name,
        changed={key: {"from": _value(old, key), "to": _value(new, key)} for key in changed},
        warnings=tuple(warnings),
        revision=revisions(campaign),
        recorded=False,
        needs_trust=False,
    )
    if not changed:
        return result
    _require_comparable(campaign, changed)
    if not campaign.state.baselined:
        _require_committed(campaign, new)
    trusted = trust_of(campaign).trusted
    repo = campaign.repo
    with repo.write_lock():
        current = campaign.reload()
        if current.manifest_blob != campaign.manifest_blob:
            raise KgitError(
                f"campaign {campaign.name}'s manifest was revised while you edited it",
                hint="kgit manifest edit again (it shows the latest revision)",
            )
        if current.state.baselined != campaign.state.baselined:
            _require_comparable(current, changed)
        number = revisions(current) + 1
        stored = new.to_stored_text().encode()
        current.save(
            f"manifest revision {number}: {', '.join(changed)}", extra_files={MANIFEST_FILE: stored}
        )
        current.manifest, current.manifest_blob = new, stored
    commands = [key for key in changed if key in COMMAND_FIELDS]
    if trusted and not commands:
        record_trust(current)  # the same commands the user approved: the approval carries over
    needs_trust = not trust_of(current).trusted
    return replace(
        result, revision=number, recorded=True, record=current.record_sha, needs_trust=needs_trust
    )


def _value(manifest: Manifest, key: str) -> Any:
    return manifest.to_dict().get(key)


def _require_comparable(campaign: Campaign, changed: list[str]) -> None:
    """After the baseline, refuse a revision that would judge later rounds on other terms."""
    if not campaign.state.baselined:
        return
    frozen = [key for key in changed if key not in REVISABLE_AFTER_BASELINE]
    if frozen:
        raise UsageError(
            f"campaign {campaign.name} has its baseline: {', '.join(frozen)} cannot change "
            "(rounds measured before and after would not be comparable); only "
            f"{', '.join(REVISABLE_AFTER_BASELINE)} may",
            hint=f"start a new campaign with the new manifest (kgit init NEW_NAME -m FILE), "
            f"which measures its own baseline; kgit campaign delete {campaign.name} removes "
            "this one",
        )


def _require_committed(campaign: Campaign, manifest: Manifest) -> None:
    """The protected files are frozen from the best line at baseline: they must be there."""
    repo = campaign.repo
    tip = campaign.best_tip()
    missing = [p for p, blob in repo.path_blobs(tip, manifest.protected_paths).items() if not blob]
    if missing:
        raise UsageError(
            f"protected path(s) not committed on the best line: {', '.join(missing)}",
            hint="commit the harness on the best line first, or set protected_paths",
        )
