"""The frozen benchmark CSV schemas and their strict reader.

The seed's per-shape gate is keyed on exact column names; a header that drifts there silently
disables the gate. Here the header is frozen at baseline and any drift is a hard error that names
the row and the column.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

from kgit.errors import SchemaError
from kgit.records.metrics import metric_of

# The GEMM class, exactly as Primus-Turbo's quick harness writes it.
GEMM_COLUMNS: tuple[str, ...] = (
    "label",
    "B",
    "M",
    "N",
    "K",
    "Check",
    "Forward TFLOPS",
    "Forward TFLOPS_stddev",
    "Backward TFLOPS",
    "Backward TFLOPS_stddev",
    "Forward Time (ms)",
    "Backward Time (ms)",
    "out_snr",
    "da_snr",
    "db_snr",
)

# Memory-bound ops (elementwise, normalization, quantization): the same conventions (label, Check,
# absolute *_stddev), bandwidth metrics, and the op's own correctness columns (SNR in dB).
MEMORY_COLUMNS: tuple[str, ...] = (
    "label",
    "M",
    "N",
    "Check",
    "Forward GB/s",
    "Forward GB/s_stddev",
    "Backward GB/s",
    "Backward GB/s_stddev",
    "Forward Time (ms)",
    "Backward Time (ms)",
    "out_snr",
    "dx_snr",
    "dw_snr",
)

PASS = "PASS"
FAIL = "FAIL"
CHECK_VALUES = (PASS, FAIL, "ERROR")

# Columns that are text; every other column must parse as a number.
TEXT_COLUMNS = ("label", "Check")


def metric_inputs(metric: str) -> tuple[str, ...]:
    """The columns METRIC is computed from (a custom metric is its own column)."""
    return metric_of(metric).inputs


@dataclass(frozen=True)
class BenchRow:
    label: str
    check: str
    values: dict[str, float]  # every numeric column, NaN where the harness wrote NaN

    @property
    def passed(self) -> bool:
        return self.check == PASS


@dataclass(frozen=True)
class BenchTable:
    header: tuple[str, ...]
    rows: tuple[BenchRow, ...]

    def row(self, label: str) -> BenchRow | None:
        return next((r for r in self.rows if r.label == label), None)

    @property
    def labels(self) -> list[str]:
        return [r.label for r in self.rows]


def _bad(row: int, label: str | None, column: str, what: str) -> SchemaError:
    where = f"row {row}" + (f" (label {label!r})" if label else "")
    return SchemaError(
        f"benchmark CSV {where}, column {column!r}: {what}",
        hint="the harness must write the schema frozen at baseline, with numbers in every "
        "numeric column of a PASS row",
    )


def check_header(header: tuple[str, ...], frozen: tuple[str, ...]) -> None:
    """Refuse any drift from the header frozen at baseline: missing, extra or reordered."""
    if header == frozen:
        return
    missing = [c for c in frozen if c not in header]
    extra = [c for c in header if c not in frozen]
    parts = []
    if missing:
        parts.append("missing " + ", ".join(map(repr, missing)))
    if extra:
        parts.append("extra " + ", ".join(map(repr, extra)))
    if not parts:
        parts.append("columns reordered")
    raise SchemaError(
        "benchmark CSV header drifted from the schema frozen at baseline: " + "; ".join(parts),
        hint="restore the harness's output columns; the schema is frozen for the whole campaign",
        details="frozen:   " + ",".join(frozen) + "\nreceived: " + ",".join(header),
    )


def check_new_header(header: tuple[str, ...], metric: str) -> None:
    """The header a baseline may freeze: the GEMM schema exactly, or one that keeps the seed's
    conventions (label, Check) and holds the metric's input columns."""
    if "Forward TFLOPS" in header and header != GEMM_COLUMNS:
        check_header(header, GEMM_COLUMNS)
    for column in ("label", "Check", *metric_inputs(metric)):
        if column not in header:
            raise SchemaError(
                f"benchmark CSV has no column {column!r} (needed for {metric!r})",
                hint="write the GEMM or memory-bound schema (kgit.records.schema), or pick a "
                "primary_metric that is a column of the CSV",
                details="received: " + ",".join(header),
            )
    if len(set(header)) != len(header):
        raise SchemaError(
            "benchmark CSV header repeats a column",
            hint="give each column of the harness's CSV its own name",
            details=",".join(header),
        )


def _number(text: str, row: int, label: str, column: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise _bad(row, label, column, f"{text!r} is not a number") from None


def _parse_row(index: int, cells: list[str], header: tuple[str, ...], metric: str) -> BenchRow:
    if len(cells) != len(header):
        raise _bad(index, None, "-", f"has {len(cells)} cells for {len(header)} columns")
    record = dict(zip(header, cells, strict=True))
    label, check = record["label"].strip(), record["Check"].strip()
    if not label:
        raise _bad(index, None, "label", "empty label")
    if check not in CHECK_VALUES:
        raise _bad(index, label, "Check", f"{check!r} is not one of {', '.join(CHECK_VALUES)}")
    values = {c: _number(record[c], index, label, c) for c in header if c not in TEXT_COLUMNS}
    if check == PASS:
        for column in metric_inputs(metric):
            value = values[column]
            if not math.isfinite(value) or value <= 0:
                raise _bad(index, label, column, f"{value} in a PASS row (must be finite and > 0)")
    return BenchRow(label, check, values)


def parse_bench_csv(data: bytes, metric: str, frozen: tuple[str, ...] | None = None) -> BenchTable:
    """Read a harness's summary CSV strictly. FROZEN is the baseline's header (None at baseline)."""
    lines = [line for line in _csv_lines(data) if line]
    if not lines:
        raise SchemaError("benchmark CSV is empty", hint="the harness wrote no header and no rows")
    header = tuple(lines[0])  # exact: a stray space in a column name is drift too
    if frozen is None:
        check_new_header(header, metric)
    else:
        check_header(header, frozen)
    rows = tuple(_parse_row(i, cells, header, metric) for i, cells in enumerate(lines[1:], 2))
    seen: set[str] = set()
    for index, row in enumerate(rows, 2):
        if row.label in seen:
            raise _bad(index, row.label, "label", "duplicate label")
        seen.add(row.label)
    if not rows:
        raise SchemaError(
            "benchmark CSV has a header but no rows",
            hint="the harness must write one row per shape it was given (--shapes)",
        )
    return BenchTable(header, rows)


_TEXT_HINT = "the harness's --summary-csv must be UTF-8 CSV text (did it write another file?)"


def _csv_lines(data: bytes) -> list[list[str]]:
    """The CSV's rows of cells; binary data, and CSV the reader gives up on (an unclosed quote,
    a field over its size limit), are schema errors, not crashes."""
    if b"\0" in data:
        raise SchemaError("benchmark CSV holds NUL bytes: it is binary data", hint=_TEXT_HINT)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SchemaError("benchmark CSV is not UTF-8 text", hint=_TEXT_HINT) from None
    try:
        return list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise SchemaError(f"benchmark CSV cannot be read as CSV: {exc}", hint=_TEXT_HINT) from None
