"""Device peaks for the physical floor: what the hardware can do at most, keyed by the GPU name a
harness reports in its fingerprint (`torch.cuda.get_device_name`).

Figures are the vendors' datasheet peaks, dense (without 2:4 structured sparsity, which the
datasheets' headline figures include and which a dense kernel cannot use), in TFLOPS per
precision and GB/s of device memory. `cache_mb` is the last-level cache a working set can sit in
between two calls (NVIDIA: L2; AMD CDNA 3: the Infinity Cache): a memory-bound shape that fits
there may legitimately read faster than device memory (kgit/judge/floor.py).

Sources (each vendor's product datasheet or architecture white paper):
- NVIDIA A100 Tensor Core GPU datasheet: BF16/FP16 312, TF32 156, FP32 19.5; 40 GB 1,555 GB/s,
  80 GB PCIe 1,935 GB/s, 80 GB SXM 2,039 GB/s; 40 MB L2 (A100 white paper).
- NVIDIA H100 Tensor Core GPU datasheet (sparse figures halved): SXM BF16 989.5, FP8 1,979,
  TF32 494.5, FP32 67, 3,350 GB/s; PCIe BF16 756.5, FP8 1,513, TF32 378, FP32 51, 2,000 GB/s;
  NVL BF16 835.5, FP8 1,670.5, TF32 417.5, FP32 60, 3,900 GB/s; 50 MB L2 (H100 white paper).
- NVIDIA H200 Tensor Core GPU datasheet: SXM as H100 SXM with 4,800 GB/s; NVL as H100 NVL with
  4,800 GB/s; the same GH100 die, 50 MB L2.
- AMD Instinct MI300X datasheet: BF16/FP16 1,307.4, FP8 2,614.9, TF32 653.7, FP32 (matrix)
  163.4, 5,300 GB/s HBM3; 256 MB Infinity Cache (CDNA 3 white paper).
- AMD Instinct MI325X datasheet: the MI300X's compute with 6,000 GB/s HBM3E, 256 MB Infinity Cache.
- AMD Instinct MI250X datasheet: BF16/FP16 383, FP32 (matrix) 95.7, 3,276.8 GB/s; 2 x 8 MB L2.

The datasheets state these at the boost clock they name; a chip can run a few percent above it
(an H100 SXM's figures are at 1,830 MHz, its SM clock may reach 1,980 MHz: +8.2%), which the
floor's margin covers. A name that matches no entry has no floor unless the manifest sets
`peaks:`; an ambiguous name takes the larger figure of its variants, so the floor never flags a
rate the device could reach.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class DevicePeaks:
    name: str
    tflops: dict[str, float]  # dense peak per precision: bf16, fp16, tf32, fp32, fp8
    gbps: float | None  # device memory bandwidth, GB/s (10^9 bytes per second)
    cache_mb: float = 0.0  # last-level cache, MB (2^20 bytes)


def _hopper(name: str, bf16: float, tf32: float, fp32: float, gbps: float) -> DevicePeaks:
    tflops = {"bf16": bf16, "fp16": bf16, "fp8": 2 * bf16, "tf32": tf32, "fp32": fp32}
    return DevicePeaks(name, tflops, gbps, 50.0)


_A100 = {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5}
_CDNA3 = {"bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9, "tf32": 653.7, "fp32": 163.4}

# First match wins: the more specific names come first.
DEVICES: tuple[tuple[re.Pattern[str], DevicePeaks], ...] = (
    (re.compile(r"H200.*NVL", re.I), _hopper("NVIDIA H200 NVL", 835.5, 417.5, 60.0, 4800.0)),
    (re.compile(r"H200", re.I), _hopper("NVIDIA H200 SXM", 989.5, 494.5, 67.0, 4800.0)),
    (re.compile(r"H100.*PCIe", re.I), _hopper("NVIDIA H100 PCIe", 756.5, 378.0, 51.0, 2000.0)),
    (re.compile(r"H100.*NVL", re.I), _hopper("NVIDIA H100 NVL", 835.5, 417.5, 60.0, 3900.0)),
    # "NVIDIA H100 80GB HBM3" is the SXM part; a bare "H100" takes the larger of SXM and NVL.
    (re.compile(r"H100.*HBM3|H100.*SXM", re.I), _hopper("NVIDIA H100 SXM", 989.5, 494.5, 67.0, 3350.0)),
    (re.compile(r"H100", re.I), _hopper("NVIDIA H100", 989.5, 494.5, 67.0, 3900.0)),
    (re.compile(r"A100.*(40GB|PCIE-40)", re.I), DevicePeaks("NVIDIA A100 40GB", _A100, 1555.0, 40.0)),
    (re.compile(r"A100.*80GB.*PCIe", re.I), DevicePeaks("NVIDIA A100 80GB PCIe", _A100, 1935.0, 40.0)),
    (re.compile(r"A100", re.I), DevicePeaks("NVIDIA A100 80GB SXM", _A100, 2039.0, 40.0)),
    (re.compile(r"MI325X", re.I), DevicePeaks("AMD Instinct MI325X", _CDNA3, 6000.0, 256.0)),
    (re.compile(r"MI300X", re.I), DevicePeaks("AMD Instinct MI300X", _CDNA3, 5300.0, 256.0)),
    (
        re.compile(r"MI250X?\b", re.I),
        DevicePeaks("AMD Instinct MI250X", {"bf16": 383.0, "fp16": 383.0, "fp32": 95.7}, 3276.8, 16.0),
    ),
)  # fmt: skip


def device_peaks(gpu: str | None) -> DevicePeaks | None:
    """The datasheet peaks of the GPU a fingerprint names, None when kgit does not know it."""
    if not gpu:
        return None
    return next((peaks for pattern, peaks in DEVICES if pattern.search(gpu)), None)
