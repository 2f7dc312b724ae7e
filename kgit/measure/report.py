"""The harness's `--summary-csv`: rows in one of the frozen schemas of `kgit.records.schema`.

The writer refuses a row whose keys differ from the schema's columns, so a harness cannot drift
from the header frozen at baseline. A shape that fails or raises still gets its row: Check=FAIL
and NaN metrics, so the gate sees the failure rather than a missing line.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from kgit.measure.shapes import Shape
from kgit.records.schema import FAIL

Row = Mapping[str, object]

# Shape fields that a shape object may leave out, and the value a row then carries.
_SHAPE_DEFAULTS: dict[str, object] = {"B": 1}


def format_value(value: object) -> str:
    """One CSV cell: floats to 6 significant digits, NaN as `nan`, infinities as `inf`/`-inf`."""
    if isinstance(value, bool):
        raise TypeError("a CSV cell cannot be a bool; use PASS/FAIL strings")
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.6g}"
    return str(value)


def fail_row(columns: Sequence[str], shape: Shape) -> dict[str, object]:
    """The row of a shape that failed or raised: its label and sizes, FAIL, NaN metrics."""
    row: dict[str, object] = {}
    for column in columns:
        if column == "Check":
            row[column] = FAIL
        elif column in shape:
            row[column] = shape[column]
        elif column in _SHAPE_DEFAULTS:
            row[column] = _SHAPE_DEFAULTS[column]
        else:
            row[column] = math.nan
    return row


def check_row(columns: Sequence[str], row: Row) -> None:
    """Raise ValueError unless the row has exactly the schema's columns."""
    missing = [c for c in columns if c not in row]
    extra = [k for k in row if k not in columns]
    if missing or extra:
        raise ValueError(
            f"row {row.get('label')!r} does not match the schema: missing {missing}, extra {extra}"
        )


def write_summary_csv(path: str | Path, columns: Sequence[str], rows: Iterable[Row]) -> bytes:
    """Write the header and one line per row, in schema order; return the bytes written."""
    lines = []
    for row in rows:
        check_row(columns, row)
        lines.append([format_value(row[c]) for c in columns])
    text = io.StringIO(newline="")
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(lines)
    written = text.getvalue().encode()
    Path(path).write_bytes(written)
    return written
