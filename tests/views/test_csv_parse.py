"""`kgit csv parse`: the seed's parse_bench_csv helper as a command for agents."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_kgit

HEADER = (
    "label,B,M,N,K,Check,Forward TFLOPS,Forward TFLOPS_stddev,Backward TFLOPS,"
    "Backward TFLOPS_stddev,Forward Time (ms),Backward Time (ms),out_snr,da_snr,db_snr"
)


def row(label: str, fwd: float, bwd: float, check: str = "PASS") -> str:
    m = n = k = 1024
    fwd_ms = 2 * m * n * k / (fwd * 1e12) * 1e3
    bwd_ms = 4 * m * n * k / (bwd * 1e12) * 1e3
    return f"{label},1,{m},{n},{k},{check},{fwd},1.0,{bwd},1.0,{fwd_ms!r},{bwd_ms!r},30,30,30"


def test_the_seed_worked_example(tmp_path: Path) -> None:
    path = tmp_path / "summary.csv"
    rows = [row("a", 320, 160), row("b", 305, 152), row("c", 290, 145)]
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    result = run_kgit("csv", "parse", str(path), "--metric", "Combined Step TFLOPS", "--json")
    assert result.code == 0, result
    data = result.json()
    assert isinstance(data, dict)
    assert data["all_pass"] is True and data["failing"] == []
    # per shape 6 / (2/Fwd + 4/Bwd); the SPEC's 182.515 is 182.5196 rounded by hand
    assert [r["metric"] for r in data["rows"]] == pytest.approx([192.0, 182.52, 174.0], abs=0.01)
    assert abs(data["aggregate"] - 182.69) < 0.01
    text = run_kgit("csv", "parse", str(path), "--metric", "Forward TFLOPS").out
    assert "all_pass: true" in text and "aggregate: 304.754" in text


def test_a_failing_shape_zeroes_the_aggregate(tmp_path: Path) -> None:
    path = tmp_path / "summary.csv"
    failing = "c,1,8,8,8,FAIL,nan,nan,nan,nan,nan,nan,nan,nan,nan"
    path.write_text("\n".join([HEADER, row("a", 320, 160), failing]) + "\n")
    data = run_kgit("csv", "parse", str(path), "--json").json()
    assert isinstance(data, dict)
    assert data["all_pass"] is False and data["failing"] == ["c"] and data["aggregate"] == 0
    assert data["rows"][1]["values"]["Forward TFLOPS"] is None  # NaN is not JSON


def test_a_drifted_header_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "summary.csv"
    path.write_text(HEADER.replace("Check", "check") + "\n" + row("a", 1, 1) + "\n")
    result = run_kgit("csv", "parse", str(path))
    assert result.code == 2 and "error:" in result.err
