"""A pass of the quick harness: one measurement, checked against the frozen schema; and what
must hold for two measurements to be compared (the fingerprint, the device)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgit.engine.campaign import Campaign
from kgit.engine.measuring.device.pyenv import command_facts
from kgit.engine.measuring.harness.baseline_snrs import precision_checked
from kgit.engine.measuring.isolation.sealed import harness_world, sealed, world_facts
from kgit.engine.measuring.isolation.world import env_changes, unpassed_hint
from kgit.engine.user_commands import HARNESS_SOME_FAIL, HarnessRun, parse_fingerprint, run_harness
from kgit.errors import KgitError, SchemaError
from kgit.judge.scoring import Score, score
from kgit.progress import Voice, phase
from kgit.records.protocol import (
    MEMORY_SHARE_ENV,
    changed_since_written,
    out_of_memory_reports,
    written_digest,
)
from kgit.records.schema import BenchTable, parse_bench_csv


class HarnessError(KgitError):
    """The harness broke its contract: crash, hang, odd exit, missing or unreadable CSV."""


@dataclass(frozen=True)
class Measurement:
    csv: bytes
    table: BenchTable
    score: Score
    seconds: float
    tail: str
    fingerprint: dict[str, str]


def measure(
    campaign: Campaign,
    shapes: list[dict[str, Any]],
    frozen: tuple[str, ...] | None,
    voice: Voice,
    *,
    tree: Path | None = None,
    role: str = "",
) -> Measurement:
    """Run the harness in TREE (default: the work tree) and read its CSV strictly."""
    manifest = campaign.manifest
    cwd = tree or campaign.repo.root
    voice.say(f"harness{role}: {len(shapes)} shape(s): {', '.join(s['label'] for s in shapes)}")
    what = f"campaign {campaign.name}: a harness pass{role}"
    world = harness_world(campaign, cwd)
    try:
        with sealed(campaign, [tree] if tree else [], what, voice.say), phase("harness passes"):
            run = run_harness(
                manifest.quick_command,
                shapes,
                cwd,
                manifest.timeout_s,
                tether=campaign.repo.common_dir,
                echo=voice.echo,
                env=world.env,
            )
    finally:
        world.close()
    labels = [s["label"] for s in shapes]
    result = read_run(campaign, run, labels, frozen, side=role.strip(), world=world_facts(world))
    voice.say(
        f"harness: done in {run.result.seconds:.1f} s, aggregate {result.score.aggregate:.4g}"
        + (f", FAIL: {', '.join(result.score.failing)}" if result.score.failing else "")
    )
    return result


def read_run(
    campaign: Campaign,
    run: HarnessRun,
    labels: list[str],
    frozen: tuple[str, ...] | None,
    *,
    digest: bool = True,
    side: str = "",
    world: dict[str, str] | None = None,
) -> Measurement:
    """A harness run read under the contract: its exit, the frozen schema, exactly LABELS, and
    an exit code that agrees with the Check column; with DIGEST, a CSV unchanged since the
    harness printed its digest (a resident harness's block reply carries its own, checked by the caller).
    A FAIL that the harness said was an out-of-memory is an error of SIDE's memory, never the
    kernel's FAIL. WORLD: what the fingerprint records of the process's world (sealed.world_facts).
    """
    tail = run.result.tail
    csv = _ran(run, campaign)
    if digest:
        _require_its_digest(run, csv)
    try:
        table = parse_bench_csv(csv, campaign.manifest.primary_metric, frozen)
    except SchemaError as exc:
        raise HarnessError(
            f"validation ERROR: {exc.message}",
            hint=exc.hint,
            details="\n".join(filter(None, [exc.details, "harness output:", tail[-4000:]])),
        ) from None
    _require_shapes(table.labels, labels, tail)
    result = score(table, campaign.manifest.primary_metric, labels)
    _require_exit_agrees(run.result.returncode, result.failing, tail)
    require_memory(result.failing, tail, side)
    result = precision_checked(campaign, table, result)
    fingerprint = {
        **parse_fingerprint(tail),
        **command_facts(campaign.manifest.quick_command),
        **(world or {}),
    }
    return Measurement(csv, table, result, run.result.seconds, tail, fingerprint)


def _ran(run: HarnessRun, campaign: Campaign) -> bytes:
    """RUN's CSV, or the error of a harness that could not run or wrote none (naming the
    caller's variables kgit did not pass, which the harness may have needed)."""
    if run.status == "ok" and run.csv is not None:
        return run.csv
    unpassed = unpassed_hint(campaign.manifest.env)
    if run.status == "unavailable":
        raise KgitError(
            "the harness cannot run on this machine (it exited 2)",
            hint="; ".join(
                filter(
                    None, ["run this step where the target GPU is; nothing was recorded", unpassed]
                )
            ),
            details=run.result.tail[-4000:],
        )
    if run.status == "error" or run.csv is None:
        raise HarnessError(
            f"validation ERROR: {run.problem}",
            hint="; ".join(filter(None, ["see the harness output above", unpassed])),
            details=run.result.tail[-4000:],
        )
    return run.csv


def _require_its_digest(run: HarnessRun, csv: bytes) -> None:
    """The CSV is the one the harness wrote: one digest printed, and it still matches."""
    tail = run.result.tail
    digests = run.result.digests if run.result.digests is not None else (written_digest(tail),)
    printed = [d for d in digests if d is not None]
    if len(printed) > 1:
        raise HarnessError(
            f"validation ERROR: the pass printed {len(printed)} CSV digests: the harness prints "
            "one, right after writing its CSV; another line in its process forged one",
            hint="look for code that prints or runs at exit in the change (kgit show N lists "
            "findings)",
            details=tail[-4000:],
        )
    if changed_since_written(csv, printed[0] if printed else None):
        raise HarnessError(
            "validation ERROR: the CSV changed after the harness wrote it (its digest, printed "
            "when written, no longer matches): something in the harness's process rewrote it",
            hint="look for code that runs at exit in the change (kgit show N lists findings)",
            details=tail[-4000:],
        )


def _require_shapes(found: list[str], labels: list[str], tail: str) -> None:
    extra = sorted(set(found) - set(labels))
    missing = [label for label in labels if label not in found]
    if extra or missing:
        raise HarnessError(
            "validation ERROR: the CSV's shapes are not the ones asked for"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unexpected {', '.join(extra)}" if extra else ""),
            hint="the harness must measure exactly the shapes passed with --shapes",
            details=tail[-4000:],
        )


def _require_exit_agrees(returncode: int | None, failing: list[str], tail: str) -> None:
    some_fail = returncode == HARNESS_SOME_FAIL
    if some_fail != bool(failing):
        said = "some shape FAILed" if some_fail else "every shape PASSed"
        raise HarnessError(
            f"validation ERROR: the harness exited {returncode} ({said}) but its CSV "
            + (f"has FAIL rows ({', '.join(failing)})" if failing else "has none")
            + ": exit and Check disagree",
            hint="the contract: exit 0 when every shape passes, 1 when some shape fails",
            details=tail[-4000:],
        )


_SIDES = {"A": "side A (the reference)", "B": "side B (the candidate)"}


def require_memory(failing: list[str], output: str, side: str) -> None:
    """Raise when a FAILING shape ran out of device memory, as the harness's OUTPUT says
    (kgit/records/protocol.py): which side, which shape, what it asked for, and the knob."""
    reports = out_of_memory_reports(output)
    short = [label for label in failing if label in reports]
    if not short:
        return
    report = reports[short[0]]
    who = _SIDES.get(side, f"the harness {side}".strip())
    raise HarnessError(
        f"out of memory: {who} ran out of device memory on {', '.join(short)}: "
        + _memory_words(report),
        hint=f"this is the machine's memory, not the kernel: set {MEMORY_SHARE_ENV} lower than "
        f"{report.get('share', 0.25):g} (each measuring side's share of the card) to shrink "
        "both sides' input pools, free the card of other processes (nvidia-smi), or leave "
        "the shape out of target_shapes; nothing was recorded",
        details=output[-4000:],
    )


def _memory_words(report: dict[str, Any]) -> str:
    def gib(key: str) -> str:
        value = report.get(key)
        return f"{value / 1024**3:.2f} GiB" if isinstance(value, (int, float)) else "?"

    asked = (
        f"it asked for {gib('asked_bytes')}"
        if report.get("asked_bytes")
        else "an allocation was refused"
    )
    if "limit_bytes" not in report:
        return asked
    return (
        f"{asked} while it held {gib('allocated_bytes')} of the {gib('limit_bytes')} it plans "
        f"for ({report.get('share', '?')} of the card's {gib('total_bytes')}; "
        f"{gib('free_bytes')} free on the card)"
    )


# What must match for two measurements to be compared; clocks are recorded but vary by design.
# python_startup: a digest of the interpreter's start-up files (kgit/engine/measuring/device/pyenv.py);
# environment and kgit_measuring: the process's world (kgit/engine/measuring/isolation/world.py).
FINGERPRINT_KEYS = ("gpu", "driver", "cuda", "hip", "torch", "triton", "python_startup",
                    "kgit_measuring", "environment")  # fmt: skip


def check_fingerprint(baseline: dict[str, str], now: dict[str, str]) -> None:
    """Refuse to compare across environments: that is a new baseline epoch, not a round."""
    changed = []
    for key in FINGERPRINT_KEYS:
        if key not in baseline or baseline[key] == now.get(key):
            continue
        if key == "environment":
            changed += [f"variable {c}" for c in env_changes(baseline[key], now.get(key, "{}"))]
        elif key == "kgit_measuring":
            changed.append(f"kgit's measuring code {baseline[key]} -> {now.get(key, '?')}")
        else:
            changed.append(f"{key} {baseline[key]} -> {now.get(key, '?')}")
    if changed:
        raise KgitError(
            "the environment changed since the baseline: " + "; ".join(changed),
            hint="measurements from another GPU, driver or library version are not comparable: "
            "validate on the baseline's environment, or start a new campaign from the best "
            "line here (kgit init NAME --manifest FILE): its baseline is this environment's",
        )


def _device(fingerprint: dict[str, str]) -> str:
    return f"{fingerprint['gpu_uuid']} (index {fingerprint.get('gpu_index', '?')})"


def device_reasons(
    now: dict[str, str], baseline: dict[str, str], best: list[dict[str, str]], stored: bool
) -> list[str]:
    """What a verdict must say when NOW's device is not the one its figures come from: the
    baseline's (every "vs baseline"), and, when the policy judges against the best line's STORED
    values (the seed's), those (the verdict itself). Same model only: check_fingerprint refuses
    another model. The interleaved policy times both sides in one validation, on one device."""
    here = now.get("gpu_uuid")
    if not here:
        return []
    reasons = []
    if stored:
        others = sorted({fp["gpu_uuid"] for fp in best if fp.get("gpu_uuid", here) != here})
        if others:
            reasons.append(
                f"devices differ: measured on {_device(now)}, compared with best-line values "
                f"measured on {', '.join(others)}"
            )
    if baseline.get("gpu_uuid", here) != here:
        reasons.append(
            f"devices differ: vs baseline compares {_device(now)} with the baseline's "
            f"{_device(baseline)}"
        )
    return reasons
