"""Campaigns on real open-source Triton kernels, played through the CLI as a user types them.

Each folder under `projects/` is a user's repository as kgit meets it: a kernel vendored from an
open-source project (its LICENSE and NOTICE.md beside it), the project's own tests in a
`tests/` folder with a conftest.py, pytest told where they are (a pyproject.toml or a
pytest.ini), and a quick harness built on kgit.measure. `play` copies one into a fresh git
repository and takes it through init, baseline and one round, with every default on (the
interleaved policy, the gate audit), then accepts or rolls back as the verdict says.

Used by `test_campaigns.py` (CPU: Triton's interpreter, tiny shapes) and `bench/realworld.py`
(a GPU: realistic shapes in bf16, every setting at its default).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from kgit.records.notes import ACCEPTING

PROJECTS = Path(__file__).resolve().parent / "projects"


@dataclass(frozen=True)
class RealCampaign:
    """A vendored project, its campaign's manifest fields and the round played on it."""

    folder: str
    op: str
    kernel: str
    test_command: str  # after the python executable
    gate_config: str  # the file that tells pytest how to run the project's tests
    quick_command: str  # after the python executable
    cpu_shapes: list[dict[str, object]]
    gpu_shapes: list[dict[str, object]]
    hypothesis: str
    edit: tuple[str, str]  # lines of the kernel, and what replaces them wherever they are


def _rows(op: str, sizes: list[tuple[int, int]], dtype: str) -> list[dict[str, object]]:
    return [{"label": f"{op}_{m}x{n}", "M": m, "N": n, "dtype": dtype} for m, n in sizes]


SOFTMAX = RealCampaign(
    folder="liger_softmax",
    op="softmax",
    kernel="src/liger_kernel/ops/softmax.py",
    # A bare pytest: the folder comes from pyproject.toml's testpaths.
    test_command="-m pytest -q",
    gate_config="pyproject.toml",
    quick_command="benchmark/quick_softmax.py",
    # Rows past 65536 columns take the multi-block kernels, the others the single-block ones.
    cpu_shapes=_rows("softmax", [(8, 1000), (16, 4096), (2, 70000)], "fp32"),
    gpu_shapes=_rows(
        "softmax", [(4096, 4096), (16384, 8192), (4096, 32768), (2048, 131072)], "bf16"
    ),
    hypothesis="multi-block rows in 16K tiles: less masked padding in a row's last tile",
    edit=("MAX_FUSED_SIZE = 65536", "MAX_FUSED_SIZE = 16384"),
)

SWIGLU = RealCampaign(
    folder="liger_swiglu",
    op="swiglu",
    kernel="liger_kernel/ops/swiglu.py",
    # The test folder named on the command line (pytest.ini sets no testpaths).
    test_command="-m pytest -q tests",
    gate_config="pytest.ini",
    quick_command="bench_swiglu.py",
    cpu_shapes=_rows("swiglu", [(4, 512), (8, 2000), (16, 8192)], "fp32"),
    gpu_shapes=_rows("swiglu", [(4096, 11008), (8192, 14336), (16384, 14336)], "bf16"),
    # A GPU knob: Triton's interpreter ignores num_warps, so on CPU this round is an A/A test.
    hypothesis="half the warps per row: more rows resident per SM",
    edit=(
        "    BLOCK_SIZE, num_warps = calculate_settings(n_cols)\n",
        "    BLOCK_SIZE, num_warps = calculate_settings(n_cols)\n"
        "    num_warps = max(num_warps // 2, 1)\n",
    ),
)

CAMPAIGNS = {c.folder: c for c in (SOFTMAX, SWIGLU)}


@dataclass
class Played:
    """What one campaign came to: the verdict, the lines that say why, and where time went."""

    repo: Path
    verdict: str = ""
    rounds: list[tuple[int, str]] = field(default_factory=list)
    why: str = ""  # the validation's aggregate line
    audit: str = ""  # the baseline's gate audit line
    frozen: str = ""  # what the baseline froze for the gate, as it said
    seconds: dict[str, float] = field(default_factory=dict)


class Player:
    """Runs git and kgit in one repository as a user would, timing each step."""

    def __init__(self, repo: Path, gpu: bool, echo: bool = False) -> None:
        self.repo, self.gpu, self.echo = repo, gpu, echo
        self.played = Played(repo)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or "CONFIG" in k}
        env.pop("TRITON_INTERPRET", None)
        if not self.gpu:
            env["TRITON_INTERPRET"] = "1"  # a CPU machine: Triton's interpreter runs the kernels
        return env

    def run(self, step: str, *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
        start = time.monotonic()
        done = subprocess.run(
            args, cwd=self.repo, env=self.env(), capture_output=True, text=True, timeout=3600
        )
        seconds = time.monotonic() - start
        self.played.seconds[step] = self.played.seconds.get(step, 0.0) + seconds
        if self.echo:
            print(
                f"$ {shlex.join(args)}  ({seconds:.1f} s)\n{done.stdout}{done.stderr}", flush=True
            )
        if done.returncode != expect:
            raise AssertionError(
                f"{shlex.join(args)} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
            )
        return done

    def kgit(self, step: str, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(step, sys.executable, "-m", "kgit", *args)


def project_repo(campaign: RealCampaign, where: Path, player: Player) -> None:
    shutil.copytree(PROJECTS / campaign.folder, where, ignore=shutil.ignore_patterns("__pycache__"))
    player.run("repo", "git", "init", "-q")
    # An identity of its own, as kgit demo's: a fresh GPU machine may have none configured.
    player.run("repo", "git", "config", "user.name", "kgit realworld")
    player.run("repo", "git", "config", "user.email", "realworld@kgit.invalid")
    player.run("repo", "git", "add", ".")
    player.run("repo", "git", "commit", "-q", "-m", f"vendored {campaign.op} kernel and tests")


def manifest(campaign: RealCampaign, path: Path, gpu: bool, gpu_name: str = "GPU") -> Path:
    python = shlex.quote(sys.executable)
    fields: dict[str, object] = {
        "target_op": campaign.op,
        "target_backend": "TRITON",
        "target_lang": "triton",
        "target_gpu": gpu_name if gpu else "CPU (Triton interpreter)",
        "primary_metric": "Forward GB/s",
        "kernel_source": [campaign.kernel],
        "test_command": f"{python} {campaign.test_command}",
        "quick_command": f"{python} {campaign.quick_command}",
        "timeout_s": 900,
        "max_iterations": 20,
        "target_shapes": campaign.gpu_shapes if gpu else campaign.cpu_shapes,
    }
    if not gpu:
        # kgit demo's CPU settings: the default policy (interleaved) with fewer quads, and the
        # gate audit on four mutants (each costs one run of the project's tests). A GPU keeps
        # every default.
        fields["gate_audit_mutants"] = 4
        fields["interleaved"] = {"min_quads": 4, "calibration_quads": 6, "calibration_processes": 2}
    path.write_text(json.dumps(fields, indent=2) + "\n")  # JSON is YAML too
    return path


def edit(repo: Path, campaign: RealCampaign) -> None:
    path = repo / campaign.kernel
    old, new = campaign.edit
    text = path.read_text()
    if old not in text:
        raise AssertionError(f"{old!r} is not in {campaign.kernel}")
    path.write_text(text.replace(old, new))


def _line(text: str, pattern: str) -> str:
    found = re.search(pattern, text, flags=re.M)
    return found.group(0).strip().removeprefix("- ") if found else ""


def play(
    campaign: RealCampaign, root: Path, *, gpu: bool, gpu_name: str = "GPU", echo: bool = False
) -> Played:
    """A fresh repository of the project under ROOT, init, baseline, one round, a decision."""
    repo = root / campaign.folder
    player = Player(repo, gpu, echo)
    project_repo(campaign, repo, player)
    path = manifest(campaign, root / f"{campaign.folder}.manifest.yaml", gpu, gpu_name)
    name = f"{campaign.op}_triton_{'gpu' if gpu else 'cpu'}"
    player.kgit("init", "init", name, "--manifest", str(path))
    baseline = player.kgit("baseline", "baseline")
    player.played.audit = _line(baseline.stdout, r"^gate audit: .*$")
    player.played.frozen = _line(baseline.stderr, r"(?<=^kgit: frozen for the gate: ).*$")
    player.kgit("round", "round", "start", campaign.hypothesis)
    edit(repo, campaign)
    committed = player.run("commit (gate)", "git", "commit", "-q", "-a", "-m", campaign.hypothesis)
    if "gate: passed" not in committed.stderr:
        raise AssertionError(f"the commit passed no gate:\n{committed.stderr}")
    validated = player.kgit("validate", "round", "validate")
    player.played.why = _line(validated.stdout, r"^\s*- aggregate .*$")
    status = json.loads(player.kgit("decide", "status", "--json").stdout)
    verdict = player.played.verdict = status["open_round"]["verdict"]
    if verdict in ACCEPTING:
        player.kgit("decide", "round", "accept")
    else:
        player.kgit("decide", "round", "rollback", "--reason", "not faster on this machine")
    log = json.loads(player.kgit("log", "log", "--json").stdout)
    player.played.rounds = [(row["round"], row["status"]) for row in log]
    return player.played
