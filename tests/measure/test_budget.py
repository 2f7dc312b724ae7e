"""A measuring side's device-memory budget, on CPU with the device's memory query faked: a small
card, a card already half full, an empty card the first side must not take."""

from __future__ import annotations

import gc
import json
import warnings
import weakref
from pathlib import Path

import pytest
import torch

from kgit.engine.measuring.harness.passes import HarnessError, require_memory
from kgit.measure import timing_blocks
from kgit.measure.budget import asked_bytes, budget
from kgit.measure.harness import Settings, run_harness
from kgit.measure.report import fail_row
from kgit.measure.shapes import Shape
from kgit.measure.timing_core import pool_size
from kgit.records.protocol import MEMORY_SHARE_ENV
from kgit.records.schema import MEMORY_COLUMNS

GiB = 1024**3
CUDA = torch.device("cuda", 0)


def fake_card(
    monkeypatch: pytest.MonkeyPatch, *, total: int, free: int, reserved: int = 0, allocated: int = 0
) -> None:
    """The device's memory as torch would report it: the card's TOTAL and FREE bytes, and what
    this process's allocator has RESERVED and ALLOCATED of it."""
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (free, total))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: reserved)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: allocated)


def test_the_first_side_on_an_empty_card_plans_for_its_share_of_the_total_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An 80 GB card, nothing on it yet: the first side must leave the other side its share.
    fake_card(monkeypatch, total=80 * GiB, free=80 * GiB)
    assert budget(CUDA).limit == 20 * GiB
    # A 32 MiB input set, 2000 calls wanted (a short kernel): the pool fits in the share.
    sets = pool_size(2000, 32 * 1024**2, CUDA, None)
    assert sets * 32 * 1024**2 <= 20 * GiB - 32 * 1024**2 and sets > 600


def test_the_second_side_of_a_card_half_full_still_gets_its_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The other side holds 40 GiB of 80: this side plans for its 20, not a share of the 40 free.
    fake_card(monkeypatch, total=80 * GiB, free=40 * GiB)
    assert budget(CUDA).limit == 20 * GiB
    # Others fill the card to 70 GiB: half of what is left, so the other side gets room too.
    fake_card(monkeypatch, total=80 * GiB, free=10 * GiB)
    assert budget(CUDA).limit == 5 * GiB
    # What this process already holds counts as its own.
    fake_card(monkeypatch, total=80 * GiB, free=10 * GiB, reserved=6 * GiB, allocated=4 * GiB)
    side = budget(CUDA)
    assert (side.limit, side.spare) == (11 * GiB, 7 * GiB)


def test_a_small_card_gives_fewer_sets_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_card(monkeypatch, total=16 * GiB, free=16 * GiB)  # 4 GiB for this side
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert pool_size(100, 1 * GiB, CUDA, None) == 3  # 3 sets and room for one more
        assert not caught
        assert pool_size(100, 2 * GiB, CUDA, None) == 1  # degraded, not failed
    assert len(caught) == 1 and "memory short: 1 input set(s) of 2.00 GiB" in str(caught[0].message)
    # Two units alive at once (a relocation) share the room.
    assert pool_size(100, 512 * 1024**2, CUDA, None, copies=2) == 3


def test_the_share_is_the_users_knob(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_card(monkeypatch, total=80 * GiB, free=80 * GiB)
    monkeypatch.setenv(MEMORY_SHARE_ENV, "0.1")
    assert budget(CUDA).limit == 8 * GiB
    monkeypatch.setenv(MEMORY_SHARE_ENV, "2")
    with pytest.raises(ValueError, match=MEMORY_SHARE_ENV):
        budget(CUDA)


def test_a_relocation_frees_the_old_unit_first_only_when_memory_is_short(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    alive_at_build: list[bool] = []
    old = timing_blocks._BlockTimer.placeholder()
    old.bytes = 3 * GiB
    gone = weakref.ref(old)

    def make() -> timing_blocks._BlockTimer:
        gc.collect()
        alive_at_build.append(gone() is not None)
        return timing_blocks._BlockTimer.placeholder()

    old.rebuild = timing_blocks._Rebuild(make, torch.device("cpu"))
    units = timing_blocks._Units([old], lambda _: None)
    fake_card(monkeypatch, total=80 * GiB, free=80 * GiB, allocated=3 * GiB)
    units.next(relocate=True)
    assert alive_at_build == [True], "with room, the new unit is built beside the old"
    old = units.timers[0]
    old.bytes = 3 * GiB
    gone = weakref.ref(old)
    fake_card(monkeypatch, total=16 * GiB, free=16 * GiB, allocated=3 * GiB)  # 1 GiB spare
    del old
    units.next(relocate=True)
    assert alive_at_build == [True, False], "short of memory, the old unit was not freed first"


def test_short_of_memory_a_side_keeps_one_shapes_units_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(timing_blocks, "_kept", {})
    monkeypatch.setattr(timing_blocks, "_one_shape_at_a_time", [False])
    refused = [True]

    def prepare(make_inputs: object, fn: object, block_ms: float) -> timing_blocks._BlockTimer:
        if refused[0] and any(k[0] != "big" for k in timing_blocks._kept):
            refused[0] = False
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return timing_blocks._BlockTimer(lambda reps: (1.0, False), 1, "fake")

    monkeypatch.setattr(timing_blocks, "_prepare_block", prepare)
    for label in ("small", "big"):
        with timing_blocks.block_mode(1.0, label), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            timing_blocks.block_timing(lambda: None, lambda _: None)
    assert list(timing_blocks._kept) == [("big", 1)], "the other shape's units were kept"
    assert "one shape's measuring units at a time" in str(caught[0].message)
    with timing_blocks.block_mode(1.0, "small"):
        timing_blocks.block_timing(lambda: None, lambda _: None)
    assert list(timing_blocks._kept) == [("small", 1)]


def _oom_bench(shape: Shape, settings: Settings) -> dict[str, object]:
    if shape["label"] == "x_32768x8192":
        raise torch.cuda.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of "
            "79.19 GiB of which 301.00 MiB is free."
        )
    row = fail_row(MEMORY_COLUMNS, shape)
    row.update({c: 1.0 for c in MEMORY_COLUMNS[4:]}, Check="PASS")
    return row


def test_an_out_of_memory_is_reported_as_such_never_as_a_fail_of_the_kernel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shapes = tmp_path / "shapes.json"
    labels = ["x_4096x4096", "x_32768x8192"]
    shapes.write_text(json.dumps([{"label": s, "M": 2, "N": 3} for s in labels]))
    argv = ["--summary-csv", str(tmp_path / "o.csv"), "--shapes", str(shapes)]
    assert run_harness(_oom_bench, MEMORY_COLUMNS, default_shapes=lambda d: [], argv=argv) == 1
    out = capsys.readouterr().out
    require_memory(["x_4096x4096"], out, "A")  # a FAIL of another shape: the kernel's
    with pytest.raises(HarnessError) as raised:
        require_memory(["x_32768x8192"], out, "A")
    message = raised.value.message
    assert message.startswith("out of memory: side A (the reference) ")
    assert "x_32768x8192" in message and "it asked for 0.50 GiB" in message
    assert MEMORY_SHARE_ENV in raised.value.hint and "not reliable" not in message


def test_asked_bytes_reads_torchs_words() -> None:
    assert asked_bytes(RuntimeError("Tried to allocate 2.50 GiB. GPU 0")) == int(2.5 * GiB)
    assert asked_bytes(RuntimeError("out of memory")) is None
