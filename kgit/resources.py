"""Where the files shipped beside the code live: hooks/, templates/ and the example kernels.

In a wheel, hooks/ and templates/ are inside the package as kgit/_data/ (pyproject's
force-include); in a source checkout or an editable install they sit at the repository's top.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The folder NAME ("hooks" or "templates")."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"kgit's {name}/ folder is missing from this installation")


def examples_dir() -> Path:
    return _PACKAGE / "examples"


def launch_hook_dir() -> Path:
    """The folder of kgit's launch recorder (a `sitecustomize.py`): put first on PYTHONPATH of
    the gate audit's own runs only (kgit/engine/measuring/harness/launches.py)."""
    return _PACKAGE / "launch_hook"


def package_home() -> Path:
    """The folder the running kgit package is imported from (a checkout's root, or a
    site-packages): a harness run by kgit imports kgit's measuring library from there."""
    return Path(__file__).resolve().parent.parent


# The device nodes of an NVIDIA, an AMD (ROCm) and a WSL GPU: a look at the filesystem, where
# asking torch would cost its import (seconds) in a command that never measures.
GPU_DEVICE_NODES = ("/dev/nvidia0", "/dev/kfd", "/dev/dxg")


def gpu_present() -> bool:
    """Whether this machine has a GPU kernels could run on."""
    return any(Path(node).exists() for node in GPU_DEVICE_NODES)
