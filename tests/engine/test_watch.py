"""What no measuring process may write, found after it ran (kgit/engine/measuring/isolation/watch.py): a
write after the mark is found, bytecode it left is removed, any other file stays refused until
it changes again; a write into a world's copy of kgit's code is found when the world closes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kgit.engine.measuring.isolation.watch import (
    Watch,
    WroteOutside,
    drain_world_writes,
    interpreter_configs,
    refuse_writes,
    require_untainted,
    unimported,
    watched_folders,
)
from kgit.engine.measuring.isolation.world import open_world


def _watch(tmp_path: Path, *folders: Path) -> Watch:
    watch = Watch(list(folders), tmp_path / "mark")
    watch.start()
    return watch


@pytest.mark.parametrize("find", [True, False], ids=["find", "python-walk"])
def test_a_write_after_the_mark_is_found_and_one_before_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, find: bool
) -> None:
    if not find:  # a machine without find(1): kgit walks the folders itself
        monkeypatch.setattr(
            "kgit.engine.measuring.isolation.watch.shutil.which", lambda *_, **__: None
        )
    site = tmp_path / "site"
    (site / "pkg" / "__pycache__").mkdir(parents=True)
    (site / "pkg" / "old.py").write_text("x = 1\n")
    watch = _watch(tmp_path, site)
    assert watch.written() == []
    (site / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"forged")
    (site / "pkg" / "mod.py").write_text("x = 2\n")
    taint = tmp_path / "tainted.json"
    with pytest.raises(WroteOutside, match="wrote where no measuring process may") as caught:
        refuse_writes(watch, taint, "the harness")
    assert "mod.py" in str(caught.value.message) or "mod.py" in str(caught.value.hint)
    # The bytecode is gone at once; the source stays refused until it changes again.
    assert not (site / "pkg" / "__pycache__" / "mod.cpython-311.pyc").exists()
    with pytest.raises(WroteOutside, match="still as it left them"):
        require_untainted(taint)
    time.sleep(0.02)
    (site / "pkg" / "mod.py").write_text("x = 1\n")  # reinstalled
    require_untainted(taint)
    assert not taint.exists()


@pytest.mark.parametrize("where", ["caller-path", "system-path"])
def test_a_find_that_prints_nothing_does_not_blind_the_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A `find` first on the caller's PATH is never run; one kgit does run (from the system's
    folders) must report the canary written after the mark, or kgit walks the folders itself."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "find"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    if where == "caller-path":
        monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    else:
        monkeypatch.setattr("kgit.engine.measuring.isolation.watch._SYSTEM_PATH", str(bin_dir))
    site = tmp_path / "site"
    site.mkdir()
    watch = _watch(tmp_path, site)
    (site / "planted.py").write_text("x = 1\n")
    assert site / "planted.py" in watch.written()


def test_writes_into_a_measuring_tree_are_refused_but_not_remembered(tmp_path: Path) -> None:
    tree = tmp_path / "reference"
    tree.mkdir()
    watch = _watch(tmp_path, tree)
    (tree / "kernel.py").write_text("slow\n")
    taint = tmp_path / "tainted.json"
    with pytest.raises(WroteOutside):
        refuse_writes(watch, taint, "the candidate", (tree,))
    require_untainted(taint)  # the tree is made again before every pass


def test_a_write_into_a_worlds_copy_of_kgit_is_found_when_it_closes(tmp_path: Path) -> None:
    drain_world_writes()
    world = open_world(tmp_path, {})
    watch = _watch(tmp_path, tmp_path / "nothing")
    time.sleep(0.02)
    (world.lib / "kgit" / "measure" / "__pycache__" / "fwdbwd.cpython-311.pyc").write_bytes(b"x")
    world.close()
    with pytest.raises(WroteOutside, match="fwdbwd"):
        refuse_writes(watch, tmp_path / "tainted.json", "the harness")


def test_watched_folders_are_walked_once(tmp_path: Path) -> None:
    (tmp_path / "lib" / "site").mkdir(parents=True)
    folders = watched_folders([str(tmp_path / "lib"), str(tmp_path / "lib" / "site"), ""], [])
    assert folders.count((tmp_path / "lib").resolve()) == 1
    assert (tmp_path / "lib" / "site").resolve() not in folders


@pytest.mark.parametrize("find", [True, False], ids=["find", "python-walk"])
def test_a_site_packages_no_process_imports_from_is_not_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, find: bool
) -> None:
    # A virtual environment's Python: the standard library's folder holds the interpreter's own
    # site-packages, which is not on its import path; the environment's own one is.
    if not find:
        monkeypatch.setattr(
            "kgit.engine.measuring.isolation.watch.shutil.which", lambda *_, **__: None
        )
    stdlib, venv_site, tree = tmp_path / "lib", tmp_path / "venv" / "site-packages", tmp_path / "t"
    for folder in (
        stdlib / "site-packages",
        stdlib / "dist-packages",
        venv_site,
        tree / "site-packages",
    ):
        folder.mkdir(parents=True)
    libraries = [str(stdlib), str(venv_site)]
    skipped = unimported(libraries, libraries)
    assert skipped == [(stdlib / "site-packages").resolve(), (stdlib / "dist-packages").resolve()]
    # On the import path (a system Python's own packages): walked.
    assert unimported(libraries, [*libraries, str(stdlib / "site-packages")]) == [
        (stdlib / "dist-packages").resolve()
    ]
    watch = Watch(watched_folders(libraries, [tree]), tmp_path / "mark", skipped=skipped)
    watch.start()
    for folder in (stdlib / "site-packages", venv_site, stdlib, tree / "site-packages"):
        (folder / "planted.py").write_text("x = 1\n")
    found = {p.resolve() for p in watch.written()}
    assert (stdlib / "site-packages" / "planted.py").resolve() not in found
    for folder in (venv_site, stdlib, tree / "site-packages"):  # a tree's folder of that name too
        assert (folder / "planted.py").resolve() in found, (folder, found)


def test_a_pyvenv_cfg_written_or_created_is_found(tmp_path: Path) -> None:
    # A measured process that turned on include-system-site-packages would put the folder
    # `unimported` leaves out of the walk on the next processes' import path.
    base = tmp_path / "base" / "bin"
    venv = tmp_path / "venv"
    base.mkdir(parents=True)
    (venv / "bin").mkdir(parents=True)
    (base / "python3").write_text("")
    (venv / "bin" / "python3").symlink_to(base / "python3")
    (venv / "pyvenv.cfg").write_text("include-system-site-packages = false\n")
    configs = interpreter_configs([str(venv / "bin" / "python3"), ""])
    assert venv / "pyvenv.cfg" in configs and tmp_path / "base" / "pyvenv.cfg" in configs
    watch = Watch([], tmp_path / "mark", files=configs)
    watch.start()
    assert watch.written() == []
    watch = Watch([], tmp_path / "mark", files=configs)
    watch.start()
    (venv / "pyvenv.cfg").write_text("include-system-site-packages = true\n")
    (tmp_path / "base" / "pyvenv.cfg").write_text("home = /elsewhere\n")  # the base made a venv
    assert set(watch.written()) == {venv / "pyvenv.cfg", tmp_path / "base" / "pyvenv.cfg"}


def test_bytecode_python_writes_for_a_source_is_no_write_but_a_forgery_is(tmp_path: Path) -> None:
    """Another kgit process's first import writes bytecode into kgit's package beside a
    measurement; a kernel's forgery copies a real header over other code."""
    import importlib.util
    import marshal
    import py_compile

    from kgit.engine.measuring.isolation.watch import faithful_bytecode

    site = tmp_path / "site"
    site.mkdir()
    source = site / "timing.py"
    source.write_text("def scale(x):\n    return x\n")
    watch = _watch(tmp_path, site)
    honest = Path(importlib.util.cache_from_source(str(source)))
    py_compile.compile(str(source), cfile=str(honest), doraise=True)
    assert faithful_bytecode(honest)
    refuse_writes(watch, tmp_path / "tainted.json", "the harness")  # nothing to refuse
    header = honest.read_bytes()[:16]
    forged = compile("def scale(x):\n    return x / 3\n", str(source), "exec")
    honest.write_bytes(header + marshal.dumps(forged))
    assert not faithful_bytecode(honest)
    with pytest.raises(WroteOutside, match="timing"):
        refuse_writes(watch, tmp_path / "tainted.json", "the harness")
    assert not honest.exists()  # removed: Python compiles the source again


def test_the_mark_is_read_once_and_gone_before_any_process_starts(tmp_path: Path) -> None:
    """`find -cnewer MARK` read the marker's times at the walk: a kernel that touched it (under
    .git/kgit/, where every measuring process could reach it) hid its write into kgit's install,
    and a slower kernel was accepted at +101%."""
    site = tmp_path / "site"
    site.mkdir()
    watch = _watch(tmp_path, site)
    assert not watch.marker.exists()
    (site / "planted.py").write_text("X = 1\n")
    watch.marker.write_bytes(b"")  # a process that made the marker anew, newer than its write
    assert site / "planted.py" in watch.written()
