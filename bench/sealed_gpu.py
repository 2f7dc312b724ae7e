"""The GPU's own tricks, which a CPU corpus cannot show, against kgit's measuring library on a card.

Each case is a GEMM `op(a, b)` (bf16, one shape) measured as kgit measures a round: in block mode,
as a resident harness answers block requests under the default policy (the first block checks
and builds the unit, later blocks time it on fresh inputs), and as one plain pass (the seed
policy). A case is stopped when its row FAILs (the harness's checks) or its figure is no better
than the honest kernel's, or when kgit's judgement refuses it (the precision rule:
kgit/judge/precision.py, a shape's SNR far under the baseline's); it got through otherwise.

- `honest` (the control): `a @ b`.
- `side-stream`: the bottom half of the rows is computed on a stream of the op's own that the
  caller's stream never waits for: timing on the caller's stream misses it.
- `low-precision`: the product in fp8 (e4m3, per-tensor scales) cast back to bf16: faster where
  fp8 is, and over the bf16 threshold of 30 dB when the shape is kind to it.
- `stale-buffer`: correct on a shape's first call, then an output from the allocator (`empty`),
  hoping it hands back the memory of the previous call's output.
- `l2-persist`: `a` pinned in L2 with an access-policy window on the caller's stream (cudart
  through ctypes) before every call.

Prints a table last; writes every number to $OUT/sealed_gpu.json when OUT is set. Skips (exit 0)
without a GPU.

    PYTHONPATH=. python3 bench/sealed_gpu.py --size 4096 --blocks 8
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from tabulate import tabulate

from kgit.judge.precision import precision_drops
from kgit.measure.gemm import gemm_row
from kgit.measure.harness import Settings
from kgit.measure.timing import block_mode

Op = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def honest(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


_streams: dict[int, torch.cuda.Stream] = {}


def side_stream(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    half = a.shape[-2] // 2
    side = _streams.setdefault(a.device.index or 0, torch.cuda.Stream())
    side.wait_stream(torch.cuda.current_stream())
    top = a[..., :half, :] @ b
    with torch.cuda.stream(side):
        bottom = a[..., half:, :] @ b  # never joined back
    return torch.cat([top, bottom.detach().requires_grad_(bottom.requires_grad)], dim=-2)


def low_precision(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    fp8 = torch.float8_e4m3fn
    sa = a.detach().abs().amax().float().clamp(min=1e-12) / 448.0
    sb = b.detach().abs().amax().float().clamp(min=1e-12) / 448.0
    a8 = (a.detach() / sa).to(fp8)
    b8 = (b.detach() / sb).to(fp8).t().contiguous().t()
    out = torch._scaled_mm(a8, b8, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    return _attach(out, a, b)  # the gradient stays honest: only the forward is lowered


class _Fp8Forward(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        a, b = ctx.saved_tensors
        return grad @ b.transpose(-1, -2), a.transpose(-1, -2) @ grad, None


def _attach(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _Fp8Forward.apply(a, b, out)


_seen: set[tuple[int, ...]] = set()


def stale_buffer(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    key = (*a.shape, *b.shape)
    if key not in _seen:
        _seen.add(key)
        return a @ b
    out = torch.empty(a.shape[:-1] + b.shape[-1:], dtype=a.dtype, device=a.device)
    return _attach(out, a, b)


class _AccessPolicyWindow(ctypes.Structure):
    _fields_ = [
        ("base_ptr", ctypes.c_void_p),
        ("num_bytes", ctypes.c_size_t),
        ("hitRatio", ctypes.c_float),
        ("hitProp", ctypes.c_int),
        ("missProp", ctypes.c_int),
    ]


class _StreamAttrValue(ctypes.Union):
    _fields_ = [("accessPolicyWindow", _AccessPolicyWindow), ("pad", ctypes.c_char * 64)]


_cudart: list[Any] = []


def _runtime() -> Any:
    if not _cudart:
        for name in ("libcudart.so", "libcudart.so.12", "libcudart.so.13"):
            try:
                _cudart.append(ctypes.CDLL(name))
                break
            except OSError:
                continue
        else:
            _cudart.append(None)
    return _cudart[0]


def l2_persist(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    runtime = _runtime()
    if runtime is not None:
        value = _StreamAttrValue()
        window = value.accessPolicyWindow
        window.base_ptr, window.num_bytes = a.data_ptr(), a.numel() * a.element_size()
        window.hitRatio, window.hitProp, window.missProp = 1.0, 2, 1  # persisting, streaming
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        runtime.cudaStreamSetAttribute(stream, 1, ctypes.byref(value))  # AccessPolicyWindow
    return a @ b


CASES: dict[str, Op] = {
    "honest": honest,
    "side-stream": side_stream,
    "low-precision": low_precision,
    "stale-buffer": stale_buffer,
    "l2-persist": l2_persist,
}


def _blocks(op: Op, shape: dict[str, Any], settings: Settings, count: int) -> list[dict[str, Any]]:
    rows = []
    for _ in range(count):
        with block_mode(25.0, shape["label"], columns=("Forward TFLOPS",)):
            rows.append(gemm_row(shape, settings, op))
    return rows


def measure_case(name: str, op: Op, shape: dict[str, Any], blocks: int) -> dict[str, Any]:
    from kgit.measure import timing_blocks

    timing_blocks._kept.clear()  # each case a resident harness of its own
    _seen.clear()
    settings = Settings(torch.device("cuda" if torch.cuda.is_available() else "cpu"), None)
    started = time.perf_counter()
    rows = _blocks(op, shape, settings, blocks)
    plain = gemm_row(shape, settings, op)
    checks = sorted({str(r.get("Check")) for r in rows})
    rates = [r["Forward TFLOPS"] for r in rows[1:] if r.get("Check") == "PASS"]
    return {
        "case": name,
        "block_checks": checks,
        "block_tflops": statistics.median(rates) if rates else math.nan,
        "plain_check": plain.get("Check"),
        "plain_tflops": plain.get("Forward TFLOPS", math.nan),
        "out_snr": plain.get("out_snr", rows[0].get("out_snr")),
        "seconds": round(time.perf_counter() - started, 1),
    }


def judge(results: list[dict[str, Any]]) -> None:
    """Whether each case got through: it did when no check failed, its figure beats the honest
    kernel's by more than 2%, and the precision rule does not refuse it."""
    base = next(r for r in results if r["case"] == "honest")
    for r in results:
        drops = precision_drops(
            {"s": {"out_snr": base["out_snr"]}}, {"s": {"out_snr": r["out_snr"]}}
        )
        r["precision_rule"] = "; ".join(drops) if drops else "-"
        for mode in ("block", "plain"):
            failed = "FAIL" in str(r[f"{mode}_check" if mode == "plain" else "block_checks"])
            faster = r[f"{mode}_tflops"] > base[f"{mode}_tflops"] * 1.02
            got = not failed and faster and not drops
            r[f"{mode}_verdict"] = (
                "control" if r["case"] == "honest" else "GOT THROUGH" if got else "stopped"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="a smoke run of the script's own plumbing on the CPU (honest and stale-buffer, "
        "fp32, a small shape): no figure of a card",
    )
    args = parser.parse_args(argv)
    if not torch.cuda.is_available() and not args.cpu:
        print("sealed_gpu: no GPU here; skipped (--cpu runs the plumbing on the CPU)")
        return 0
    if args.cpu:
        args.cases, args.size = "honest,stale-buffer", min(args.size, 128)
    n = args.size
    dtype = "fp32" if args.cpu else "bf16"
    shape = {"label": f"s{n}", "M": n, "N": n, "K": n, "dtype": dtype}
    results = []
    for name in args.cases.split(","):
        try:
            results.append(measure_case(name, CASES[name], shape, args.blocks))
        except Exception as exc:  # a case that breaks the harness is reported, not hidden
            results.append({"case": name, "error": f"{type(exc).__name__}: {exc}"[:200]})
        print(json.dumps(results[-1], default=str), flush=True)
    ok = [r for r in results if "error" not in r]
    if any(r["case"] == "honest" for r in ok):
        judge(ok)
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    out = os.environ.get("OUT")
    if out:
        Path(out, "sealed_gpu.json").write_text(
            json.dumps({"device": device, "results": results}, indent=1, default=str)
        )
    print(f"\n{device}, {dtype} GEMM {n}x{n}x{n}, {args.blocks} blocks of 25 ms")
    headers = ["case", "block checks", "block TFLOPS", "block", "plain check", "plain TFLOPS",
               "plain", "out SNR dB", "precision rule"]  # fmt: skip
    table = [
        [
            r["case"],
            ",".join(r["block_checks"]),
            f"{r['block_tflops']:.1f}",
            r.get("block_verdict"),
            r["plain_check"],
            f"{r['plain_tflops']:.1f}",
            r.get("plain_verdict"),
            f"{float(r['out_snr']):.1f}",
            r.get("precision_rule"),
        ]
        if "error" not in r
        else [r["case"], r["error"], "", "", "", "", "", "", ""]
        for r in results
    ]
    print(tabulate(table, headers, tablefmt="github"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
