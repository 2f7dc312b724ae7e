from __future__ import annotations

import pytest

from kgit.errors import SchemaError
from kgit.records.schema import GEMM_COLUMNS, MEMORY_COLUMNS, parse_bench_csv

HEADER = ",".join(GEMM_COLUMNS)
ROW = "s1,1,256,256,256,PASS,10.0,0.1,8.0,0.1,0.0034,0.0084,40.0,40.0,40.0"


def csv(*rows: str, header: str = HEADER) -> bytes:
    return ("\n".join([header, *rows]) + "\n").encode()


def test_reads_the_gemm_schema_exactly() -> None:
    table = parse_bench_csv(csv(ROW, ROW.replace("s1", "s2")), "Forward TFLOPS")
    assert table.header == GEMM_COLUMNS
    assert table.labels == ["s1", "s2"]
    assert table.rows[0].values["Forward TFLOPS"] == 10.0


def test_fail_rows_may_hold_nan() -> None:
    fail = "s2,1,64,64,64,FAIL,nan,nan,nan,nan,nan,nan,nan,nan,nan"
    table = parse_bench_csv(csv(ROW, fail), "Forward TFLOPS")
    assert not table.rows[1].passed


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (HEADER.replace(",db_snr", ""), "missing 'db_snr'"),
        (HEADER + ",extra", "extra 'extra'"),
        (HEADER.replace("M,N", "N,M"), "reordered"),
        (HEADER.replace("Check", "Check "), "missing 'Check'"),
    ],
)
def test_header_drift_from_the_frozen_schema_is_a_hard_error(header: str, expected: str) -> None:
    row = (
        ROW
        if header.count(",") == HEADER.count(",")
        else ROW + ",1"
        if "extra" in header
        else ROW.rsplit(",", 1)[0]
    )
    with pytest.raises(SchemaError, match=expected):
        parse_bench_csv(csv(row, header=header), "Forward TFLOPS", frozen=GEMM_COLUMNS)


@pytest.mark.parametrize(
    ("row", "column", "what"),
    [
        (ROW.replace("10.0,0.1", "fast,0.1", 1), "Forward TFLOPS", "not a number"),
        (ROW.replace("10.0,0.1", "nan,0.1", 1), "Forward TFLOPS", "must be finite"),
        (ROW.replace("10.0,0.1", "inf,0.1", 1), "Forward TFLOPS", "must be finite"),
        (ROW.replace("10.0,0.1", "0,0.1", 1), "Forward TFLOPS", "> 0"),
        (ROW.replace("PASS", "OK"), "Check", "not one of"),
    ],
)
def test_bad_cells_name_the_row_and_column(row: str, column: str, what: str) -> None:
    with pytest.raises(SchemaError) as info:
        parse_bench_csv(csv(ROW.replace("s1", "s0"), row), "Forward TFLOPS", frozen=GEMM_COLUMNS)
    assert "row 3 (label 's1')" in info.value.message
    assert repr(column) in info.value.message
    assert what in info.value.message


def test_duplicate_label_is_refused() -> None:
    with pytest.raises(SchemaError, match="duplicate label"):
        parse_bench_csv(csv(ROW, ROW), "Forward TFLOPS")


def test_combined_metric_needs_time_columns_positive() -> None:
    bad = ROW.replace("0.0034,0.0084", "0.0034,-1")
    with pytest.raises(SchemaError, match="Backward Time"):
        parse_bench_csv(csv(bad), "Combined Step TFLOPS")


def test_a_gemm_like_header_must_be_the_gemm_schema() -> None:
    header = HEADER.replace(",db_snr", ",dB_snr")
    with pytest.raises(SchemaError, match="drifted"):
        parse_bench_csv(csv(ROW, header=header), "Forward TFLOPS")


def test_memory_bound_schema_and_custom_metric() -> None:
    header = ",".join(MEMORY_COLUMNS)
    row = "r1,4096,4096,PASS,2000.0,10.0,1500.0,12.0,0.05,0.1,60.0,55.0,50.0"
    table = parse_bench_csv(csv(row, header=header), "Forward GB/s")
    assert table.rows[0].values["Backward GB/s"] == 1500.0
    with pytest.raises(SchemaError, match="no column 'Forward TFLOPS'"):
        parse_bench_csv(csv(row, header=header), "Forward TFLOPS")


def test_crlf_and_bom_are_read() -> None:
    data = b"\xef\xbb\xbf" + csv(ROW).replace(b"\n", b"\r\n")
    assert parse_bench_csv(data, "Forward TFLOPS").labels == ["s1"]


def test_empty_and_headless_files() -> None:
    with pytest.raises(SchemaError, match="empty"):
        parse_bench_csv(b"", "Forward TFLOPS")
    with pytest.raises(SchemaError, match="no rows"):
        parse_bench_csv(csv(), "Forward TFLOPS")
