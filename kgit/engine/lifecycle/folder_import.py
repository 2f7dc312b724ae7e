"""`kgit import`: a seed campaign folder (as `kgit export` writes it) becomes a kgit campaign of
the repository it belongs to, with its history.

The baseline's kernel snapshot is applied on HEAD (no new commit when it matches), accepted
rounds as commits on the new best line, rolled-back rounds as commits kept under
refs/kgit/<campaign>/rounds/N. Notes come from each summary.md's front matter and the byte-exact
benchmark.csv. Commits are built with plumbing in a private index: the work tree is not touched.

Import is all or nothing: every file is read and every note checked before the first write, no
symbolic link is followed (a link in a snapshot would commit the file it points at), and a
failure while writing puts the campaign's refs back as they were.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kgit.engine.campaign import Campaign, list_campaigns
from kgit.engine.guards.hooks import configure_git, install_hooks
from kgit.engine.guards.trust import record_trust
from kgit.errors import KgitError, UsageError
from kgit.gitdoor import Repo
from kgit.records.campaign_folder import HARNESS_FILE, SUMMARY_KIND
from kgit.records.manifest import Manifest, harness_paths, judged_as_before, parse_manifest
from kgit.records.message import RECORD_KEYS
from kgit.records.names import HARNESS_DIR, CampaignRefs, validate_campaign_name
from kgit.records.notes import ACCEPTING, BASELINE, RoundNote, type_problems
from kgit.records.review_results import CampaignImported
from kgit.records.yamltext import load_yaml_text

SEED_ONLY = ("git_commit", "git_branch", "created", "kgit")
_ROUND_DIR = re.compile(r"round-([0-9]+)")


_LINK_HINT = (
    "replace the link by a copy of the file it points at, or delete it, then import again "
    "(kgit import never follows links: it would commit whatever they point at)"
)


def _refuse_links(path: Path, folder: Path) -> None:
    """Refuse PATH when it, or a folder between FOLDER and it, is a symbolic link."""
    current = folder
    for part in path.relative_to(folder).parts:
        current = current / part
        if current.is_symlink():
            raise UsageError(f"{current} is a symbolic link", hint=_LINK_HINT)


def _read_bytes(path: Path, folder: Path) -> bytes | None:
    """The bytes of the regular file PATH inside FOLDER, None when there is none; never
    through a link."""
    _refuse_links(path, folder)
    if not path.is_file():
        return None
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc}", hint="check its permissions") from None


def _read_text(path: Path, folder: Path) -> str | None:
    data = _read_bytes(path, folder)
    try:
        return None if data is None else data.decode()
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text", hint="kgit export writes UTF-8") from None


def _snapshot(snapshot: Path, folder: Path) -> dict[str, bytes]:
    """Every regular file under a round's kernel_snapshot/, by its path inside it."""
    _refuse_links(snapshot, folder)
    files: dict[str, bytes] = {}
    for top, dirs, names in os.walk(snapshot):  # os.walk does not descend into linked folders
        for entry in sorted([*dirs, *names]):
            path = Path(top) / entry
            if path.is_symlink():
                raise UsageError(f"{path} is a symbolic link", hint=_LINK_HINT)
            if entry in names and not path.is_file():
                raise UsageError(
                    f"{path} is not a regular file", hint="remove it from the snapshot"
                )
        for entry in names:
            path = Path(top) / entry
            files[path.relative_to(snapshot).as_posix()] = _read_bytes(path, folder) or b""
    return dict(sorted(files.items()))


_MANIFEST_HINT = "kgit export writes the seed's manifest.yaml; compare with templates/manifest.yaml"


def read_manifest(folder: Path) -> tuple[Manifest, dict[str, Any]]:
    path = folder / "manifest.yaml"
    text = _read_text(path, folder)
    if text is None:
        raise UsageError(
            f"{folder} has no manifest.yaml",
            hint="is it a campaign folder of the original layout, as kgit export writes it?",
        )
    data = load_yaml_text(text, str(path))
    if not isinstance(data, dict):
        raise UsageError(f"{path} is not a mapping of fields", hint=_MANIFEST_HINT)
    extra = {k: data.pop(k) for k in SEED_ONLY if k in data}
    kgit = extra.get("kgit") or {}
    if not isinstance(kgit, dict):
        raise UsageError(f"{path}: its kgit section is not a mapping", hint=_MANIFEST_HINT)
    for key in ("timeout_s", "protected_paths", "rebuild_command", "acceptance_command"):
        if kgit.get(key) is not None:
            data[key] = kgit[key]
    for key in ("decision_policy", "thresholds", "peaks"):
        if kgit.get(key):
            data[key] = kgit[key]
    data = {k: v for k, v in judged_as_before(data).items() if v is not None}
    manifest, _ = parse_manifest("", str(path), data)
    return manifest, extra


_FRONT_HINT = "kgit import reads folders written by kgit export; compare with another round's"


def read_round(folder: Path, top: Path, number: int, metric: str) -> dict[str, Any]:
    """Round NUMBER's front matter, snapshot and CSV from its FOLDER inside the campaign
    folder TOP, checked as far as the writes and later views will need it (its note measures
    the campaign's METRIC)."""
    path = folder / "summary.md"
    text = _read_text(path, top) or ""
    if not text.startswith("---\n") or "\n---\n" not in text[3:]:
        raise UsageError(f"{path} has no YAML front matter", hint=_FRONT_HINT)
    front = load_yaml_text(text[4 : text.index("\n---\n", 3) + 1], str(path))
    if not isinstance(front, dict) or front.get("kgit") != SUMMARY_KIND:
        raise UsageError(f"{path}: the front matter is not a kgit round summary", hint=_FRONT_HINT)
    _check_front(front, number, path, metric)
    front["snapshot"] = _snapshot(folder / "kernel_snapshot", top)
    front["csv"] = _read_bytes(folder / "artifacts" / "benchmark.csv", top)
    return front


def _check_front(front: dict[str, Any], number: int, path: Path, metric: str) -> None:
    """Refuse a front matter that the writes would trip on, before anything is written."""
    problem = None
    if front.get("round") != number:
        problem = f"round is {front.get('round')!r}, not {number} as the folder's name says"
    elif not isinstance(front.get("status"), str):
        problem = "status is missing"
    elif "abandoned" in front:
        lost = front["abandoned"]
        if not isinstance(lost, dict) or lost.get("round") != number:
            problem = f"abandoned needs round: {number}, hypothesis and at"
        elif not all(isinstance(lost.get(key), str) for key in ("hypothesis", "at")):
            problem = "abandoned needs its hypothesis and at (text)"
    elif not isinstance(front.get("note"), dict):
        problem = "note is missing or not a mapping"
    elif not isinstance(front.get("recorded") or {}, dict):
        problem = "recorded is not a mapping"
    else:
        problem = _note_problem(front["note"], metric)
    if problem:
        raise UsageError(f"{path}: the front matter is invalid: {problem}", hint=_FRONT_HINT)


def _note_problem(note: dict[str, Any], metric: str) -> str | None:
    problems = type_problems(RoundNote, note)
    if problems:
        return "note." + problems[0]
    if note.get("metric") != metric:
        return (
            f"note.metric: {note.get('metric')!r} is not the manifest's primary_metric {metric!r}"
        )
    try:
        RoundNote.from_dict({**note, "campaign": "check", "parent": None})
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        return f"note: {exc}"
    return None


def read_rounds(folder: Path, metric: str) -> list[dict[str, Any]]:
    found = []
    rounds_dir = folder / "rounds"
    _refuse_links(rounds_dir, folder)
    for child in sorted(rounds_dir.iterdir()) if rounds_dir.is_dir() else []:
        match = _ROUND_DIR.fullmatch(child.name)
        if match:
            _refuse_links(child, folder)
        if match and child.is_dir():
            found.append((int(match[1]), read_round(child, folder, int(match[1]), metric)))
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
        notes = [campaign.round_note(commit, RoundNote.from_dict(data))]
        if front["csv"] is not None:
            notes.append(campaign.bench_note(commit, front["csv"]))
        kept = self.refs.kept(front["round"])
        campaign.save(f"round-{front['round']} imported", notes=notes, moves=[(kept, commit, None)])


def _frozen_header(data: bytes | None) -> list[str] | None:
    if not data:
        return None
    return next(csv.reader(io.StringIO(data.decode("utf-8-sig"))), None)


def _harness(folder: Path, manifest: Manifest) -> dict[str, bytes]:
    protected = manifest.protected_paths or harness_paths(manifest.quick_command)
    files = {}
    for index, path in enumerate(protected):
        source = folder / HARNESS_FILE if index == 0 else folder / HARNESS_DIR / path
        data = _read_bytes(source, folder)
        if data is not None:
            files[path] = data
    # The other frozen files (the gate's tests, since kgit freezes what test_command names).
    extra = folder / HARNESS_DIR
    if extra.is_dir() and not extra.is_symlink():
        for source in sorted(extra.rglob("*")):
            path = source.relative_to(extra).as_posix()
            if path in files or not source.is_file() or source.is_symlink():
                continue
            data = _read_bytes(source, folder)
            if data is not None:
                files[path] = data
    return files


def import_campaign(repo: Repo, folder: Path, name: str) -> CampaignImported:
    validate_campaign_name(name)
    manifest, extra = read_manifest(folder)
    rounds = read_rounds(folder, manifest.primary_metric)
    harness = _harness(folder, manifest)
    head = repo.rev_parse("HEAD")
    if head is None:
        raise KgitError("this repository has no commit yet", hint="import into the kernel's repo")
    importer = _Importer(repo, manifest, name)
    with repo.write_lock(), _all_or_nothing(repo, importer.refs):
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
        _finish_state(campaign, harness, manifest, extra, rounds, abandoned)
    record_trust(campaign)  # the user chose this folder's manifest by importing it
    configure_git(repo)
    install_hooks(repo)
    return CampaignImported(name, base, importer.refs.best, best, len(rounds))


def _finish_state(
    campaign: Campaign,
    harness: dict[str, bytes],
    manifest: Manifest,
    extra: dict[str, Any],
    rounds: list[dict[str, Any]],
    abandoned: list[dict[str, Any]],
) -> None:
    baseline = rounds[0]
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


@contextmanager
def _all_or_nothing(repo: Repo, refs: CampaignRefs) -> Iterator[None]:
    """On any failure inside, put the campaign's refs and notes refs back as they were (the
    objects written meanwhile are unreachable and left to git gc), so that importing again
    does not find a half campaign that "already exists"."""
    prefixes = [refs.record.rsplit("/", 1)[0] + "/", refs.best.rsplit("/", 1)[0] + "/",
                refs.round_notes.rsplit("/", 1)[0] + "/"]  # fmt: skip
    before = {ref: sha for prefix in prefixes for ref, sha in repo.refs(prefix).items()}
    try:
        yield
    except BaseException:
        after = {ref: sha for prefix in prefixes for ref, sha in repo.refs(prefix).items()}
        for ref, sha in after.items():
            if ref not in before:
                repo.delete_ref(ref, sha)
            elif before[ref] != sha:
                repo.update_ref(ref, before[ref], sha, "kgit: import undone")
        raise
