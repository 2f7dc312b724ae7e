"""The shapes file a harness takes with `--shapes`: a JSON list of objects, each with a `label`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

Shape = Mapping[str, Any]

_DTYPES: dict[str, torch.dtype] = {
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
    "fp16": torch.float16,
    "float16": torch.float16,
    "half": torch.float16,
    "fp32": torch.float32,
    "float32": torch.float32,
    "float": torch.float32,
}


class ShapeError(ValueError):
    """A shapes file that a harness cannot use."""


def load_shapes(path: str | Path) -> list[Shape]:
    """Read and check a shapes file: a non-empty list of objects with unique string labels."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ShapeError(f"cannot read shapes from {path}: {exc}") from exc
    return validate_shapes(data, str(path))


def validate_shapes(data: object, where: str = "shapes") -> list[Shape]:
    if not isinstance(data, list) or not data:
        raise ShapeError(f"{where}: expected a non-empty JSON list of shape objects")
    labels: set[str] = set()
    for index, shape in enumerate(data):
        if not isinstance(shape, dict):
            raise ShapeError(f"{where}[{index}]: expected an object, got {type(shape).__name__}")
        label = shape.get("label")
        if not isinstance(label, str) or not label:
            raise ShapeError(f"{where}[{index}]: every shape needs a non-empty string 'label'")
        if label in labels:
            raise ShapeError(f"{where}[{index}]: duplicate label {label!r}")
        labels.add(label)
    return list(data)


def dtype_of(shape: Shape, default: torch.dtype) -> torch.dtype:
    """The shape's `dtype` field (bf16, fp16, fp32 or torch names), or `default` when absent."""
    name = shape.get("dtype")
    if name is None:
        return default
    try:
        return _DTYPES[str(name).lower()]
    except KeyError:
        raise ShapeError(f"shape {shape.get('label')!r}: unknown dtype {name!r}") from None
