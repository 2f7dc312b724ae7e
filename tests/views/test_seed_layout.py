"""`kgit export` writes the seed's campaign folder; `kgit import` rebuilds the campaign from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import git, run_kgit


def files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def test_export_import_export_gives_the_same_files(
    reviewed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = tmp_path / "export-1"
    assert run_kgit("export", str(first)).code == 0
    exported = files(first)
    assert {
        "manifest.yaml",
        "quick_test_bench.py",
        "logs/optimize.md",
        "logs/performance_trend.md",
        "rounds/round-1/summary.md",
        "rounds/round-1/artifacts/benchmark.csv",
        "rounds/round-2/kernel_snapshot/kernel.txt",
        "rounds/round-3/summary.md",
        "rounds/round-4/artifacts/benchmark.csv",
    } <= set(exported)
    assert "rounds/round-3/kernel_snapshot/kernel.txt" not in exported  # no commit
    bench = git(
        reviewed, "notes", "--ref=refs/notes/kgit/c1/bench", "show", "refs/kgit/c1/rounds/2"
    )
    assert exported["rounds/round-2/artifacts/benchmark.csv"].decode().strip() == bench
    assert exported["rounds/round-4/kernel_snapshot/kernel.txt"].startswith(b"speed: 90")
    assert exported["quick_test_bench.py"] == (reviewed / "harness.py").read_bytes()

    # A fresh clone carries no kgit refs or notes: the folder alone rebuilds the campaign.
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(reviewed), str(clone))
    git(clone, "checkout", "-q", "-b", "work", git(reviewed, "rev-parse", "refs/kgit/c1/rounds/1"))
    git(clone, "branch", "-q", "-D", "kgit/c1/best")  # the clone's copy of the checked-out branch
    monkeypatch.chdir(clone)
    imported = run_kgit("import", str(first), "--name", "c1")
    assert imported.code == 0, imported
    log = run_kgit("log", "--json").json()
    assert [(r["round"], r["status"]) for r in log] == [  # type: ignore[union-attr, index]
        (1, "BASELINE"), (2, "ACCEPTED"), (3, "ROLLED BACK"), (4, "ROLLED BACK"),
    ]  # fmt: skip
    assert git(clone, "show", "kgit/c1/best:kernel.txt").startswith("speed: 110")
    assert git(clone, "show", "refs/kgit/c1/rounds/4:kernel.txt").startswith("speed: 90")
    assert git(clone, "rev-parse", "HEAD") == git(reviewed, "rev-parse", "refs/kgit/c1/rounds/1")
    second = tmp_path / "export-2"
    assert run_kgit("export", str(second)).code == 0
    assert files(second) == exported


def test_import_refuses_an_existing_campaign(reviewed: Path, tmp_path: Path) -> None:
    folder = tmp_path / "out"
    assert run_kgit("export", str(folder)).code == 0
    refused = run_kgit("import", str(folder), "--name", "c1")
    assert refused.code == 2 and "already exists" in refused.err
    assert run_kgit("export", str(folder)).code == 2  # not empty


def test_a_seed_folder_without_kgit_settings_keeps_the_seeds_verdict_rule(
    reviewed: Path, tmp_path: Path
) -> None:
    """A campaign written by the seed's own tools was judged by the seed's rule and has no A/A
    calibration: importing it must not switch it to the default (interleaved) policy."""
    import yaml

    folder = tmp_path / "out"
    assert run_kgit("export", str(folder)).code == 0
    manifest = yaml.safe_load((folder / "manifest.yaml").read_text())
    assert manifest["kgit"]["decision_policy"] == "seed"
    del manifest["kgit"]
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    imported = run_kgit("import", str(folder), "--name", "c2")
    assert imported.code == 0, imported
    stored = git(reviewed, "show", "refs/kgit/c2/campaign:manifest.yaml")
    assert '"decision_policy": "seed"' in stored
