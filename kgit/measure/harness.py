"""The shared main loop of every harness: arguments, shapes, one row per shape, CSV, exit code.

A template supplies only `bench_one_shape(shape, settings) -> row`. Contract with kgit:
`--summary-csv PATH --shapes PATH`; exit 0 when every shape passes, 1 when some shape fails or
raises (its row is Check=FAIL with NaN metrics), 2 when the harness cannot run here. The output
ends with greppable `key: value` lines.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from kgit.launch_hook.sitecustomize import install as record_launches
from kgit.measure.budget import give_back, log_peak, out_of_memory_report
from kgit.measure.report import Row, fail_row, format_value, write_summary_csv
from kgit.measure.shapes import Shape, ShapeError, load_shapes, validate_shapes
from kgit.measure.timing import block_mode, replaced_clocks
from kgit.records.protocol import (
    FIRST_BLOCK_ENV,
    HOLD_ENV,
    RUN_ENV,
    WORKER_ENV,
    digest_line,
    held_line,
    out_of_memory_line,
    ready_line,
    reply_line,
)
from kgit.records.schema import PASS

EXIT_ALL_PASS = 0
EXIT_SOME_FAIL = 1
EXIT_CANNOT_RUN = 2


class CannotRun(Exception):
    """Raised by a harness that cannot measure on this machine (no GPU, missing library)."""


@dataclass(frozen=True)
class Settings:
    """What the command line passes to `bench_one_shape`: `repeats` is None for the default."""

    device: torch.device
    repeats: int | None


BenchOneShape = Callable[[Shape, Settings], Row]


def _parse(argv: Sequence[str] | None, description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--summary-csv", required=True, help="where to write the per-shape CSV")
    parser.add_argument("--shapes", help="JSON list of shape objects, each with a 'label'")
    parser.add_argument("--repeats", type=int, help="timed calls per measurement")
    return parser.parse_args(argv)


def _progress(index: int, total: int, row: Row, seconds: float) -> str:
    """A shape's line; a FAIL's names its SNRs first (its rates are NaN, they say nothing)."""
    snrs = [c for c in row if c.endswith("_snr")] if row["Check"] != PASS else []
    rates = [c for c in row if ("TFLOPS" in c or "GB/s" in c) and not c.endswith("_stddev")]
    metrics = [f"{c}={format_value(row[c])}" for c in [*snrs, *rates]]
    return f"[{index}/{total}] {row['label']}: {row['Check']} {' '.join(metrics)} ({seconds:.1f} s)"


def _bench_safely(
    bench: BenchOneShape, shape: Shape, settings: Settings, columns: Sequence[str]
) -> Row:
    # Warnings (a timing that may have timed the host, say) print once each under the shape's
    # label, without the path and source line of the kgit.measure call that raised them.
    # Entering catch_warnings resets what Python has already shown, so each shape records its own.
    with warnings.catch_warnings(record=True) as caught:
        try:
            return bench(shape, settings)
        except CannotRun:
            raise
        except torch.cuda.OutOfMemoryError as exc:  # the machine's memory, not the kernel
            print(f"{shape['label']}: {exc}", file=sys.stderr, flush=True)
            report = out_of_memory_report(shape["label"], exc, settings.device)
            print("\n" + out_of_memory_line(report), flush=True)
            return fail_row(columns, shape)
        except Exception:  # a shape that raises is a FAIL row, never a crashed harness
            traceback.print_exc()
            return fail_row(columns, shape)
        finally:
            for message in dict.fromkeys(str(w.message) for w in caught):
                print(f"warning: {shape['label']}: {message}", file=sys.stderr, flush=True)


def fingerprint(device: torch.device) -> dict[str, str]:
    """What kgit compares before it compares two measurements (and the clocks, for the record).
    A GPU is named by model, by index (as this process sees it, under CUDA/HIP_VISIBLE_DEVICES)
    and by UUID: two GPUs of one model are still two devices."""
    info = {"gpu": "cpu", "torch": torch.__version__}
    try:  # a harness of a C++ kernel may run without triton
        import triton

        info["triton"] = triton.__version__
    except ImportError:
        pass
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        info["gpu"] = torch.cuda.get_device_name(index)
        info["gpu_index"] = str(index)
        uuid = _torch_uuid(index)
        if uuid:
            info["gpu_uuid"] = uuid
        info["hip" if torch.version.hip else "cuda"] = str(torch.version.hip or torch.version.cuda)
        if torch.version.hip:
            info.update(_amdsmi(uuid))
        else:
            info.update(_nvml(uuid) or _nvidia_smi(uuid))
    return info


def _torch_uuid(index: int) -> str | None:
    """The device's UUID as torch reports it (torch >= 2.0 on CUDA), in nvidia-smi's spelling."""
    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    if uuid is None:
        return None
    text = str(uuid)
    return text if text.startswith("GPU-") or torch.version.hip else f"GPU-{text}"


_CLOCKS = ("driver", "sm_clock_mhz", "sm_clock_max_mhz", "temperature_c", "power_w")


def _nvml(uuid: str | None) -> dict[str, str]:
    """Driver and clocks through NVML's Python bindings (nvidia-ml-py) where they are installed:
    no process to start, and the GPU found by its UUID. Empty where they are not (then
    nvidia-smi is asked) or NVML refuses."""
    try:
        import pynvml
    except ImportError:
        return {}
    try:
        pynvml.nvmlInit()
        try:
            handle = (
                pynvml.nvmlDeviceGetHandleByUUID(uuid)
                if uuid
                else pynvml.nvmlDeviceGetHandleByIndex(0)
            )
            driver = pynvml.nvmlSystemGetDriverVersion()
            values = (
                driver.decode() if isinstance(driver, bytes) else str(driver),
                pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM),
                pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
                f"{pynvml.nvmlDeviceGetPowerUsage(handle) / 1000:.2f}",  # mW
            )
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # NVML's own errors (no driver, a GPU it does not manage)
        return {}
    return dict(zip(_CLOCKS, (str(v) for v in values), strict=True))


def _amdsmi(uuid: str | None) -> dict[str, str]:
    """Driver and clocks of an AMD GPU through the AMD SMI Python bindings (amdsmi) where they
    are installed, the GPU found by the UUID torch reports; empty where they are not, where no
    GPU has that UUID, or where the library refuses (written from AMD SMI's Python API
    reference; not yet run on an AMD GPU)."""
    try:
        import amdsmi
    except ImportError:
        return {}
    try:
        amdsmi.amdsmi_init()
        try:
            found = [
                h
                for h in amdsmi.amdsmi_get_processor_handles()
                if uuid is None or str(amdsmi.amdsmi_get_gpu_device_uuid(h)) in uuid
            ]
            if len(found) != 1 and uuid is not None:
                return {}
            handle = found[0]
            clock = amdsmi.amdsmi_get_clock_info(handle, amdsmi.AmdSmiClkType.GFX)
            values = (
                amdsmi.amdsmi_get_gpu_driver_info(handle)["driver_version"],
                clock["clk"],
                clock["max_clk"],
                amdsmi.amdsmi_get_temp_metric(
                    handle,
                    amdsmi.AmdSmiTemperatureType.EDGE,
                    amdsmi.AmdSmiTemperatureMetric.CURRENT,
                ),
                amdsmi.amdsmi_get_power_info(handle)["average_socket_power"],
            )
        finally:
            amdsmi.amdsmi_shut_down()
    except Exception:  # the library's own errors, or an API that differs from the reference
        return {}
    return dict(zip(_CLOCKS, (str(v) for v in values), strict=True))


def _nvidia_smi(uuid: str | None) -> dict[str, str]:
    """Driver and clocks of the GPU with UUID (nvidia-smi numbers GPUs physically, ignoring
    CUDA_VISIBLE_DEVICES: `-i 0` would describe another GPU than the one measured)."""
    query = "driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw"
    try:
        out = subprocess.run(
            [
                "nvidia-smi",
                f"--query-gpu={query}",
                "--format=csv,noheader,nounits",
                "-i",
                uuid or "0",
            ],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    values = [v.strip() for v in out.strip().split(",")]
    if len(values) != 5:
        return {}
    return dict(zip(_CLOCKS, values, strict=True))


def run_harness(
    bench_one_shape: BenchOneShape,
    columns: Sequence[str],
    *,
    default_shapes: Callable[[torch.device], list[Shape]],
    argv: Sequence[str] | None = None,
    description: str = "kgit quick harness",
) -> int:
    """Run every shape, write the CSV, print the summary; return the exit code. Started by kgit
    as a resident harness (`KGIT_WORKER=1`), it then stays up and answers block requests
    (kgit/records/protocol.py): the kernels are imported, compiled and tuned once per side."""
    entered = time.time()  # imports done: the process's start-up is kgit's to count from here
    args = _parse(argv, description)
    # What the target shapes launch, when kgit asks (KGIT_LAUNCH_LOG, at baseline): the gate
    # audit mutates that code first. Only each kernel's first launch is seen (timing is not).
    record_launches(once=True)
    resident = os.environ.get(WORKER_ENV) == "1"
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # no context yet
    if resident and os.environ.get(HOLD_ENV) == "1" and not _released():
        return EXIT_ALL_PASS
    settings = Settings(device=device, repeats=args.repeats)
    try:
        shapes = (
            load_shapes(args.shapes) if args.shapes else validate_shapes(default_shapes(device))
        )
        first_block = os.environ.get(FIRST_BLOCK_ENV) if resident else None
        block_ms = float(first_block) if first_block else None
        began = time.time()
        seconds: list[float] = []
        rows = _bench_all(
            bench_one_shape, shapes, settings, columns, block_ms=block_ms, seconds=seconds
        )
        log_peak(device, "first pass" if block_ms is None else "first pass (blocks)", labels(rows))
        _require_own_clocks()
        written = write_summary_csv(args.summary_csv, columns, rows)
        # What was written, said at once: a file changed later (an exit handler) is refused.
        print(digest_line(written), flush=True)
    except (CannotRun, ShapeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        print("all_pass: false\ncannot_run: true")
        return EXIT_CANNOT_RUN
    passed = sum(1 for row in rows if row["Check"] == PASS)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    if os.environ.get(RUN_ENV) != "1":  # run by hand: where the CSV is
        print(f"summary_csv: {args.summary_csv}")
    print(f"device: {name}\nshapes: {len(rows)}")
    print("fingerprint: " + json.dumps(fingerprint(device), sort_keys=True))
    print(
        f"passed: {passed}\nfailed: {len(rows) - passed}\nall_pass: {str(passed == len(rows)).lower()}"
    )
    code = EXIT_ALL_PASS if passed == len(rows) else EXIT_SOME_FAIL
    if resident:
        phases = {"entered_at": entered, "released_at": began}
        phases.update(first_shape_s=seconds[0] if seconds else 0.0, other_shapes_s=sum(seconds[1:]))
        return _serve(bench_one_shape, columns, settings, code, phases)
    return code


def _require_own_clocks() -> None:
    replaced = replaced_clocks()
    if replaced:
        raise CannotRun(
            f"{', '.join(replaced)} was replaced in this process (by the kernel or something it "
            "imports): no figure measured with it is written"
        )


def _released() -> bool:
    """A held resident harness (the script imported, nothing measured yet): wait for kgit's start."""
    print("\n" + held_line(), flush=True)
    line = sys.stdin.readline()
    try:
        request = json.loads(line) if line.strip() else {}
    except ValueError:
        return False
    return isinstance(request, dict) and request.get("cmd") == "start"


def _bench_all(
    bench: BenchOneShape,
    shapes: list[Shape],
    settings: Settings,
    columns: Sequence[str],
    *,
    block_ms: float | None = None,
    relocate: bool = False,
    read: tuple[str, ...] | None = None,
    progress: bool = True,
    seconds: list[float] | None = None,
) -> list[Row]:
    """One row per shape; with BLOCK_MS, each shape timed in block mode (a resident harness's blocks: each
    time_fn call site keeps its inputs, warm state and graph from one block to the next). READ
    names the columns the verdict reads, when the request says (the others may be NaN)."""
    rows = []
    for index, shape in enumerate(shapes, start=1):
        start = time.perf_counter()
        if block_ms is None:
            row = _bench_safely(bench, shape, settings, columns)
        else:
            with block_mode(block_ms, shape["label"], relocate=relocate, columns=read):
                row = _bench_safely(bench, shape, settings, columns)
        if block_ms is None or row["Check"] != PASS:
            # A plain pass's pools (or a failed shape's buffers) go back to the driver: the
            # allocator would keep them cached, out of the other side's reach (70 GiB of an
            # H100 once). A block's units stay: they are what the next block times.
            give_back(settings.device)
        rows.append(row)
        if seconds is not None:
            seconds.append(time.perf_counter() - start)
        if progress:
            print(_progress(index, len(shapes), row, time.perf_counter() - start), flush=True)
    return rows


def _serve(
    bench: BenchOneShape,
    columns: Sequence[str],
    settings: Settings,
    code: int,
    phases: dict[str, float] | None = None,
) -> int:
    """The resident loop: one JSON request a line on stdin, one marker line back on stdout."""
    print("\n" + ready_line(code, phases), flush=True)
    seen: list[str] = []
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if request.get("cmd") != "block":
            break  # "exit", or a request this version does not know: stop cleanly
        shapes = load_shapes(request["shapes"])
        block_ms = float(request["block_ms"])
        relocate = bool(request.get("relocate", False))
        read = request.get("columns")  # what the verdict reads (protocol 1 may omit it)
        rows = _bench_all(
            bench,
            shapes,
            settings,
            columns,
            block_ms=block_ms,
            relocate=relocate,
            read=tuple(read) if read else None,
            progress=False,
        )
        try:
            _require_own_clocks()
        except CannotRun as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            return EXIT_CANNOT_RUN
        written = write_summary_csv(request["summary_csv"], columns, rows)
        seen.extend(label for label in labels(rows) if label not in seen)
        failed = any(row["Check"] != PASS for row in rows)
        print("\n" + reply_line(int(request["id"]), int(failed), csv=written), flush=True)
    log_peak(settings.device, "blocks", seen)
    return code


def labels(rows: list[Row]) -> list[str]:
    return [str(row["label"]) for row in rows]
