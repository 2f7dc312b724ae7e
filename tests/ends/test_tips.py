"""Historical tips: recorded in git, keyed by GPU, op and backend, read by the next campaign."""

from __future__ import annotations

import threading
from pathlib import Path

from kgit.engine.campaign import Campaign
from kgit.engine.rounds.keep_tips import add_tip, print_tips, read_tips, tips_for
from kgit.gitdoor import open_repo
from tests.conftest import commit, git, run_kgit

LESSON = {
    "--context": "128x128x64 tiles on square GEMMs",
    "--signal": "-30% on every shape; register spills in the ISA",
    "--takeaway": "keep BLOCK_K at 32 with 128x128 tiles",
    "--applicability": "bf16, K >= 1024, this GPU",
}


def lesson_args(**changes: str) -> list[str]:
    args: list[str] = []
    for flag, text in {**LESSON, **changes}.items():
        args += [flag, text]
    return args


def test_a_lesson_from_one_campaign_reaches_the_next_on_the_same_op(campaign: Path) -> None:
    repo = campaign
    assert run_kgit("round", "start", "bigger tiles").code == 0
    (repo / "kernel.txt").write_text("speed: 70\n")
    assert commit(repo, "bigger tiles").returncode == 0
    assert run_kgit("-q", "round", "validate").code == 0
    assert run_kgit("round", "rollback", "--reason", "spills").code == 0
    added = run_kgit("tips", "add", *lesson_args(), "--round", "2", "--json")
    assert added.code == 0, added
    tip = added.json()
    assert tip["outcome"] == "ROLLED BACK" and tip["round"] == 2  # type: ignore[index]
    assert tip["commit"] == git(repo, "rev-parse", "refs/kgit/c1/rounds/2")  # type: ignore[index]
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/kgit-tips/") == (
        "refs/kgit-tips/cpu/gemm/fake"
    )

    # A second campaign of the same op, GPU and backend lists it; another op does not.
    assert run_kgit("init", "c2", "-m", "manifest.yaml").code == 0
    listed = run_kgit("-c", "c2", "tips", "--json").json()
    assert [(t["campaign"], t["takeaway"]) for t in listed] == [  # type: ignore[union-attr, index]
        ("c1", "keep BLOCK_K at 32 with 128x128 tiles")
    ]
    assert "keep BLOCK_K at 32" in run_kgit("-c", "c2", "tips").out
    assert run_kgit("init", "c3", "-m", "manifest.yaml", "--target-op", "rmsnorm").code == 0
    assert run_kgit("-c", "c3", "tips", "--json").json() == []
    assert "no tips yet" in run_kgit("-c", "c3", "tips").out

    # c2 adds its own; both campaigns see both, in the order they were recorded.
    second = lesson_args(**{"--takeaway": "prefer 4 warps on small M"})
    assert run_kgit("-c", "c2", "tips", "add", *second).code == 0
    for name in ("c1", "c2"):
        takeaways = [t["takeaway"] for t in run_kgit("-c", name, "tips", "--json").json()]  # type: ignore[union-attr, index]
        assert takeaways == ["keep BLOCK_K at 32 with 128x128 tiles", "prefer 4 warps on small M"]

    # kgit baseline's hook says only the lessons other campaigns left.
    said: list[str] = []
    print_tips(Campaign.load(open_repo(repo), "c2"), said.append)
    assert len(said) == 2 and "keep BLOCK_K at 32" in said[1] and "c1 round-2" in said[1]


def test_tips_travel_with_the_repository(campaign: Path, tmp_path: Path) -> None:
    assert run_kgit("tips", "add", *lesson_args()).code == 0
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(campaign), str(clone))
    git(clone, "fetch", "-q", "origin", "refs/kgit-tips/*:refs/kgit-tips/*")
    tips = read_tips(open_repo(clone), "refs/kgit-tips/cpu/gemm/fake")
    assert [t.takeaway for t in tips] == [LESSON["--takeaway"]]


def test_a_tip_needs_all_four_parts_and_a_known_round(campaign: Path) -> None:
    missing = run_kgit("tips", "add", "--context", "x", "--takeaway", "y")
    assert missing.code == 2 and "signal, applicability" in missing.err
    unknown = run_kgit("tips", "add", *lesson_args(), "--round", "9")
    assert unknown.code == 2 and "round-9 has no record" in unknown.err
    assert git(campaign, "for-each-ref", "refs/kgit-tips/") == ""


def test_concurrent_tips_are_all_kept(campaign: Path) -> None:
    def record(index: int) -> None:
        loaded = Campaign.load(open_repo(campaign), "c1")
        add_tip(loaded, "ctx", "sig", f"takeaway {index}", "everywhere")

    threads = [threading.Thread(target=record, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    tips = tips_for(Campaign.load(open_repo(campaign), "c1"))
    assert sorted(t.takeaway for t in tips) == [f"takeaway {i}" for i in range(8)]
