"""The manifest's declared schema (JSON Schema), the names and limits it is built from, and what
to tell the user when a key is wrong (kgit/records/manifest.py reads manifests against it).
"""

from __future__ import annotations

from typing import Any

MANIFEST_VERSION = 1

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

THRESHOLDS_SCHEMA: dict[str, Any] = {
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

INTERLEAVED_SCHEMA: dict[str, Any] = {
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
        "decision_policy": {"type": "string"},  # one of the table's (kgit/records/policies.py)
        "thresholds": THRESHOLDS_SCHEMA,
        "interleaved": INTERLEAVED_SCHEMA,
        "peaks": _PEAKS_SCHEMA,
        "gate_audit_mutants": {"type": "integer", "minimum": 0, "maximum": MAX_AUDIT_MUTANTS},
        "env": {
            "type": "object",
            "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
            "additionalProperties": {"type": "string"},
        },
    },
}

# What to tell the user when a key is wrong, by top-level key.
HINTS = {
    "primary_metric": "a metric of kgit/records/metrics.py (kgit init --help lists them), or a "
    "numeric column of your CSV",
    "max_iterations": f"a whole number from 1 to {MAX_ITERATIONS_LIMIT - 1} (the seed's limit)",
    "target_shapes": "a list of shapes, each with a unique `label` (GEMM: integer M, N, K, "
    "optional B, dtype)",
    "execution_mode": "repo-mode (Triton, small C++ changes) or workspace-mode (new C++ kernel)",
    "thresholds": "keys: core_regression_pct, noise_band_pct, noise_min_runs, "
    "noise_min_mean_pct, noise_max_std_ratio",
    "kernel_source": "a path or a list of paths to the kernel files, relative to the repo root",
    "peaks": "keys: tflops (a number, or one per precision: "
    + ", ".join(PRECISIONS)
    + "), gbps, cache_mb, margin_pct",
    "env": 'a mapping of variable names to strings (quote numbers: TRITON_INTERPRET: "1"); '
    "kgit's own (KGIT_*, PYTHON*, HOME, TMPDIR, caches) and the loader's (LD_PRELOAD, "
    "LD_AUDIT) cannot be declared",
    "gate_audit_mutants": f"how many mutants of kernel_source the baseline runs the gate on, "
    f"0 (no audit) to {MAX_AUDIT_MUTANTS}",
    "interleaved": "keys: min_pairs, max_pairs, budget_s, confidence, min_effect_pct, "
    "calibration_pairs, block_ms, min_quads, max_quads, calibration_quads, calibration_processes",
}
