"""kgit quick harness template: a memory-bound op (x, w, *others) -> y, frozen memory schema.

The op shipped here is RMSNorm; for another op, change `op`, `reference` and `bytes_moved`, and
give the kernel's other operands (LayerNorm's bias) in `other_operands`.
Copy into the campaign, plug the kernel in where marked, run:

    python bench/quick_test_bench.py --summary-csv out.csv [--shapes shapes.json] [--repeats N]

Shapes: a JSON list of {"label", "M", "N", optional "dtype": bf16|fp16|fp32}. Without a GPU,
kernels run in Triton's interpreter (TRITON_INTERPRET=1): keep shapes small and in fp32 there.
Exit 0 all PASS, 1 some FAIL (a shape that raises is a FAIL row of NaN), 2 cannot run here.
"""

from __future__ import annotations

import torch

from kgit.measure.harness import Settings, run_harness
from kgit.measure.memory import memory_row
from kgit.measure.report import Row
from kgit.measure.shapes import Shape
from kgit.records.schema import MEMORY_COLUMNS

EPS = 1e-6


def other_operands(m: int, n: int, dtype: torch.dtype, device: torch.device) -> list[torch.Tensor]:
    # The kernel's operands after x and w, made fresh for every call like them and checked
    # (their gradients too). RMSNorm has none; LayerNorm's bias would be
    # `[0.1 * torch.randn(n, device=device, dtype=dtype)]`, then `op(x, w, b)`.
    return []


def reference(x: torch.Tensor, w: torch.Tensor, *others: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS) * w


# >>> plug in the kernel under optimization: a differentiable y = op(x, w, *others), x: M×N,
# w: N, others: from other_operands. <<<
def op(x: torch.Tensor, w: torch.Tensor, *others: torch.Tensor) -> torch.Tensor:
    return reference(x, w, *others)


def bytes_moved(m: int, n: int, size: int) -> tuple[int, int]:
    # The least the op must move. Forward: read x and w, write y. Backward: read x, dy and w,
    # write dx and dw. Bytes the kernel re-reads do not count: GB/s is against this floor.
    # Count other operands too (a bias: n more read forward, n read and n written backward).
    return (2 * m * n + n) * size, (3 * m * n + 2 * n) * size


def default_shapes(device: torch.device) -> list[Shape]:
    sizes = [(4096, 4096), (16384, 4096), (32768, 8192)] if device.type == "cuda" else [(64, 256)]
    return [{"label": f"x_{m}x{n}", "M": m, "N": n} for m, n in sizes]


def bench_one_shape(shape: Shape, settings: Settings) -> Row:
    return memory_row(
        shape,
        settings,
        op,
        reference=reference,
        bytes_moved=bytes_moved,
        other_operands=other_operands,
    )


if __name__ == "__main__":
    raise SystemExit(run_harness(bench_one_shape, MEMORY_COLUMNS, default_shapes=default_shapes))
