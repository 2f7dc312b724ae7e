"""The campaign manifest: what DEFINE_TARGET collects, validated against a declared schema.

Field names follow the seed's `manifest.yaml` where it has them; kgit adds `schema_version`,
`rebuild_command`, `timeout_s`, `protected_paths`, `thresholds`, `acceptance_command` and `peaks`.
This module holds the manifest as the campaign reads it (dataclasses) and its loading; the
declared schema is kgit/records/manifest_schema.py, the checks kgit/records/manifest_checks.py.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass, field
from typing import Any

from kgit.errors import UsageError
from kgit.records.manifest_checks import manifest_problems
from kgit.records.manifest_schema import MANIFEST_VERSION, SCHEMA
from kgit.records.metrics import METRICS
from kgit.records.policies import DEFAULT_POLICY, POLICY_BEFORE_DEFAULT
from kgit.records.yamltext import load_yaml_text


@dataclass(frozen=True)
class Thresholds:
    """The seed's decision thresholds (its iteration rule 3 and noise rule)."""

    core_regression_pct: float = 5.0
    noise_band_pct: float = 2.0
    noise_min_runs: int = 3
    noise_min_mean_pct: float = 1.0
    noise_max_std_ratio: float = 0.5


@dataclass(frozen=True)
class Interleaved:
    """Settings of `decision_policy: interleaved` (kgit/engine/measuring/policies/validation.py, kgit/judge/stats.py).

    With resident harnesses (a harness built on kgit.measure) a pair is one A,B,B,A quad of
    blocks of `block_ms` per shape; with a plain harness, one A/B pair of whole passes."""

    min_pairs: int = 4
    max_pairs: int = 8
    budget_s: float = 900.0  # sampling stops here even when the verdict is still unclear
    confidence: float = 0.99
    min_effect_pct: float = 0.5  # no shape's noise floor is set below this
    calibration_pairs: int = 4  # A/A pairs at baseline
    block_ms: float = 25.0
    min_quads: int = 8
    max_quads: int = 32
    calibration_quads: int = 12
    # With workers, the A/A calibration's quads are split over this many pairs of processes,
    # each started as a validation starts its own: two processes of one kernel can differ
    # steadily (kgit/judge/stats.py, calibrate_floors), by an amount that varies from pair to
    # pair, and the floors must cover what a validation's pair may draw.
    calibration_processes: int = 3


@dataclass(frozen=True)
class Peaks:
    """The device's peaks for the physical floor (kgit/judge/floor.py): each key set here
    replaces the datasheet figure kgit knows for the fingerprint's GPU (kgit/records/devices.py);
    a GPU kgit does not know (a CPU, a new part) has a floor only through them.

    `tflops`: one figure for every precision, or one per precision (bf16, fp16, tf32, fp32, fp8,
    fp4); `gbps`: device memory bandwidth; `cache_mb`: the last-level cache (a memory-bound shape
    that fits there may read faster than memory); `margin_pct`: how far past a peak a rate may
    go before it is called impossible (clocks above the datasheet's, rounding)."""

    tflops: float | dict[str, float] | None = None
    gbps: float | None = None
    cache_mb: float | None = None
    margin_pct: float = 10.0


@dataclass(frozen=True)
class Manifest:
    target_op: str
    target_backend: str
    primary_metric: str
    target_shapes: list[dict[str, Any]]
    test_command: str
    quick_command: str
    schema_version: int = MANIFEST_VERSION
    target_lang: str = ""
    target_gpu: str = ""
    execution_mode: str = "repo-mode"
    project_skill: str | None = None
    performance_target: float | str | None = None
    kernel_source: list[str] = field(default_factory=list)
    benchmark_command: str | None = None
    acceptance_command: str | None = None
    rebuild_command: str | None = None
    representative_shapes: list[str] = field(default_factory=list)
    max_iterations: int = 50
    timeout_s: float = 1800.0
    protected_paths: list[str] = field(default_factory=list)
    decision_policy: str = DEFAULT_POLICY
    thresholds: Thresholds = field(default_factory=Thresholds)
    interleaved: Interleaved = field(default_factory=Interleaved)
    peaks: Peaks = field(default_factory=Peaks)
    # Mutants of kernel_source the gate is audited on at baseline (kgit gate audit); 0: none.
    gate_audit_mutants: int = 6
    # What the harness, the gate and the rebuild see beyond kgit's own settings: nothing of the
    # caller's shell is passed but these (kgit/engine/measuring/isolation/world.py), e.g. TRITON_INTERPRET.
    env: dict[str, str] = field(default_factory=dict)

    @property
    def shape_labels(self) -> list[str]:
        return [shape["label"] for shape in self.target_shapes]

    @property
    def policy_settings(self) -> object:
        """The decision policy's own settings: the manifest's section that bears its name
        (`interleaved:`), or None for a policy that has none (kgit/records/policies.py)."""
        return getattr(self, self.decision_policy, None)

    def shapes_for(self, labels: list[str]) -> list[dict[str, Any]]:
        wanted = set(labels)
        return [shape for shape in self.target_shapes if shape["label"] in wanted]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_stored_text(self) -> str:
        """The manifest as kgit stores it: JSON, which is also YAML (so the record's
        manifest.yaml reads as one), and which `kgit status` loads without importing yaml."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"


# What a manifest revision may change once the baseline is measured: rounds judged before and
# after it stay comparable (the same shapes, metric, harness, gate and measuring method). Any
# other field is a new campaign.
REVISABLE_AFTER_BASELINE = (
    "max_iterations",
    "performance_target",
    "thresholds",
    "acceptance_command",
)


def differing_fields(old: Manifest, new: Manifest) -> list[str]:
    """The top-level fields whose values differ between OLD and NEW, in the manifest's order."""
    before, after = old.to_dict(), new.to_dict()
    return [key for key in after if before.get(key) != after[key]]


def harness_paths(quick_command: str) -> list[str]:
    """Files the quick command names (scripts it runs): the default `protected_paths`."""
    try:
        words = shlex.split(quick_command)
    except ValueError:
        return []
    return [w for w in words if w.endswith((".py", ".sh")) and not w.startswith("-")]


def _load_yaml(text: str, source: str) -> dict[str, Any]:
    data = load_yaml_text(text, source)
    if data is None:  # comments only: an empty manifest, whose missing fields are listed
        return {}
    if not isinstance(data, dict):
        raise UsageError(
            f"{source} must be a YAML mapping of fields", hint="see templates/manifest.yaml"
        )
    version = data.get("schema_version", MANIFEST_VERSION)
    if isinstance(version, int) and version > MANIFEST_VERSION:
        raise UsageError(
            f"{source} has schema_version {version}; this kgit reads up to {MANIFEST_VERSION}",
            hint="upgrade kgit (pip install -U kgit)",
        )
    return data


def load_manifest_fields(text: str, source: str = "manifest") -> dict[str, Any]:
    """A manifest's fields as YAML gives them, not validated yet (`kgit init` asks for the
    missing ones before `parse_manifest` validates the whole)."""
    return _load_yaml(text, source) if text.strip() else {}


def _build(data: dict[str, Any]) -> Manifest:
    fields = {k: v for k, v in data.items() if k in SCHEMA["properties"]}
    fields["schema_version"] = MANIFEST_VERSION
    if isinstance(fields.get("kernel_source"), str):
        fields["kernel_source"] = [fields["kernel_source"]]
    fields["thresholds"] = Thresholds(**(fields.get("thresholds") or {}))
    fields["interleaved"] = Interleaved(**(fields.get("interleaved") or {}))
    fields["peaks"] = Peaks(**(fields.get("peaks") or {}))
    for key in ("representative_shapes", "protected_paths"):
        fields[key] = list(fields.get(key) or [])
    fields["env"] = {str(k): str(v) for k, v in (fields.get("env") or {}).items()}
    if not fields["protected_paths"]:
        fields["protected_paths"] = harness_paths(fields["quick_command"])
    return Manifest(**fields)


def parse_manifest(
    text: str, source: str = "manifest", overrides: dict[str, Any] | None = None
) -> tuple[Manifest, list[str]]:
    """Validate a manifest's YAML text (plus command-line OVERRIDES of its fields).
    Returns the manifest and warnings (a custom metric, checked only at baseline)."""
    data = _load_yaml(text, source) if text.strip() else {}
    data.update(overrides or {})
    problems = manifest_problems(data)
    if problems:
        raise UsageError(
            f"{source} is invalid:\n  " + "\n  ".join(problems),
            hint="fix the keys named above; templates/manifest.yaml documents every field",
        )
    warnings = []
    metric = data["primary_metric"]
    if metric not in METRICS:
        warnings.append(
            f"{source}: primary_metric {metric!r} is not one kgit knows: it must be a numeric "
            "column of your harness's CSV, higher is better (checked at kgit baseline)"
        )
    return _build(data), warnings


def manifest_from_stored(text: str) -> Manifest:
    """A manifest kgit stored itself: validated when it was stored, so only its version is
    checked here (an older one would be upgraded by code at this point)."""
    try:
        data = json.loads(text)
    except ValueError:
        data = _load_yaml(text, "stored manifest")
    if data.get("schema_version", MANIFEST_VERSION) > MANIFEST_VERSION:
        raise UsageError(
            f"the stored manifest has schema_version {data['schema_version']}; this kgit reads "
            f"up to {MANIFEST_VERSION}",
            hint="upgrade kgit (pip install -U kgit)",
        )
    return _build(judged_as_before(data))


def judged_as_before(data: dict[str, Any]) -> dict[str, Any]:
    """DATA, a manifest written before `interleaved` became the default (stored by kgit, or a
    seed campaign's folder), with the policy its rounds were judged by when it names none: the
    seed's rule (its baseline has no A/A calibration for the other)."""
    if data.get("decision_policy") is None:
        data["decision_policy"] = POLICY_BEFORE_DEFAULT
    return data
