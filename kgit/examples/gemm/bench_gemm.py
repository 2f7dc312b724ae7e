"""Quick harness for the example GEMM: the GEMM template with this folder's kernel plugged in.

    python bench_gemm.py --summary-csv out.csv [--shapes shapes.json] [--repeats N]

Writes the frozen GEMM schema; exit 0 all PASS, 1 some FAIL, 2 cannot run here.
"""

from __future__ import annotations

import gemm_kernel  # imported before anything jit-decorates: it selects the interpreter on CPU
import torch

from kgit.measure.gemm import gemm_row
from kgit.measure.harness import Settings, run_harness
from kgit.measure.report import Row
from kgit.measure.shapes import Shape
from kgit.records.schema import GEMM_COLUMNS


def default_shapes(device: torch.device) -> list[Shape]:
    if device.type == "cuda":
        sizes = [(256, 256, 256), (1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192)]
        shapes = [{"label": f"gemm_{m}x{n}x{k}", "M": m, "N": n, "K": k} for m, n, k in sizes]
        return [*shapes, {"label": "gemm_4096x14336x4096", "M": 4096, "N": 14336, "K": 4096}]
    # Triton's interpreter costs time per program and per K-step: tiny shapes only.
    sizes = [(64, 64, 64), (128, 128, 128), (128, 256, 128)]
    return [
        {"label": f"gemm_{m}x{n}x{k}", "M": m, "N": n, "K": k, "dtype": "fp32"} for m, n, k in sizes
    ]


def bench_one_shape(shape: Shape, settings: Settings) -> Row:
    return gemm_row(shape, settings, gemm_kernel.matmul)


if __name__ == "__main__":
    raise SystemExit(run_harness(bench_one_shape, GEMM_COLUMNS, default_shapes=default_shapes))
