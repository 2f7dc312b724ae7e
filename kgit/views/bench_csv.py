"""`kgit csv parse`: the seed's `parse_bench_csv` helper as a command, for agents reading a
harness's summary CSV by hand. The strict reader and the scoring are kgit's own."""

from __future__ import annotations

import math

from kgit.judge.scoring import score, shape_metric
from kgit.records.review_results import CsvParsed, CsvRow
from kgit.records.schema import parse_bench_csv

# A summary CSV has a row per shape, ~150 bytes each: 16 MB is 100,000 shapes.
MAX_CSV_BYTES = 16_000_000


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None  # NaN is not JSON


def parse_csv_data(data: bytes, metric: str, source: str) -> CsvParsed:
    table = parse_bench_csv(data, metric)
    scored = score(table, metric)
    rows = tuple(
        CsvRow(
            label=row.label,
            check=row.check,
            metric=shape_metric(row, metric),
            values={k: _finite(v) for k, v in row.values.items()},
        )
        for row in table.rows
    )
    return CsvParsed(
        file=source,
        metric=metric,
        header=tuple(table.header),
        rows=rows,
        all_pass=scored.all_pass,
        failing=tuple(scored.failing),
        aggregate=scored.aggregate,
    )


def render_csv_data(data: CsvParsed) -> str:
    from kgit.views.document import markdown_table

    rows = [[r.label, r.check, "-" if r.metric is None else f"{r.metric:.6g}"] for r in data.rows]
    lines = [markdown_table(["label", "Check", data.metric], rows), ""]
    # greppable `key: value` lines last, for agents reading text
    lines += [
        f"all_pass: {str(data.all_pass).lower()}",
        f"failing: {','.join(data.failing) or '-'}",
        f"aggregate: {data.aggregate:.6g}",
    ]
    return "\n".join(lines)
