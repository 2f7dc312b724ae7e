"""The campaign manifest: what DEFINE_TARGET collects, validated against a declared schema.

Field names follow the seed's `manifest.yaml` where it has them; kgit adds `schema_version`,
`rebuild_command`, `timeout_s`, `protected_paths`, `thresholds`, `acceptance_command` and `peaks`.
"""

from __future__ import annotations

import difflib
import json
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath
from typing import Any

from kgit.errors import UsageError
from kgit.records.yamltext import load_yaml_text

MANIFEST_VERSION = 1

# The metrics kgit knows how to aggregate. Any other column of the frozen CSV may be named
# (a "custom" metric, higher is better): see README, "Metrics".
KNOWN_METRICS = ("Forward TFLOPS", "Combined Step TFLOPS", "Forward GB/s", "Backward GB/s")

MAX_ITERATIONS_LIMIT = 120  # the seed: max_iterations must stay below 120
MAX_AUDIT_MUTANTS = 50  # each mutant is one run of the gate

# The dtype names of a shape (kgit.measure.shapes maps them to torch dtypes; a test keeps the two
# in step). Checked at `kgit init`, case-insensitively, so `fp23` fails before any test runs.
DTYPE_NAMES = ("bf16", "bfloat16", "fp16", "float16", "half", "fp32", "float32", "float")

# Keys of the user's own (notes, tooling): accepted, never read, not kept in the stored manifest.
USER_KEY_PREFIX = "x-"

_SHAPE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["label"],
    "properties": {
        "label": {"type": "string", "minLength": 1, "pattern": r"^[^,\r\n]+$"},
        "B": {"type": "integer", "minimum": 1},
        "M": {"type": "integer", "minimum": 1},
        "N": {"type": "integer", "minimum": 1},
        "K": {"type": "integer", "minimum": 1},
        "dtype": {"type": "string"},
    },
}

_THRESHOLDS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "core_regression_pct": {"type": "number", "exclusiveMinimum": 0, "maximum": 100},
        "noise_band_pct": {"type": "number", "minimum": 0, "maximum": 100},
        "noise_min_runs": {"type": "integer", "minimum": 1, "maximum": 50},
        "noise_min_mean_pct": {"type": "number", "minimum": 0, "maximum": 100},
        "noise_max_std_ratio": {"type": "number", "exclusiveMinimum": 0},
    },
}

_INTERLEAVED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "min_pairs": {"type": "integer", "minimum": 2, "maximum": 100},
        "max_pairs": {"type": "integer", "minimum": 2, "maximum": 200},
        "budget_s": {"type": "number", "exclusiveMinimum": 0},
        "confidence": {"type": "number", "exclusiveMinimum": 0.5, "exclusiveMaximum": 1},
        "min_effect_pct": {"type": "number", "minimum": 0, "maximum": 100},
        "calibration_pairs": {"type": "integer", "minimum": 2, "maximum": 100},
        "block_ms": {"type": "number", "minimum": 1, "maximum": 1000},
        "min_quads": {"type": "integer", "minimum": 3, "maximum": 200},
        "max_quads": {"type": "integer", "minimum": 3, "maximum": 500},
        "calibration_quads": {"type": "integer", "minimum": 3, "maximum": 200},
        "calibration_processes": {"type": "integer", "minimum": 1, "maximum": 10},
    },
}

# Precisions a `peaks.tflops` mapping may name (kgit/judge/floor.py maps shape dtypes onto them).
PRECISIONS = ("bf16", "fp16", "tf32", "fp32", "fp8", "fp4")

_PEAKS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "tflops": {
            "anyOf": [
                {"type": "number", "exclusiveMinimum": 0},
                {
                    "type": "object",
                    "minProperties": 1,
                    "propertyNames": {"enum": list(PRECISIONS)},
                    "additionalProperties": {"type": "number", "exclusiveMinimum": 0},
                },
            ]
        },
        "gbps": {"type": "number", "exclusiveMinimum": 0},
        "cache_mb": {"type": "number", "minimum": 0},
        "margin_pct": {"type": "number", "minimum": 0, "maximum": 1000},
    },
}

_STRING_LIST = {"type": "array", "items": {"type": "string", "minLength": 1}}
_COMMAND = {"type": "string", "minLength": 1}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "target_op",
        "target_backend",
        "primary_metric",
        "target_shapes",
        "test_command",
        "quick_command",
    ],
    "properties": {
        "schema_version": {"type": "integer", "minimum": 1},
        "target_op": {"type": "string", "minLength": 1},
        "target_backend": {"type": "string", "minLength": 1},
        "target_lang": {"type": "string"},
        "target_gpu": {"type": "string"},
        "execution_mode": {"enum": ["repo-mode", "workspace-mode"]},
        "project_skill": {"type": ["string", "null"]},
        "performance_target": {"type": ["number", "string", "null"]},
        "primary_metric": {"type": "string", "minLength": 1},
        "target_shapes": {"type": "array", "minItems": 1, "items": _SHAPE_SCHEMA},
        "kernel_source": {"anyOf": [{"type": "string", "minLength": 1}, _STRING_LIST]},
        "test_command": _COMMAND,
        "benchmark_command": {"type": ["string", "null"]},
        "quick_command": _COMMAND,
        "acceptance_command": {"type": ["string", "null"]},
        "rebuild_command": {"type": ["string", "null"]},
        "representative_shapes": {"type": "array", "items": {"type": "string"}},
        "max_iterations": {"type": "integer", "minimum": 1, "maximum": MAX_ITERATIONS_LIMIT - 1},
        "timeout_s": {"type": "number", "exclusiveMinimum": 0},
        "protected_paths": _STRING_LIST,
        "decision_policy": {"enum": ["seed", "interleaved"]},
        "thresholds": _THRESHOLDS_SCHEMA,
        "interleaved": _INTERLEAVED_SCHEMA,
        "peaks": _PEAKS_SCHEMA,
        "gate_audit_mutants": {"type": "integer", "minimum": 0, "maximum": MAX_AUDIT_MUTANTS},
    },
}

# What to tell the user when a key is wrong, by top-level key.
_HINTS = {
    "primary_metric": "one of " + ", ".join(KNOWN_METRICS) + ", or a numeric column of your CSV",
    "max_iterations": f"a whole number from 1 to {MAX_ITERATIONS_LIMIT - 1} (the seed's limit)",
    "target_shapes": "a list of shapes, each with a unique `label` (GEMM: integer M, N, K, "
    "optional B, dtype)",
    "execution_mode": "repo-mode (Triton, small C++ changes) or workspace-mode (new C++ kernel)",
    "thresholds": "keys: core_regression_pct, noise_band_pct, noise_min_runs, "
    "noise_min_mean_pct, noise_max_std_ratio",
    "kernel_source": "a path or a list of paths to the kernel files, relative to the repo root",
    "decision_policy": "`seed` (the seed's mechanical rule) or `interleaved` (A/B pairs, "
    "confidence intervals, calibrated noise floors)",
    "peaks": "keys: tflops (a number, or one per precision: "
    + ", ".join(PRECISIONS)
    + "), gbps, cache_mb, margin_pct",
    "gate_audit_mutants": f"how many mutants of kernel_source the baseline runs the gate on, "
    f"0 (no audit) to {MAX_AUDIT_MUTANTS}",
    "interleaved": "keys: min_pairs, max_pairs, budget_s, confidence, min_effect_pct, "
    "calibration_pairs, block_ms, min_quads, max_quads, calibration_quads, calibration_processes",
}


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
    """Settings of `decision_policy: interleaved` (kgit/engine/validation.py, kgit/judge/stats.py).

    With measuring workers (a harness built on kgit.measure) a pair is one A,B,B,A quad of
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
    decision_policy: str = "seed"
    thresholds: Thresholds = field(default_factory=Thresholds)
    interleaved: Interleaved = field(default_factory=Interleaved)
    peaks: Peaks = field(default_factory=Peaks)
    # Mutants of kernel_source the gate is audited on at baseline (kgit gate audit); 0: none.
    gate_audit_mutants: int = 6

    @property
    def shape_labels(self) -> list[str]:
        return [shape["label"] for shape in self.target_shapes]

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


def _key_path(path: Any) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _schema_errors(data: dict[str, Any]) -> list[str]:
    # jsonschema pulls in ~100 ms of imports: only manifests being validated pay for it.
    import jsonschema

    validator = jsonschema.Draft202012Validator(SCHEMA)
    problems = []
    for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.path))):
        if error.validator == "additionalProperties":
            continue  # named with a suggestion by _unknown_keys
        key = _key_path(error.absolute_path)
        top = str(error.absolute_path[0]) if error.absolute_path else ""
        hint = _HINTS.get(top)
        problems.append(f"{key}: {error.message}" + (f" (expected {hint})" if hint else ""))
    return problems


def _did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word.lower(), [c.lower() for c in choices], n=1, cutoff=0.6)
    if not close:
        return ""
    return f"; did you mean {next(c for c in choices if c.lower() == close[0])!r}?"


def _unknown_keys(data: dict[str, Any]) -> list[str]:
    """A mistyped key is an error that names the key it probably is: as a warning, `treshold:`
    let a campaign run on default thresholds, and `target_shape:` read as "missing target_shapes"."""
    problems = []
    sections: list[tuple[str, dict[str, Any], dict[str, Any]]] = [("", data, SCHEMA)]
    for name, schema in (("thresholds", _THRESHOLDS_SCHEMA), ("interleaved", _INTERLEAVED_SCHEMA)):
        if isinstance(data.get(name), dict):
            sections.append((f"{name}.", data[name], schema))
    for prefix, values, schema in sections:
        known = list(schema["properties"])
        for key in values:
            if key in schema["properties"] or (not prefix and str(key).startswith(USER_KEY_PREFIX)):
                continue
            problems.append(
                f"{prefix}{key}: unknown key{_did_you_mean(str(key), known)}"
                + ("" if prefix else f" (keys of your own start with {USER_KEY_PREFIX!r})")
            )
    return problems


def _value_errors(data: dict[str, Any]) -> list[str]:
    """Values from a known set, checked now rather than after the tests and the harness ran."""
    problems = []
    metric = data.get("primary_metric")
    if isinstance(metric, str) and metric not in KNOWN_METRICS:
        near = _did_you_mean(metric, list(KNOWN_METRICS))
        if near:  # a custom metric (any numeric CSV column) is allowed; a near miss is a typo
            problems.append(f"primary_metric: {metric!r} is not a metric kgit knows{near}")
    for index, shape in enumerate(_list(data.get("target_shapes"))):
        dtype = shape.get("dtype") if isinstance(shape, dict) else None
        if isinstance(dtype, str) and dtype.lower() not in DTYPE_NAMES:
            problems.append(
                f"target_shapes[{index}].dtype: unknown dtype {dtype!r}"
                f"{_did_you_mean(dtype, list(DTYPE_NAMES))} (expected one of "
                f"{', '.join(DTYPE_NAMES)})"
            )
    return problems


def _list(value: Any) -> list[Any]:
    """VALUE when it is a list, else []: the schema has already named a wrong type, and the
    checks below must not crash on one."""
    return value if isinstance(value, list) else []


def _semantic_errors(data: dict[str, Any]) -> list[str]:
    problems = []
    seen: set[str] = set()
    for index, shape in enumerate(_list(data.get("target_shapes"))):
        label = shape.get("label") if isinstance(shape, dict) else None
        if not isinstance(label, str):
            continue
        if label in seen:
            problems.append(f"target_shapes[{index}].label: duplicate label {label!r}")
        seen.add(label)
    for index, label in enumerate(_list(data.get("representative_shapes"))):
        if isinstance(label, str) and label not in seen:
            problems.append(
                f"representative_shapes[{index}]: {label!r} is not a label of target_shapes"
            )
    return problems


def _repo_path_errors(data: dict[str, Any]) -> list[str]:
    """kernel_source and protected_paths name files of the repository: an absolute path or a
    '..' that climbs out of it is refused here, not later as a raw git error in export."""
    problems = []
    for key in ("kernel_source", "protected_paths"):
        value = data.get(key)
        paths = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        for index, path in enumerate(paths):
            parts = PurePosixPath(path).parts if isinstance(path, str) else ()
            if parts and (PurePosixPath(path).is_absolute() or ".." in parts):
                where = key if isinstance(value, str) else f"{key}[{index}]"
                problems.append(
                    f"{where}: {path!r} is outside the repository (expected a path relative to "
                    "the repository root, without '..')"
                )
    return problems


_COMMANDS = (
    "test_command",
    "quick_command",
    "benchmark_command",
    "acceptance_command",
    "rebuild_command",
)


def _command_errors(data: dict[str, Any]) -> list[str]:
    """Commands run through the shell: one that cannot be split into words (an unclosed quote,
    a trailing backslash) would fail only at baseline, after the campaign was created."""
    problems = []
    for key in _COMMANDS:
        command = data.get(key)
        if isinstance(command, str):
            try:
                shlex.split(command)
            except ValueError as exc:
                problems.append(f"{key}: {command!r} is not a valid shell command ({exc})")
    return problems


def _gemm_shape_errors(data: dict[str, Any]) -> list[str]:
    """A TFLOPS metric counts FLOPs from M, N and K (Combined Step: 6·B·M·N·K / time), so every
    shape of such a campaign needs them; without, the roofline and the combined metric fail
    rounds later, far from the manifest."""
    metric, shapes = data.get("primary_metric"), data.get("target_shapes")
    if not isinstance(metric, str) or "TFLOPS" not in metric or not isinstance(shapes, list):
        return []
    problems = []
    for index, shape in enumerate(shapes):
        missing = [d for d in ("M", "N", "K") if isinstance(shape, dict) and d not in shape]
        if missing:
            problems.append(
                f"target_shapes[{index}] ({shape.get('label')!r}): no {', '.join(missing)}; "
                f"{metric} needs integer M, N and K in every shape"
            )
    return problems


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
    problems = _unknown_keys(data) + _schema_errors(data) + _semantic_errors(data)
    problems += _value_errors(data) + _repo_path_errors(data) + _gemm_shape_errors(data)
    problems += _command_errors(data)
    if problems:
        raise UsageError(
            f"{source} is invalid:\n  " + "\n  ".join(problems),
            hint="fix the keys named above; templates/manifest.yaml documents every field",
        )
    warnings = []
    metric = data["primary_metric"]
    if metric not in KNOWN_METRICS:
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
    return _build(data)
