"""The metrics' table (kgit/records/metrics.py): a metric added as one row is read by the
manifest's checks, the CSV reader, the physical floor and the trend, with no other module
touched."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kgit.errors import SchemaError, UsageError
from kgit.judge.floor import over_peak, pct_of_peak, resolve_floor, table_rates
from kgit.judge.monotonic import memory_bound, monotonic_check, rule_value, side_metrics
from kgit.records.manifest import Peaks, parse_manifest
from kgit.records.metrics import GBPS, METRICS, TFLOPS, Metric, metric_of
from kgit.records.schema import MEMORY_COLUMNS, check_new_header, parse_bench_csv
from kgit.views.trend import TrendLayout

NAME = "Effective Bandwidth"  # no unit in its name: only its row says what it is


def effective_gbps(v: Mapping[str, float]) -> float:
    """A bf16 row read once and written once, over the forward time."""
    return 4.0 * v["M"] * v["N"] / (v["Forward Time (ms)"] * 1e-3) / 1e9


ROW = Metric(NAME, ("M", "N", "Forward Time (ms)"), GBPS, GBPS, "memory", effective_gbps)


@pytest.fixture
def added(monkeypatch: pytest.MonkeyPatch) -> Metric:
    monkeypatch.setitem(METRICS, NAME, ROW)
    return ROW


def manifest_text(metric: str) -> str:
    return (
        f"target_op: rmsnorm\ntarget_backend: T\nprimary_metric: {metric}\n"
        "test_command: t\nquick_command: python h.py\n"
        "target_shapes:\n  - {label: m, M: 4096, N: 4096}\n"
    )


def memory_table(ms: float) -> bytes:
    row = f"m,4096,4096,PASS,100,1,50,1,{ms},{ms},40,40,40"
    return (",".join(MEMORY_COLUMNS) + "\n" + row + "\n").encode()


def test_the_manifest_knows_an_added_metric(added: Metric) -> None:
    manifest, warnings = parse_manifest(manifest_text(NAME))
    assert manifest.primary_metric == NAME and warnings == []
    with pytest.raises(Exception, match="did you mean 'Effective Bandwidth'"):
        parse_manifest(manifest_text("Effective Bandwith"))


def test_without_its_row_the_same_name_is_a_custom_column() -> None:
    _, warnings = parse_manifest(manifest_text(NAME))
    assert warnings and "is not one kgit knows" in warnings[0]
    assert metric_of(NAME).inputs == (NAME,) and metric_of(NAME).bound is None


def test_the_csv_must_hold_an_added_metrics_inputs(added: Metric) -> None:
    check_new_header(MEMORY_COLUMNS, NAME)
    header = tuple(c for c in MEMORY_COLUMNS if c != "Forward Time (ms)")
    with pytest.raises(SchemaError, match="no column 'Forward Time \\(ms\\)'"):
        check_new_header(header, NAME)


def test_the_floor_holds_an_added_metric_to_its_bound(added: Metric) -> None:
    floor = resolve_floor("NVIDIA H200", Peaks())
    assert floor is not None and floor.gbps == 4800.0
    table = parse_bench_csv(memory_table(0.1), NAME)
    rates = table_rates(table, NAME)
    value = 4.0 * 4096 * 4096 / 1e-4 / 1e9  # 671 GB/s
    assert rates["m"][NAME]["value"] == pytest.approx(value)
    assert pct_of_peak(value, NAME, None, floor) == pytest.approx(value / 4800 * 100)
    # A forward timed at 1 µs: 67 TB/s, past even the cache's allowance of memory's peak.
    fast = table_rates(parse_bench_csv(memory_table(0.001), NAME), NAME)
    assert [o.column for o in over_peak(fast, {}, floor)] == [NAME]


def test_the_trend_reads_an_added_metric(added: Metric) -> None:
    assert memory_bound(NAME) and rule_value(NAME) == ("primary", NAME)
    assert TrendLayout.for_metric(NAME).headers[-3] == NAME
    slow, fast = (parse_bench_csv(memory_table(ms), NAME) for ms in (0.2, 0.1))
    assert side_metrics(fast, NAME)["primary"] == pytest.approx(4.0 * 4096 * 4096 / 1e-4 / 1e9)
    check = monotonic_check([(1, fast), (2, slow)], NAME)
    assert check["value"] == NAME and check["offending_rounds"] == [2]


def test_a_custom_column_declares_its_unit_by_its_name() -> None:
    assert metric_of("Forward TFLOPS_p50").bound == TFLOPS
    assert metric_of("Forward TFLOPS_p50").shape_dims == ("M", "N", "K")
    assert metric_of("Forward GB/s_p50").template == "memory"
    assert metric_of("tokens").bound is None and metric_of("tokens").template == "gemm"


@pytest.mark.parametrize("column", ["Forward Time (ms)", "Backward Time (ms)", "latency (us)"])
def test_a_time_column_is_refused_as_the_metric(column: str) -> None:
    """Every comparison reads a larger value as the better one: a time named as the metric would
    have a slower kernel accepted, so the manifest refuses it; a rate of one's own still passes."""
    with pytest.raises(UsageError) as refused:
        parse_manifest(manifest_text(column))
    assert f"primary_metric: {column!r} is a time, where lower is better" in refused.value.message
    _, warnings = parse_manifest(manifest_text("Tokens per second"))
    assert warnings and "higher is better" in warnings[0]
