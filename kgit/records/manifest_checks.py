"""A manifest's fields checked before they are built into a `Manifest`: the schema, unknown keys
(with a did-you-mean), values, paths inside the repository, commands and GEMM shapes. Each check
returns the problems it found, each naming the key path and the fix.
"""

from __future__ import annotations

import shlex
from pathlib import PurePosixPath
from typing import Any

from kgit.records.manifest_schema import (
    DTYPE_NAMES,
    HINTS,
    INTERLEAVED_SCHEMA,
    SCHEMA,
    THRESHOLDS_SCHEMA,
    USER_KEY_PREFIX,
)
from kgit.records.metrics import METRICS, is_time_column, metric_of
from kgit.records.policies import DEFAULT_POLICY, POLICIES


def _key_path(path: Any) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _schema_errors(data: dict[str, Any]) -> list[str]:
    # jsonschema pulls in ~100 ms of imports: only manifests being validated pay for it.
    import jsonschema

    # The policies a manifest may name are the table's rows as they are now.
    properties = {**SCHEMA["properties"], "decision_policy": {"enum": list(POLICIES)}}
    validator = jsonschema.Draft202012Validator({**SCHEMA, "properties": properties})
    hints = {**HINTS, "decision_policy": _policy_hint()}
    problems = []
    for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.path))):
        if error.validator == "additionalProperties":
            continue  # named with a suggestion by _unknown_keys
        key = _key_path(error.absolute_path)
        top = str(error.absolute_path[0]) if error.absolute_path else ""
        hint = hints.get(top)
        problems.append(f"{key}: {error.message}" + (f" (expected {hint})" if hint else ""))
    return problems


def _policy_hint() -> str:
    """The policies a manifest may name, as the table lists them now."""
    names = ", ".join(f"`{name}`" for name in POLICIES)
    return f"one of {names}; the default is `{DEFAULT_POLICY}` (docs/verdict.md: how each decides)"


def _did_you_mean(word: str, choices: list[str]) -> str:
    import difflib  # here and below: only a manifest with a mistake needs it, not a stored one

    close = difflib.get_close_matches(word.lower(), [c.lower() for c in choices], n=1, cutoff=0.6)
    if not close:
        return ""
    return f"; did you mean {next(c for c in choices if c.lower() == close[0])!r}?"


def misspelt_as(name: str, data: dict[str, Any]) -> str | None:
    """The key of DATA that is no key kgit knows and is close to NAME (a required key found
    missing): `target_shape:` written for `target_shapes:`."""
    import difflib

    unknown = [str(k) for k in data if k not in SCHEMA["properties"]]
    close = difflib.get_close_matches(name, unknown, n=1, cutoff=0.6)
    return close[0] if close else None


def _unknown_keys(data: dict[str, Any]) -> list[str]:
    """A mistyped key is an error that names the key it probably is: as a warning, `treshold:`
    let a campaign run on default thresholds, and `target_shape:` read as "missing target_shapes"."""
    problems = []
    sections: list[tuple[str, dict[str, Any], dict[str, Any]]] = [("", data, SCHEMA)]
    for name, schema in (("thresholds", THRESHOLDS_SCHEMA), ("interleaved", INTERLEAVED_SCHEMA)):
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
    if isinstance(metric, str) and metric not in METRICS:
        near = _did_you_mean(metric, list(METRICS))
        if is_time_column(metric):  # judged as higher is better, a slower kernel would win
            problems.append(
                f"primary_metric: {metric!r} is a time, where lower is better, and kgit reads "
                "every metric as higher is better (name a rate: a TFLOPS or GB/s column, or a "
                "column of your own whose larger values are better)"
            )
        elif near:  # a custom metric (any numeric CSV column) is allowed; a near miss is a typo
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


def _spoken(names: tuple[str, ...]) -> str:
    """`M, N and K`."""
    return " and ".join(n for n in (", ".join(names[:-1]), names[-1]) if n)


def _gemm_shape_errors(data: dict[str, Any]) -> list[str]:
    """A TFLOPS metric counts FLOPs from M, N and K (Combined Step: 6·B·M·N·K / time), so every
    shape of such a campaign needs the dimensions its row names (`shape_dims`); without, the
    roofline and the combined metric fail rounds later, far from the manifest."""
    metric, shapes = data.get("primary_metric"), data.get("target_shapes")
    if not isinstance(metric, str) or not isinstance(shapes, list):
        return []
    dims = metric_of(metric).shape_dims
    problems = []
    for index, shape in enumerate(shapes):
        missing = [d for d in dims if isinstance(shape, dict) and d not in shape]
        if missing:
            problems.append(
                f"target_shapes[{index}] ({shape.get('label')!r}): no {', '.join(missing)}; "
                f"{metric} needs integer {_spoken(dims)} in every shape"
            )
    return problems


# The environment of a measuring process is kgit's to build (kgit/engine/measuring/isolation/world.py): these
# names are its own per-process settings, and these prefixes Python's start-up and bytecode, the
# loader's preloads and kgit's protocol. A manifest's `env:` declares none of them.
KGIT_OWN_ENV = ("HOME", "TMPDIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "CUDA_CACHE_PATH",
                "XDG_CACHE_HOME")  # fmt: skip
RESERVED_ENV_PREFIXES = ("KGIT_", "PYTHON", "LD_PRELOAD", "LD_AUDIT", "LD_DEBUG", "DYLD_")


def _env_errors(data: dict[str, Any]) -> list[str]:
    env = data.get("env")
    if not isinstance(env, dict):
        return []
    return [
        f"env.{name}: kgit sets this itself for every measuring process (its own home, "
        "temporary folder, caches, Python path and bytecode settings); it cannot be declared"
        for name in env
        if isinstance(name, str)
        and (name in KGIT_OWN_ENV or name.startswith(RESERVED_ENV_PREFIXES))
    ]


def manifest_problems(data: dict[str, Any]) -> list[str]:
    """Every problem of a manifest's fields DATA, in the order the user reads them."""
    problems = _unknown_keys(data) + _schema_errors(data) + _semantic_errors(data)
    problems += _value_errors(data) + _repo_path_errors(data) + _gemm_shape_errors(data)
    return problems + _command_errors(data) + _env_errors(data)
