"""The physical floor as pure functions: which peaks hold for which device and precision, the
rates a CSV carries, and what is past the margin."""

from __future__ import annotations

import pytest

from kgit.errors import UsageError
from kgit.judge.floor import (
    ANY,
    merge_rates,
    metric_rates,
    over_peak,
    pct_of_peak,
    precision_of,
    resolve_floor,
    table_rates,
)
from kgit.records.manifest import Peaks, parse_manifest
from kgit.records.schema import GEMM_COLUMNS, MEMORY_COLUMNS, parse_bench_csv


@pytest.mark.parametrize(
    ("gpu", "device", "bf16", "gbps"),
    [
        ("NVIDIA H200", "NVIDIA H200 SXM", 989.5, 4800.0),
        ("NVIDIA H200 NVL", "NVIDIA H200 NVL", 835.5, 4800.0),
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM", 989.5, 3350.0),
        ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe", 756.5, 2000.0),
        ("NVIDIA H100 NVL", "NVIDIA H100 NVL", 835.5, 3900.0),
        ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB", 312.0, 1555.0),
        ("NVIDIA A100 80GB PCIe", "NVIDIA A100 80GB PCIe", 312.0, 1935.0),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB SXM", 312.0, 2039.0),
        ("AMD Instinct MI300X", "AMD Instinct MI300X", 1307.4, 5300.0),
        ("AMD Instinct MI325X", "AMD Instinct MI325X", 1307.4, 6000.0),
    ],
)
def test_the_datasheet_table_by_fingerprint_name(
    gpu: str, device: str, bf16: float, gbps: float
) -> None:
    floor = resolve_floor(gpu, Peaks())
    assert floor is not None and floor.source == "datasheet"
    assert (floor.device, floor.peak("TFLOPS", "bf16"), floor.gbps) == (device, bf16, gbps)


def test_no_floor_without_a_known_device_or_peaks() -> None:
    assert resolve_floor("cpu", Peaks()) is None
    assert resolve_floor(None, Peaks()) is None
    floor = resolve_floor("cpu", Peaks(tflops=2.0, gbps=50.0))
    assert floor is not None and floor.source == "manifest peaks"
    assert floor.tflops == {ANY: 2.0} and floor.peak("TFLOPS", "fp8") == 2.0


def test_manifest_peaks_complete_or_replace_the_table_key_by_key() -> None:
    floor = resolve_floor("NVIDIA H200", Peaks(tflops={"bf16": 900.0}, gbps=4000.0, margin_pct=5))
    assert floor is not None and floor.source == "datasheet + manifest peaks"
    assert floor.peak("TFLOPS", "bf16") == 900.0 and floor.peak("TFLOPS", "fp8") == 1979.0
    assert floor.gbps == 4000.0 and floor.cache_mb == 50.0 and floor.margin_pct == 5


@pytest.mark.parametrize(
    ("dtype", "peak"),
    [
        ("bf16", 989.5),
        ("torch.float16", 989.5),
        ("fp8_e4m3", 1979.0),
        ("fp32", 494.5),  # TF32 tensor cores: Triton's tl.dot uses them on fp32 by default
        ("int4", 1979.0),  # no figure: the largest, never a false alarm
        (None, 1979.0),
    ],
)
def test_each_precision_has_its_peak(dtype: str | None, peak: float) -> None:
    floor = resolve_floor("NVIDIA H200", Peaks())
    assert floor is not None and floor.peak("TFLOPS", dtype) == peak


def test_precision_names() -> None:
    assert [precision_of(d) for d in ("bfloat16", "half", "float32", "e5m2", "mxfp4", "x")] == [
        "bf16",
        "fp16",
        "fp32",
        "fp8",
        "fp4",
        None,
    ]


def test_manifest_peaks_are_validated() -> None:
    base = "target_op: g\ntarget_backend: T\nprimary_metric: Forward GB/s\ntest_command: t\nquick_command: q\ntarget_shapes: [{label: a}]\n"
    manifest, _ = parse_manifest(base + "peaks: {tflops: {bf16: 100}, gbps: 900}\n")
    assert manifest.peaks == Peaks(tflops={"bf16": 100}, gbps=900)
    with pytest.raises(UsageError, match="peaks"):
        parse_manifest(base + "peaks: {tflops: {bf17: 100}}\n")
    with pytest.raises(UsageError, match=r"peaks\.gbps"):
        parse_manifest(base + "peaks: {gbps: -1}\n")


GEMM_ROW = "g,1,4096,4096,4096,PASS,600,1,500,1,0.229,0.550,40,40,40"
#                                                fwd ms ^    ^ bwd ms


def test_a_gemm_row_carries_its_columns_and_the_combined_step() -> None:
    table = parse_bench_csv(
        (",".join(GEMM_COLUMNS) + "\n" + GEMM_ROW + "\n").encode(), "Combined Step TFLOPS"
    )
    rates = table_rates(table, "Combined Step TFLOPS")
    assert set(rates["g"]) == {"Forward TFLOPS", "Backward TFLOPS", "Combined Step TFLOPS"}
    combined = 6 * 4096**3 / ((0.229 + 0.550) * 1e-3) / 1e12
    assert rates["g"]["Combined Step TFLOPS"]["value"] == pytest.approx(combined)


def _memory(gbps: float, ms: float) -> dict[str, dict[str, dict[str, float]]]:
    row = f"m,4096,4096,PASS,{gbps},1,{gbps},1,{ms},{ms},40,40,40"
    table = parse_bench_csv((",".join(MEMORY_COLUMNS) + "\n" + row + "\n").encode(), "Forward GB/s")
    return table_rates(table, "Forward GB/s")


def test_the_margin_is_the_line() -> None:
    floor = resolve_floor("cpu", Peaks(tflops=100.0))
    assert floor is not None
    at = {"s": {"Forward TFLOPS": {"value": 110.0}}}
    past = {"s": {"Forward TFLOPS": {"value": 110.01}}}
    assert over_peak(at, {}, floor) == []
    (found,) = over_peak(past, {}, floor)
    assert found.pct_of_peak == pytest.approx(110.01) and found.limit == pytest.approx(110.0)


def test_bandwidth_is_held_to_memory_unless_the_bytes_fit_in_the_cache() -> None:
    floor = resolve_floor("NVIDIA H200", Peaks())
    assert floor is not None
    # 512 MB moved at 6000 GB/s: past 4800 GB/s of HBM3e + 10%, and far bigger than the L2.
    big = _memory(6000.0, 512 * 2**20 / 6000e9 * 1e3)
    assert big["m"]["Forward GB/s"]["bytes"] == pytest.approx(512 * 2**20)
    (found,) = [o for o in over_peak(big, {}, floor) if o.column == "Forward GB/s"]
    assert not found.in_cache
    # 8 MB moved (it may sit in the 50 MB L2): 12 TB/s is allowed, 30 TB/s is not.
    small_ms = 8 * 2**20 / 12000e9 * 1e3
    assert over_peak(_memory(12000.0, small_ms), {}, floor) == []
    flagged = over_peak(_memory(30000.0, 8 * 2**20 / 30000e9 * 1e3), {}, floor)
    assert flagged and all(o.in_cache for o in flagged)


def test_blocks_report_the_metric_with_the_bytes_of_their_shape() -> None:
    table_part = _memory(3000.0, 512 * 2**20 / 3000e9 * 1e3)
    blocks = [{"m": 2000.0}, {"m": 9000.0}]
    rates = merge_rates(table_part, metric_rates(blocks, "Forward GB/s", table_part))
    assert rates["m"]["Forward GB/s"]["value"] == 9000.0
    assert rates["m"]["Forward GB/s"]["bytes"] == pytest.approx(512 * 2**20)
    floor = resolve_floor("NVIDIA H200", Peaks())
    assert floor is not None
    assert [o.label for o in over_peak(rates, {}, floor)] == ["m"]


def test_percent_of_peak() -> None:
    floor = resolve_floor("NVIDIA H200", Peaks())
    assert pct_of_peak(494.75, "Combined Step TFLOPS", "bf16", floor) == pytest.approx(50.0)
    assert pct_of_peak(2400.0, "Forward GB/s", None, floor) == pytest.approx(50.0)
    assert pct_of_peak(1.0, "out_snr", None, floor) is None
    assert pct_of_peak(1.0, "Forward TFLOPS", None, None) is None


def test_an_infinite_rate_is_past_any_peak() -> None:
    """A backward timed at zero: its TFLOPS column reads inf, and inf is no gain."""
    row = "g,1,256,256,256,PASS,10,1,inf,0,0.0034,0.0,40,40,40"
    table = parse_bench_csv((",".join(GEMM_COLUMNS) + "\n" + row + "\n").encode(), "Forward TFLOPS")
    floor = resolve_floor("NVIDIA H200", Peaks())
    assert floor is not None
    (found,) = over_peak(table_rates(table, "Forward TFLOPS"), {"g": "bf16"}, floor)
    assert found.column == "Backward TFLOPS" and found.value == float("inf")
