"""`kgit import`: a seed campaign folder (as `kgit export` writes it) becomes a kgit campaign of
the repository it belongs to, with its history.

The baseline's kernel snapshot is applied on HEAD (no new commit when it matches), accepted
rounds as commits on the new best line, rolled-back rounds as commits kept under
refs/kgit/<campaign>/rounds/N. Notes come from each summary.md's front matter and the byte-exact
benchmark.csv. Commits are built with plumbing in a private index: the work tree is not touched.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

from kgit.engine.setup import configure_git, install_hooks
from kgit.engine.store import HARNESS_DIR, Campaign, list_campaigns
from kgit.errors import KgitError, UsageError
from kgit.gitdoor import Repo
from kgit.records.manifest import Manifest, harness_paths, parse_manifest
from kgit.records.names import CampaignRefs, validate_campaign_name
from kgit.records.notes import ACCEPTING, BASELINE, RoundNote
from kgit.views.record import RECORD_KEYS
from kgit.views.seed_export import HARNESS_FILE, SUMMARY_KIND

SEED_ONLY = ("git_commit", "git_branch", "created", "kgit")
_ROUND_DIR = re.compile(r"round-([0-9]+)")


def _load_yaml(text: str, source: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UsageError(f"{source} is not valid YAML: {exc}") from None


def read_manifest(folder: Path) -> tuple[Manifest, dict[str, Any]]:
    path = folder / "manifest.yaml"
    if not path.is_file():
        raise UsageError(f"{folder} has no manifest.yaml", hint="is it a seed campaign folder?")
    data = _load_yaml(path.read_text(), str(path))
    if not isinstance(data, dict):
        raise UsageError(f"{path} is not a mapping of fields")
    extra = {k: data.pop(k) for k in SEED_ONLY if k in data}
    kgit = extra.get("kgit") or {}
    for key in ("timeout_s", "protected_paths", "rebuild_command", "acceptance_command"):
        if kgit.get(key) is not None:
            data[key] = kgit[key]
    for key in ("decision_policy", "thresholds"):
        if kgit.get(key):
            data[key] = kgit[key]
    data = {k: v for k, v in data.items() if v is not None}
    manifest, _ = parse_manifest("", str(path), data)
    return manifest, extra


def read_round(folder: Path) -> dict[str, Any]:
    path = folder / "summary.md"
    text = path.read_text() if path.is_file() else ""
    if not text.startswith("---\n") or "\n---\n" not in text[3:]:
        raise UsageError(
            f"{path} has no YAML front matter",
            hint="kgit import reads folders written by kgit export",
        )
    front = _load_yaml(text[4 : text.index("\n---\n", 3) + 1], str(path))
    if not isinstance(front, dict) or front.get("kgit") != SUMMARY_KIND:
        raise UsageError(f"{path}: the front matter is not a kgit round summary")
    snapshot = folder / "kernel_snapshot"
    front["snapshot"] = {
        p.relative_to(snapshot).as_posix(): p.read_bytes()
        for p in sorted(snapshot.rglob("*"))
        if p.is_file()
    }
    bench = folder / "artifacts" / "benchmark.csv"
    front["csv"] = bench.read_bytes() if bench.is_file() else None
    return front


def read_rounds(folder: Path) -> list[dict[str, Any]]:
    found = []
    for child in (folder / "rounds").iterdir() if (folder / "rounds").is_dir() else []:
        match = _ROUND_DIR.fullmatch(child.name)
        if match and child.is_dir():
            found.append((int(match[1]), read_round(child)))
    rounds = [front for _, front in sorted(found, key=lambda item: item[0])]
    if not rounds or rounds[0].get("status") != BASELINE:
        raise UsageError(
            f"{folder}: round-1 must be the baseline", hint="rounds/round-1/summary.md"
        )
    return rounds


def commit_message(manifest: Manifest, name: str, front: dict[str, Any]) -> str:
    note = front["note"]
    hypothesis = " ".join(str(note["hypothesis"]).split())
    lines = [
        f"[optimize] {manifest.target_op} {manifest.target_backend} round-{front['round']}: "
        f"{hypothesis}",
        "",
        f"Hypothesis: {hypothesis}",
        f"Result: {front['status']}",
    ]
    recorded = front.get("recorded") or {}
    lines += [f"{RECORD_KEYS[k]}: {' '.join(str(v).split())}" for k, v in recorded.items()]
    lines += [
        "",
        f"Kgit-Campaign: {name}",
        f"Kgit-Round: {front['round']}",
        f"Kgit-Hypothesis: {hypothesis}",
    ]
    return "\n".join(lines) + "\n"


class _Importer:
    def __init__(self, repo: Repo, manifest: Manifest, name: str) -> None:
        self.repo, self.manifest, self.name = repo, manifest, name
        self.refs = CampaignRefs(name)

    def apply(self, parent: str, front: dict[str, Any]) -> str:
        """A commit of PARENT with the round's kernel snapshot (PARENT itself when unchanged,
        for the baseline)."""
        files: dict[str, bytes | None] = {p: None for p in self.manifest.kernel_source}
        files.update(front["snapshot"])
        tree = self.repo.tree_with(parent, files)
        if front["status"] == BASELINE and tree == self.repo.tree_of(parent):
            return parent
        return self.repo.commit_tree(
            tree, [parent], commit_message(self.manifest, self.name, front)
        )

    def record(
        self, campaign: Campaign, commit: str, front: dict[str, Any], parent: str | None
    ) -> None:
        data = {**front["note"], "campaign": self.name, "parent": parent}
        campaign.write_round(commit, RoundNote.from_dict(data))
        if front["csv"] is not None:
            campaign.write_bench(commit, front["csv"])
        self.repo.update_ref(self.refs.kept(front["round"]), commit, None, "kgit: imported round")


def _frozen_header(data: bytes | None) -> list[str] | None:
    if not data:
        return None
    return next(csv.reader(io.StringIO(data.decode("utf-8-sig"))), None)


def _harness(folder: Path, manifest: Manifest) -> dict[str, bytes]:
    protected = manifest.protected_paths or harness_paths(manifest.quick_command)
    files = {}
    for index, path in enumerate(protected):
        source = folder / HARNESS_FILE if index == 0 else folder / HARNESS_DIR / path
        if source.is_file():
            files[path] = source.read_bytes()
    return files


def import_campaign(repo: Repo, folder: Path, name: str) -> dict[str, Any]:
    validate_campaign_name(name)
    manifest, extra = read_manifest(folder)
    rounds = read_rounds(folder)
    head = repo.rev_parse("HEAD")
    if head is None:
        raise KgitError("this repository has no commit yet", hint="import into the kernel's repo")
    importer = _Importer(repo, manifest, name)
    with repo.write_lock():
        if name in list_campaigns(repo) or repo.rev_parse(importer.refs.best):
            raise UsageError(f"campaign {name!r} already exists", hint="kgit import DIR --name NEW")
        base = importer.apply(head, rounds[0])
        campaign = Campaign.create(repo, name, manifest, base)
        best, abandoned = base, []
        for front in rounds:
            if "abandoned" in front:
                abandoned.append(front["abandoned"])
                continue
            commit = base if front is rounds[0] else importer.apply(best, front)
            importer.record(campaign, commit, front, None if commit == base else best)
            if front["status"] in ACCEPTING:
                best = commit
        repo.update_ref(importer.refs.best, best, None, f"kgit: {name} imported")
        _finish_state(campaign, folder, manifest, extra, rounds, abandoned)
    configure_git(repo)
    install_hooks(repo)
    return {
        "campaign": name,
        "base": base,
        "best": importer.refs.best,
        "best_commit": best,
        "rounds": len(rounds),
    }


def _finish_state(
    campaign: Campaign,
    folder: Path,
    manifest: Manifest,
    extra: dict[str, Any],
    rounds: list[dict[str, Any]],
    abandoned: list[dict[str, Any]],
) -> None:
    baseline = rounds[0]
    harness = _harness(folder, manifest)
    state = campaign.state
    state.created = str(extra.get("created") or state.created)
    state.frozen_header = _frozen_header(baseline["csv"])
    state.protected = dict(campaign.repo.path_blobs(state.base, list(harness)))
    state.representative = list(manifest.representative_shapes)
    state.inactive = [
        s["label"] for s in baseline["note"].get("shapes", []) if s["check"] != "PASS"
    ]
    state.abandoned = abandoned
    state.next_round = max(front["round"] for front in rounds) + 1
    state.finished = bool((extra.get("kgit") or {}).get("finished"))
    campaign.save(
        "imported from a seed campaign folder",
        {f"{HARNESS_DIR}/{p}": d for p, d in harness.items()},
    )
