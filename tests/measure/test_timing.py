from __future__ import annotations

import time

import pytest
import torch

from kgit.measure.timing import Timing, nbytes, time_fn


def test_cpu_fallback_gives_every_timed_call_fresh_inputs() -> None:
    seen: list[int] = []
    made = 0

    def make() -> tuple[torch.Tensor, torch.Tensor]:
        nonlocal made
        made += 1
        return torch.randn(32, 32), torch.randn(32, 32)

    def op(pair: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        seen.append(id(pair[0]))
        return pair[0] @ pair[1]

    timing = time_fn(make, op, repeats=20, warmup_ms=0.0, min_time_ms=0.0)
    timed = seen[-20:]
    assert len(set(timed)) == 20, "two timed calls shared an input object"
    assert seen[0] not in timed, "the warm-up input was reused in a timed call"
    assert made == 21
    assert timing.method == "perf_counter" and len(timing.samples) == 20


def test_cpu_timing_measures_the_call() -> None:
    timing = time_fn(lambda: torch.zeros(1), lambda _: time.sleep(0.004), repeats=5, warmup_ms=0.0)
    assert 3.5 < timing.median_ms < 40.0
    assert min(timing.samples) <= timing.median_ms <= max(timing.samples)
    assert timing.std_ms >= 0.0


def test_warm_up_runs_for_the_asked_time() -> None:
    calls = 0

    def op(_: object) -> None:
        nonlocal calls
        calls += 1
        time.sleep(0.001)

    start = time.perf_counter()
    time_fn(lambda: torch.zeros(1), op, repeats=1, warmup_ms=30.0)
    assert time.perf_counter() - start >= 0.03
    assert calls > 10


def test_short_calls_get_samples_spanning_min_time() -> None:
    timing = time_fn(
        lambda: torch.zeros(1),
        lambda _: time.sleep(0.002),
        repeats=5,
        warmup_ms=5.0,
        min_time_ms=60.0,
    )
    assert len(timing.samples) >= 20  # 60 ms of 2 ms calls (sleep overshoots a little)
    assert len(timing.samples) <= 31


def test_pool_is_capped_by_its_byte_budget() -> None:
    timing = time_fn(
        lambda: torch.zeros(256),
        lambda x: x.sum(),
        repeats=50,
        warmup_ms=0.0,
        pool_bytes=10 * 1024,
        min_time_ms=0.0,
    )
    assert len(timing.samples) == 10  # ten 1 KiB sets fit; no set is timed twice


def test_statistics() -> None:
    timing = Timing.from_samples([1.0, 2.0, 3.0, 10.0], "x")
    assert timing.median_ms == 2.5 and timing.mean_ms == 4.0
    assert timing.std_ms == pytest.approx(3.5355339)
    with pytest.raises(ValueError):
        Timing.from_samples([], "x")
    assert nbytes({"a": [torch.zeros(4), torch.zeros(2, dtype=torch.float16)], "b": 3}) == 20


@pytest.mark.gpu
def test_cuda_events_and_graph_time_a_matmul() -> None:
    def make() -> tuple[torch.Tensor, torch.Tensor]:
        return (torch.randn(2048, 2048, device="cuda"), torch.randn(2048, 2048, device="cuda"))

    events = time_fn(make, lambda p: p[0] @ p[1], repeats=30, warmup_ms=100.0)
    graph = time_fn(make, lambda p: p[0] @ p[1], repeats=30, warmup_ms=100.0, cuda_graph=True)
    assert events.method.startswith("cuda-events") and graph.method == "cuda-graph"
    assert 0.0 < graph.median_ms < 10.0 and 0.0 < events.median_ms < 10.0


@pytest.mark.gpu
def test_a_host_bound_call_is_timed_on_the_gpu() -> None:
    # 0.3 ms of host work per call around a kernel of a few microseconds: events around the call
    # would read the host's time unless the GPU is held back until the host has queued the calls.
    def op(x: torch.Tensor) -> torch.Tensor:
        time.sleep(0.0003)
        return x + 1

    timing = time_fn(lambda: torch.randn(4096, device="cuda"), op, repeats=200, warmup_ms=50.0)
    assert timing.method.endswith("+lead")
    assert timing.host_bound_samples == 0
    assert timing.median_ms < 0.1, f"timed the host: median {timing.median_ms:.3f} ms"


@pytest.mark.gpu
def test_the_lead_follows_timed_calls_that_cost_the_host_more_than_the_warm_up() -> None:
    # The warm-up's input set costs the host 0.15 ms a call, every timed one 0.6 ms: a lead sized
    # from the warm-up alone (0.3 ms a call) lets the GPU catch up in every chunk of 32.
    made: list[torch.Tensor] = []

    def make() -> torch.Tensor:
        made.append(torch.randn(4096, device="cuda"))
        return made[-1]

    def op(x: torch.Tensor) -> torch.Tensor:
        time.sleep(0.00015 if x is made[0] else 0.0006)
        return x + 1

    timing = time_fn(make, op, repeats=320, warmup_ms=50.0)
    assert timing.method.endswith("+lead")
    assert timing.host_bound_samples <= 64, timing.host_bound_samples
    assert timing.median_ms < 0.1, f"timed the host: median {timing.median_ms:.3f} ms"
