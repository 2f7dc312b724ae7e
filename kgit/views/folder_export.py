"""`kgit export`: a campaign as the seed's campaign folder.

    manifest.yaml  quick_test_bench.py  logs/optimize.md  logs/performance_trend.md
    rounds/round-N/{summary.md, artifacts/benchmark.csv, kernel_snapshot/<kernel files>}

Everything is derived from the git record, and nothing host- or sha-dependent enters the
rounds' files, so `kgit import` of the folder followed by another export writes the same bytes.
Each summary.md opens with a YAML front matter block (the round's note and what its author
recorded) that `kgit import` reads back; the Markdown below it is for people.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgit.errors import UsageError
from kgit.judge.figures import Figures
from kgit.judge.monotonic import memory_bound
from kgit.records.campaign_folder import HARNESS_FILE, SUMMARY_KIND
from kgit.records.names import HARNESS_DIR
from kgit.records.notes import RoundNote
from kgit.records.reader import RecordReader
from kgit.records.review_results import CampaignExported
from kgit.views.campaign_report import trend_blocks
from kgit.views.document import Document, to_markdown
from kgit.views.numbers import num, signed
from kgit.views.record import RoundView, figures_of, load_rounds
from kgit.views.summary import peak_pcts, summary_blocks, summary_data
from kgit.views.trend import rule9, trend_rows

# Note keys that name this repository's objects or this campaign: left out of summary.md.
LOCAL_NOTE_KEYS = ("kgit", "campaign", "parent")


def _yaml(data: Any) -> str:
    import yaml

    text: str = yaml.safe_dump(
        data, sort_keys=False, allow_unicode=True, width=100, default_flow_style=None
    )
    return text


def folder_manifest(campaign: RecordReader) -> dict[str, Any]:
    m, state = campaign.manifest, campaign.state
    sources = list(m.kernel_source)
    return {
        "target_op": m.target_op,
        "target_backend": m.target_backend,
        "target_lang": m.target_lang,
        "target_gpu": m.target_gpu,
        "execution_mode": m.execution_mode,
        "project_skill": m.project_skill,
        "performance_target": m.performance_target,
        "primary_metric": m.primary_metric,
        "target_shapes": m.target_shapes,
        "kernel_source": sources[0] if len(sources) == 1 else sources,
        "test_command": m.test_command,
        "benchmark_command": m.benchmark_command,
        "quick_command": m.quick_command,
        "representative_shapes": list(state.representative),
        "git_commit": state.base,
        "git_branch": campaign.refs.best.removeprefix("refs/heads/"),
        "max_iterations": m.max_iterations,
        "created": state.created,
        # What the seed's manifest has no field for; seed readers ignore it.
        "kgit": {
            "campaign": campaign.name,
            "schema_version": m.schema_version,
            "timeout_s": m.timeout_s,
            "protected_paths": list(m.protected_paths),
            "rebuild_command": m.rebuild_command,
            "acceptance_command": m.acceptance_command,
            "decision_policy": m.decision_policy,
            "thresholds": vars(m.thresholds),
            "peaks": {k: v for k, v in vars(m.peaks).items() if v is not None},
            "finished": state.finished,
        },
    }


def _front_matter(view: RoundView, campaign: RecordReader) -> dict[str, Any]:
    if view.note is None:
        lost = next(a for a in campaign.state.abandoned if a["round"] == view.number)
        return {
            "kgit": SUMMARY_KIND,
            "round": view.number,
            "status": view.status,
            "abandoned": lost,
        }
    import yaml

    note = yaml.safe_load(view.note.to_text())
    return {
        "kgit": SUMMARY_KIND,
        "round": view.number,
        "status": view.status,
        "note": {k: v for k, v in note.items() if k not in LOCAL_NOTE_KEYS},
        "recorded": dict(view.recorded),
    }


def summary_file(view: RoundView, campaign: RecordReader, figures: Figures) -> str:
    summary = summary_data(view, figures, peak_pcts(campaign, view))
    body = to_markdown(Document(summary_blocks(summary, 1, with_commit=False)))
    return f"---\n{_yaml(_front_matter(view, campaign))}---\n\n{body}"


def optimize_log(campaign: RecordReader, views: list[RoundView]) -> str:
    lines = [f"# Optimization log: {campaign.name}", ""]
    for view in views:
        note = view.note
        lines.append(f"## round-{view.number} — {view.status} ({view.decided_at or 'undated'})")
        lines.append("")
        lines.append(f"- Hypothesis: {view.hypothesis}")
        if note is not None and note.aggregate is not None:
            lines.append(
                f"- Result: {note.metric} {num(note.aggregate)} ({signed(note.delta_vs_best_pct)} "
                f"vs best, {signed(note.delta_vs_baseline_pct)} vs baseline)"
            )
        lines += [f"- Verdict: {reason}" for reason in (note.reasons if note else [])]
        if view.rollback_reason:
            lines.append(f"- Rollback: {view.rollback_reason}")
        lines.append("")
    return "\n".join(lines)


def trend_file(campaign: RecordReader, views: list[RoundView]) -> str:
    metric = campaign.manifest.primary_metric
    rows, rule = trend_rows(views, metric), rule9(views, metric, campaign.best_line())
    return to_markdown(Document(trend_blocks(metric, memory_bound(metric), rows, rule)))


def _harness_files(campaign: RecordReader) -> dict[str, bytes]:
    record = campaign.record_files()
    prefix = f"{HARNESS_DIR}/"
    copies = {p.removeprefix(prefix): d for p, d in record.items() if p.startswith(prefix)}
    ordered = [p for p in campaign.manifest.protected_paths if p in copies]
    ordered += [p for p in copies if p not in ordered]
    files = {HARNESS_FILE: copies[ordered[0]]} if ordered else {}
    files.update({f"{HARNESS_DIR}/{p}": copies[p] for p in ordered[1:]})
    return files


def _snapshots(campaign: RecordReader, views: list[RoundView]) -> dict[str, bytes]:
    kernel = list(campaign.manifest.kernel_source)
    wanted = [(v, path) for v in views if v.commit for path in kernel]
    found = campaign.read_objects([f"{v.commit}:{path}" for v, path in wanted])
    return {
        f"rounds/round-{v.number}/kernel_snapshot/{path}": obj[1]
        for (v, path), obj in zip(wanted, found, strict=True)
        if obj is not None
    }


def export_files(campaign: RecordReader) -> dict[str, bytes]:
    views = load_rounds(campaign, diff_paths=tuple(campaign.manifest.kernel_source))
    for view in views:  # render from the note as stored in summary.md (floats to 6 digits)
        if view.note is not None:
            view.note = RoundNote.from_text(view.note.to_text())
    figures = figures_of(views)
    files = {"manifest.yaml": _yaml(folder_manifest(campaign)).encode()}
    files.update(_harness_files(campaign))
    files["logs/optimize.md"] = optimize_log(campaign, views).encode()
    files["logs/performance_trend.md"] = trend_file(campaign, views).encode()
    for view in views:
        folder = f"rounds/round-{view.number}"
        files[f"{folder}/summary.md"] = summary_file(view, campaign, figures).encode()
        if view.csv is not None:
            files[f"{folder}/artifacts/benchmark.csv"] = view.csv
    files.update(_snapshots(campaign, views))
    return files


def export_campaign(campaign: RecordReader, folder: Path) -> CampaignExported:
    files = export_files(campaign)  # read the whole record first: nothing is written on an error
    try:
        if folder.is_dir() and any(folder.iterdir()):
            raise UsageError(f"{folder} is not empty", hint="export into a new or empty folder")
        folder.mkdir(parents=True, exist_ok=True)
        for relative, data in files.items():
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    except OSError as exc:
        raise UsageError(
            f"cannot write the export into {folder}: {exc.strerror or exc}",
            hint="export into a new or empty folder you can write to",
        ) from None
    rounds = sum(1 for p in files if p.endswith("/summary.md"))
    return CampaignExported(campaign.name, str(folder), rounds, tuple(sorted(files)))
