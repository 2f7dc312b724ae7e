from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from kgit.measure.harness import CannotRun, Settings, run_harness
from kgit.measure.report import fail_row, format_value, write_summary_csv
from kgit.measure.shapes import Shape
from kgit.records.schema import GEMM_COLUMNS, MEMORY_COLUMNS

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "templates"


def _read(path: Path) -> list[list[str]]:
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def test_writer_emits_exactly_the_frozen_header_and_nan_fail_rows(tmp_path: Path) -> None:
    out = tmp_path / "s.csv"
    write_summary_csv(
        out, GEMM_COLUMNS, [fail_row(GEMM_COLUMNS, {"label": "x", "M": 8, "N": 4, "K": 2})]
    )
    lines = out.read_text().splitlines()
    assert lines[0] == ",".join(GEMM_COLUMNS)
    assert lines[1] == "x,1,8,4,2,FAIL," + ",".join(["nan"] * 9)


def test_writer_refuses_a_drifting_row(tmp_path: Path) -> None:
    row = {**fail_row(MEMORY_COLUMNS, {"label": "x", "M": 1, "N": 1}), "extra": 1.0}
    with pytest.raises(ValueError, match="extra"):
        write_summary_csv(tmp_path / "s.csv", MEMORY_COLUMNS, [row])


def test_cell_format() -> None:
    assert format_value(math.nan) == "nan" and format_value(math.inf) == "inf"
    assert format_value(712.3456789) == "712.346" and format_value(3) == "3"


def _fake_bench(shape: Shape, settings: Settings) -> dict[str, object]:
    if shape["label"] == "boom":
        raise RuntimeError("kernel crashed")
    if shape["label"] == "nogpu":
        raise CannotRun("needs a GPU")
    if str(shape["label"]).startswith("busy"):
        for _ in range(2):
            warnings.warn("3 of 100 timed calls may have timed the host", stacklevel=1)
    row = fail_row(MEMORY_COLUMNS, shape)
    row.update({c: 1.0 for c in MEMORY_COLUMNS[4:]}, Check="PASS")
    return row


def _run(tmp_path: Path, labels: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    shapes = tmp_path / "shapes.json"
    shapes.write_text(json.dumps([{"label": s, "M": 2, "N": 3} for s in labels]))
    argv = ["--summary-csv", str(tmp_path / "o.csv"), "--shapes", str(shapes)]
    code = run_harness(_fake_bench, MEMORY_COLUMNS, default_shapes=lambda d: [], argv=argv)
    return code, capsys.readouterr().out


def test_harness_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(tmp_path, ["a", "b"], capsys)
    assert code == 0 and "all_pass: true" in out and "shapes: 2" in out
    code, out = _run(tmp_path, ["a", "boom"], capsys)
    assert code == 1 and "all_pass: false" in out
    assert _read(tmp_path / "o.csv")[2] == ["boom", "2", "3", "FAIL"] + ["nan"] * 9
    code, out = _run(tmp_path, ["a", "nogpu"], capsys)
    assert code == 2


def test_a_harness_whose_clock_was_rebound_writes_no_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A kernel module runs in the harness's process: one that slows the clock the CPU timings
    # read would halve every time measured; the harness refuses to write what it measured.
    import time

    real = time.perf_counter
    shapes = tmp_path / "shapes.json"
    shapes.write_text(json.dumps([{"label": "a", "M": 2, "N": 3}]))
    argv = ["--summary-csv", str(tmp_path / "o.csv"), "--shapes", str(shapes)]
    monkeypatch.setattr(time, "perf_counter", lambda: real() * 0.5)
    code = run_harness(_fake_bench, MEMORY_COLUMNS, default_shapes=lambda d: [], argv=argv)
    monkeypatch.undo()
    assert code == 2 and not (tmp_path / "o.csv").exists()
    assert "time.perf_counter was replaced in this process" in capsys.readouterr().err
    code, _ = _run(tmp_path, ["a"], capsys)
    assert code == 0 and (tmp_path / "o.csv").exists()


def test_harness_prints_a_shapes_warnings_once_under_its_label(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shapes = tmp_path / "shapes.json"
    shapes.write_text(json.dumps([{"label": f"busy{i}", "M": 2, "N": 3} for i in (1, 2)]))
    argv = ["--summary-csv", str(tmp_path / "o.csv"), "--shapes", str(shapes)]
    assert run_harness(_fake_bench, MEMORY_COLUMNS, default_shapes=lambda d: [], argv=argv) == 0
    err = capsys.readouterr().err
    assert err.splitlines() == [  # the same warning from the same line, under each shape
        f"warning: busy{i}: 3 of 100 timed calls may have timed the host" for i in (1, 2)
    ]


def _subprocess(
    template: str, shapes: list[dict[str, object]], tmp_path: Path
) -> tuple[int, str, Path]:
    shapes_path, csv_path = tmp_path / "shapes.json", tmp_path / "out.csv"
    shapes_path.write_text(json.dumps(shapes))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [
        sys.executable,
        str(TEMPLATES / template),
        "--summary-csv",
        str(csv_path),
        "--shapes",
        str(shapes_path),
    ]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    return done.returncode, done.stdout, csv_path


def test_gemm_template_passes_then_fails_a_raising_shape(tmp_path: Path) -> None:
    good = {"label": "g16", "M": 16, "N": 24, "K": 8, "dtype": "fp32"}
    code, out, csv_path = _subprocess("gemm_harness.py", [good], tmp_path)
    assert code == 0, out
    rows = _read(csv_path)
    assert rows[0] == list(GEMM_COLUMNS) and rows[1][5] == "PASS"
    assert float(rows[1][6]) > 0 and out.rstrip().endswith("all_pass: true")
    broken = {"label": "no_k", "M": 16, "N": 24}  # raises KeyError inside the harness
    code, out, csv_path = _subprocess("gemm_harness.py", [good, broken], tmp_path)
    assert code == 1 and "failed: 1" in out
    assert _read(csv_path)[2][:6] == ["no_k", "1", "16", "24", "nan", "FAIL"]


def test_memory_and_grouped_templates_run(tmp_path: Path) -> None:
    code, out, csv_path = _subprocess(
        "memory_harness.py", [{"label": "m", "M": 8, "N": 32}], tmp_path
    )
    assert code == 0, out
    assert _read(csv_path)[0] == list(MEMORY_COLUMNS)
    shape = {"label": "sk", "B": 4, "M": 8, "N": 16, "K": 16, "distribution": "skewed"}
    code, out, csv_path = _subprocess("grouped_gemm_harness.py", [shape], tmp_path)
    assert code == 0, out
    assert _read(csv_path)[1][:6] == ["sk", "4", "8", "16", "16", "PASS"]


def test_bad_shapes_file_cannot_run(tmp_path: Path) -> None:
    code, out, _ = _subprocess("gemm_harness.py", [{"M": 1}], tmp_path)
    assert code == 2 and "cannot_run: true" in out


def test_a_wrong_kernel_fails_the_check() -> None:
    from kgit.measure.gemm import gemm_row

    def off_by_one_k(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a[:, 1:] @ b[1:]  # skips one term of every dot product

    settings = Settings(device=torch.device("cpu"), repeats=1)
    row = gemm_row({"label": "w", "M": 16, "N": 16, "K": 16}, settings, off_by_one_k)
    assert row["Check"] == "FAIL" and math.isnan(float(str(row["Forward TFLOPS"])))
    assert float(str(row["out_snr"])) < 30


def test_a_kernel_right_only_on_its_first_call_fails_the_check_after_timing() -> None:
    """The check before timing sees the first call; a result kept by shape, or a call counter
    that skips work once warm, is wrong on the calls that are timed."""
    from kgit.measure.gemm import gemm_row

    kept: dict[tuple[int, ...], torch.Tensor] = {}

    def stale_by_shape(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        key = (*a.shape, *b.shape)
        if key not in kept:
            kept[key] = (a @ b).detach()
        live = a @ b
        return kept[key] + live - live.detach()  # the first call's value, honest gradients

    calls = [0]

    def counter(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        calls[0] += 1
        live = a @ b
        return live if calls[0] == 1 else a[:, :2] @ b[:2] + live - live.detach()

    settings = Settings(device=torch.device("cpu"), repeats=2)
    shape: Shape = {"label": "w", "M": 16, "N": 16, "K": 16}
    for kernel in (stale_by_shape, counter):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            row = gemm_row(shape, settings, kernel)
        assert row["Check"] == "FAIL", kernel.__name__
        assert math.isnan(float(str(row["Forward TFLOPS"])))
        assert float(str(row["out_snr"])) < 30 < float(str(row["da_snr"]))
        # Caught on the output a timed call produced (drawn at random among them), or else by
        # the call after timing: both say the first call passed.
        said = [str(w.message) for w in caught]
        assert any("where the first call passed" in m or "where the checked calls passed" in m
                   for m in said), said  # fmt: skip
    honest = gemm_row(shape, settings, lambda a, b: a @ b)
    assert honest["Check"] == "PASS" and float(str(honest["out_snr"])) > 50


def test_the_fingerprint_reads_driver_and_clocks_through_nvml_where_it_is_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # NVML's Python bindings (nvidia-ml-py, module pynvml), faked: asked by UUID, no process run.
    import types

    from kgit.measure import harness

    asked: list[str] = []
    fake = types.ModuleType("pynvml")
    fake.NVML_CLOCK_SM, fake.NVML_TEMPERATURE_GPU = 1, 0  # type: ignore[attr-defined]
    fake.nvmlInit = lambda: None  # type: ignore[attr-defined]
    fake.nvmlShutdown = lambda: None  # type: ignore[attr-defined]
    fake.nvmlDeviceGetHandleByUUID = lambda uuid: asked.append(uuid) or "h"  # type: ignore[attr-defined]
    fake.nvmlSystemGetDriverVersion = lambda: b"570.86"  # type: ignore[attr-defined]
    fake.nvmlDeviceGetClockInfo = lambda h, kind: 1755  # type: ignore[attr-defined]
    fake.nvmlDeviceGetMaxClockInfo = lambda h, kind: 1980  # type: ignore[attr-defined]
    fake.nvmlDeviceGetTemperature = lambda h, kind: 41  # type: ignore[attr-defined]
    fake.nvmlDeviceGetPowerUsage = lambda h: 512345  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert harness._nvml("GPU-1234") == {
        "driver": "570.86",
        "sm_clock_mhz": "1755",
        "sm_clock_max_mhz": "1980",
        "temperature_c": "41",
        "power_w": "512.35",
    }
    assert asked == ["GPU-1234"]

    def refuses(uuid: str) -> str:
        raise RuntimeError("NVML_ERROR_NOT_FOUND")

    fake.nvmlDeviceGetHandleByUUID = refuses  # type: ignore[attr-defined]
    assert harness._nvml("GPU-1234") == {}  # then nvidia-smi is asked
    monkeypatch.setitem(sys.modules, "pynvml", None)  # not installed
    assert harness._nvml("GPU-1234") == {}


def test_the_fingerprint_reads_an_amd_gpu_through_amd_smi_where_it_is_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The AMD SMI Python bindings (module amdsmi), faked after their API reference: the GPU is
    # found among the processors by the UUID torch reports.
    import types

    from kgit.measure import harness

    fake = types.ModuleType("amdsmi")
    fake.AmdSmiClkType = types.SimpleNamespace(GFX="gfx")  # type: ignore[attr-defined]
    fake.AmdSmiTemperatureType = types.SimpleNamespace(EDGE="edge")  # type: ignore[attr-defined]
    fake.AmdSmiTemperatureMetric = types.SimpleNamespace(CURRENT="cur")  # type: ignore[attr-defined]
    fake.amdsmi_init = lambda: None  # type: ignore[attr-defined]
    fake.amdsmi_shut_down = lambda: None  # type: ignore[attr-defined]
    fake.amdsmi_get_processor_handles = lambda: ["h0", "h1"]  # type: ignore[attr-defined]
    uuids = {"h0": "aaaa-0000", "h1": "bbbb-1111"}
    fake.amdsmi_get_gpu_device_uuid = lambda h: uuids[h]  # type: ignore[attr-defined]
    fake.amdsmi_get_gpu_driver_info = lambda h: {"driver_version": "6.10.5"}  # type: ignore[attr-defined]
    clocks = {"h0": {"clk": 1100, "max_clk": 2100}, "h1": {"clk": 1700, "max_clk": 2100}}
    fake.amdsmi_get_clock_info = lambda h, kind: clocks[h]  # type: ignore[attr-defined]
    fake.amdsmi_get_temp_metric = lambda h, sensor, metric: 52  # type: ignore[attr-defined]
    fake.amdsmi_get_power_info = lambda h: {"average_socket_power": 611}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "amdsmi", fake)
    assert harness._amdsmi("bbbb-1111") == {
        "driver": "6.10.5",
        "sm_clock_mhz": "1700",
        "sm_clock_max_mhz": "2100",
        "temperature_c": "52",
        "power_w": "611",
    }
    assert harness._amdsmi("cccc-2222") == {}  # no processor has the UUID torch reported
    monkeypatch.setitem(sys.modules, "amdsmi", None)  # not installed
    assert harness._amdsmi("bbbb-1111") == {}


def test_a_harness_run_by_kgit_does_not_print_the_temporary_csv_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # kgit passes a CSV path of its own, deleted once read: the harness names it only when run
    # by hand.
    code, out = _run(tmp_path, ["a"], capsys)
    assert code == 0 and f"summary_csv: {tmp_path / 'o.csv'}" in out
    monkeypatch.setenv("KGIT_RUN", "1")
    code, out = _run(tmp_path, ["a"], capsys)
    assert code == 0 and "summary_csv:" not in out and "all_pass: true" in out


def test_the_drafted_cpu_shapes_run_in_the_memory_template(tmp_path: Path) -> None:
    from kgit.engine.lifecycle.define import TEMPLATES as DRAFTS

    code, out, csv_path = _subprocess("memory_harness.py", DRAFTS["memory"].cpu_shapes, tmp_path)
    assert code == 0, out
    header, *rows = _read(csv_path)
    assert [row[header.index("Check")] for row in rows] == ["PASS"] * 3


def _layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, x.shape[-1:], w, b)


def _bias(m: int, n: int, dtype: torch.dtype, device: torch.device) -> list[torch.Tensor]:
    return [0.1 * torch.randn(n, device=device, dtype=dtype)]


def test_a_memory_row_gives_the_op_its_other_operands() -> None:
    """LayerNorm's bias is an operand of its own: checked, its gradient too."""
    from kgit.measure.memory import memory_row

    def bias_dropped(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return _layer_norm(x, w, b.detach() * 0 + b.detach())  # no gradient reaches b

    settings = Settings(device=torch.device("cpu"), repeats=1)
    shape, sizes = {"label": "ln", "M": 16, "N": 64}, lambda m, n, s: (m * n * s, m * n * s)
    good = memory_row(
        shape, settings, _layer_norm, reference=_layer_norm, bytes_moved=sizes,
        other_operands=_bias,
    )  # fmt: skip
    assert good["Check"] == "PASS" and float(str(good["out_snr"])) > 60
    wrong = memory_row(
        shape, settings, bias_dropped, reference=_layer_norm, bytes_moved=sizes,
        other_operands=_bias,
    )  # fmt: skip
    assert wrong["Check"] == "FAIL"


def _rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def _wrong_at_one_element(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    out = _rmsnorm(x, w)
    return out + torch.where(torch.arange(out.numel()).reshape(out.shape) == 9, 5.0, 0.0)


def test_a_failed_check_says_its_snr_and_the_first_mismatching_element(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kgit.measure.memory import memory_row

    def bench(shape: Shape, settings: Settings) -> dict[str, object]:
        return dict(
            memory_row(
                shape,
                settings,
                _wrong_at_one_element,
                reference=_rmsnorm,
                bytes_moved=lambda m, n, size: (m * n * size, m * n * size),
            )
        )

    shapes = tmp_path / "shapes.json"
    shapes.write_text(json.dumps([{"label": "w", "M": 4, "N": 8}]))
    argv = ["--summary-csv", str(tmp_path / "o.csv"), "--shapes", str(shapes), "--repeats", "1"]
    assert run_harness(bench, MEMORY_COLUMNS, default_shapes=lambda d: [], argv=argv) == 1
    captured = capsys.readouterr()
    (why,) = [line for line in captured.err.splitlines() if "check FAIL" in line]
    assert why.startswith("warning: w: check FAIL: out_snr ")
    assert "under the 50 dB it needs" in why
    assert "first mismatch at (1, 1): got " in why and ", expected " in why
    (progress,) = [line for line in captured.out.splitlines() if line.startswith("[1/1]")]
    assert "FAIL out_snr=" in progress and "Forward GB/s=nan" in progress
