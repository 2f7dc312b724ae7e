"""DEFINE_TARGET: the fields a campaign needs, what kgit can infer for them, and the harness
templates a campaign can start from.

`kgit init` gathers fields from the manifest file and the command line; on a terminal it asks for
each missing one through an `Ask` callback (the CLI passes click's prompt, so this module never
imports click), shows the whole target and lets the user confirm before anything is written.
Without a terminal, `require_complete` lists every missing field at once.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgit.errors import KgitError, UsageError
from kgit.gitdoor import Repo
from kgit.records.manifest_checks import misspelt_as
from kgit.records.metrics import known_metrics, metric_of
from kgit.records.upkeep_results import TemplateWritten
from kgit.records.yamltext import load_yaml_text, read_text_capped
from kgit.resources import data_dir, gpu_present

# (question, default or None when an answer is required) -> the answer
Ask = Callable[[str, "str | None"], str]

# The fields a campaign cannot start without, in the order they are asked, with the flag that
# sets each. kernel_source is not required by the manifest schema, but `kgit finish` checks the
# final diff against it, so a campaign defined here always names it.
REQUIRED = {
    "target_op": ("the op being optimized, e.g. gemm", "--target-op"),
    "target_backend": ("TRITON, HIP, CK, CUDA ...", "--target-backend"),
    "kernel_source": ("the kernel file(s) a round may change", "--kernel-source"),
    "test_command": ("the targeted tests: the correctness gate", "--test-command"),
    "primary_metric": (
        "the metric that decides: " + ", ".join(known_metrics()),
        "--primary-metric",
    ),
    "quick_command": (
        "the quick harness (kgit appends --summary-csv, --shapes)",
        "--quick-command",
    ),
    "target_shapes": ("the shapes, inline or in a YAML/JSON file", "--shapes-file"),
}
# Asked on a terminal when absent, with defaults inferred from the backend (the seed's table).
OPTIONAL = ("target_gpu", "execution_mode", "rebuild_command")

CPP_BACKENDS = ("hip", "ck", "cuda", "cpp", "c++", "cutlass")
REBUILD_REPO_MODE = "GPU_ARCHS={arch} pip install --no-build-isolation -e . -v"
# GPU names -> the arch GPU_ARCHS wants (AMD's; the seed's C++ backends are HIP/CK).
ARCHS = {"mi300": "gfx942", "mi325": "gfx942", "mi350": "gfx950", "mi355": "gfx950"}
ARCHS.update({"mi250": "gfx90a", "mi210": "gfx90a", "mi100": "gfx908"})

HARNESS_PATH = "bench/quick_test_bench.py"
DRAFT_PATH = "manifest.yaml"


def missing_fields(data: dict[str, Any]) -> list[str]:
    """The required fields DATA lacks (absent, null, or empty)."""
    return [name for name in REQUIRED if data.get(name) in (None, "", [], {})]


def require_complete(data: dict[str, Any], source: str) -> None:
    """Refuse, listing every missing field, when nothing can ask for them."""
    missing = missing_fields(data)
    if not missing:
        return
    lines = [
        f"'{name}' is a required property: {REQUIRED[name][0]} ({REQUIRED[name][1]})"
        + (f"; {source} has '{near}:', did you mean '{name}:'?" if near else "")
        for name in missing
        for near in [misspelt_as(name, data)]
    ]
    raise UsageError(
        f"{source} is missing {len(missing)} field(s) and kgit cannot ask for them (no terminal, or --no-input):\n  "
        + "\n  ".join(lines),
        hint="add them to the manifest or pass the flags above; on a terminal kgit init asks "
        "(kgit init NAME --from-template gemm|memory|grouped writes a draft)",
    )


# -- defaults inferred from the repository and the backend ---------------------------------------


def is_cpp(backend: str) -> bool:
    return backend.strip().lower() in CPP_BACKENDS


def gpu_arch(gpu: str) -> str | None:
    name = gpu.lower().replace(" ", "")
    return next((arch for key, arch in ARCHS.items() if key in name), None)


def default_execution_mode(backend: str) -> str:
    """The seed's table: Triton and small C++ changes edit in place; a new C++ kernel with heavy
    trial and error is the user's call (workspace-mode), never a default."""
    return "repo-mode"


def default_rebuild(backend: str, mode: str, gpu: str) -> str | None:
    """'' for no rebuild (Triton: the editable install picks changes up); the seed's pip
    command for C++ in repo-mode when the GPU's arch is known; None when only the user knows
    (workspace-mode: the minimal build of that kernel)."""
    if not is_cpp(backend):
        return ""
    if mode == "workspace-mode":
        return None
    arch = gpu_arch(gpu)
    return REBUILD_REPO_MODE.format(arch=arch) if arch else None


def default_metric(op: str) -> str:
    """The metric of the template an op of that name would start from: compute-bound ops the
    GEMM template's, others the memory-bound one's."""
    compute = ("gemm", "matmul", "mm", "attention", "attn", "conv")
    kind = "gemm" if any(w in op.lower() for w in compute) else "memory"
    return TEMPLATES[kind].metric


def guess_kernel_source(files: list[str]) -> str | None:
    kinds = (".py", ".cu", ".cuh", ".hip", ".cpp", ".cc", ".h", ".hpp")
    found = [f for f in files if "kernel" in Path(f).name.lower() and f.endswith(kinds)]
    found = [f for f in found if not Path(f).name.startswith("test")]
    return ", ".join(found[:3]) or None


def guess_test_command(files: list[str], op: str) -> str | None:
    tests = [f for f in files if re.fullmatch(r"test_.*\.py|.*_test\.py", Path(f).name)]
    named = [f for f in tests if op and op.lower() in Path(f).name.lower()]
    pick = named or tests
    return f"python -m pytest -q {pick[0]}" if len(pick) == 1 else None


def guess_quick_command(files: list[str]) -> str | None:
    benches = [f for f in files if Path(f).name == "quick_test_bench.py"]
    benches = benches or [f for f in files if re.fullmatch(r"bench.*\.py", Path(f).name)]
    return f"python {benches[0]}" if len(benches) == 1 else None


# -- shapes ---------------------------------------------------------------------------------------

_DIMS = {2: ("M", "N"), 3: ("M", "N", "K"), 4: ("B", "M", "N", "K")}


def parse_shapes(answer: str, root: Path, op: str) -> list[dict[str, Any]]:
    """Shapes from a YAML/JSON file (a list, or a mapping with `target_shapes`) or inline:
    `1024x1024x1024, big=8192x8192x8192:bf16` (2 dims: M×N; 3: M×N×K; 4: B×M×N×K)."""
    path = root / answer.strip()
    if answer.strip() and path.is_file():
        return load_shapes_file(path)
    shapes = []
    for token in re.split(r"[,\s]+", answer.strip()):
        if not token:
            continue
        label, _, spec = token.rpartition("=")
        spec, _, dtype = spec.partition(":")
        dims = spec.lower().split("x")
        if len(dims) not in _DIMS or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise UsageError(
                f"cannot read the shape {token!r}",
                hint="write MxNxK (or MxN, BxMxNxK), optionally label= before and :dtype after, "
                "or give the path of a YAML/JSON file of shapes",
            )
        shape: dict[str, Any] = {"label": label or f"{op or 'shape'}_{spec.lower()}"}
        shape.update(zip(_DIMS[len(dims)], map(int, dims), strict=True))
        if dtype:
            shape["dtype"] = dtype
        shapes.append(shape)
    return shapes


def load_shapes_file(path: Path) -> list[dict[str, Any]]:
    data = load_yaml_text(read_text_capped(path), str(path))
    if isinstance(data, dict):
        data = data.get("target_shapes")
    if not isinstance(data, list) or not all(isinstance(s, dict) for s in data):
        raise UsageError(
            f"{path} holds no list of shapes",
            hint="a YAML/JSON list of {label, M, N, K, ...} (or a mapping with target_shapes)",
        )
    return data


# -- asking ---------------------------------------------------------------------------------------


def ask_missing(data: dict[str, Any], repo: Repo, ask: Ask) -> dict[str, Any]:
    """DATA completed by asking for each absent field, with the defaults kgit can infer."""
    data = dict(data)
    files = repo.tracked_files()
    absent = set(missing_fields(data)) | {f for f in OPTIONAL if f not in data}

    def field(name: str, question: str, default: str | None) -> None:
        if name in absent:
            data[name] = ask(question, default).strip()

    field("target_op", "target_op (the op being optimized, e.g. gemm)", None)
    field("target_backend", "target_backend (TRITON, HIP, CK, CUDA ...)", "TRITON")
    field("target_gpu", "target_gpu (e.g. H200, MI300X; enter to leave blank)", "")
    op, backend = str(data["target_op"]), str(data["target_backend"])
    if "kernel_source" in absent:
        answer = ask("kernel_source (file(s), comma-separated)", guess_kernel_source(files))
        data["kernel_source"] = [p.strip() for p in answer.split(",") if p.strip()]
    field("test_command", "test_command (the correctness gate)", guess_test_command(files, op))
    metrics = ", ".join(known_metrics())
    field("primary_metric", f"primary_metric ({metrics})", default_metric(op))
    template = metric_of(str(data["primary_metric"])).template
    quick = guess_quick_command(files)
    field(
        "quick_command",
        "quick_command (the quick harness"
        + ("" if quick else f"; none found: `kgit init --from-template {template}` writes one")
        + ")",
        quick,
    )
    if "target_shapes" in absent:
        answer = ask("target_shapes (MxNxK, ... or a YAML/JSON file)", None)
        data["target_shapes"] = parse_shapes(answer, repo.root, op)
    mode = default_execution_mode(backend)
    if is_cpp(backend):
        mode_help = "repo-mode: small changes, workspace-mode: a new kernel"
    else:
        mode_help = "repo-mode for Triton"
    field("execution_mode", f"execution_mode ({mode_help})", mode)
    rebuild = default_rebuild(
        backend, str(data.get("execution_mode", mode)), data.get("target_gpu", "")
    )
    if "rebuild_command" in absent:
        question = "rebuild_command (run before each validation; enter for none)"
        if is_cpp(backend) and rebuild is None:
            question += f"; e.g. {REBUILD_REPO_MODE} or the kernel's minimal build"
        data["rebuild_command"] = ask(question, rebuild if rebuild is not None else "").strip()
    if data.get("rebuild_command") == "":
        data["rebuild_command"] = None
    if data.get("target_gpu") == "":
        data.pop("target_gpu")
    return data


def render_target(name: str, data: dict[str, Any]) -> str:
    """The whole target, as YAML, in the order it was asked."""
    import yaml

    order = [*REQUIRED, *OPTIONAL]
    ordered = {k: data[k] for k in order if k in data}
    ordered.update({k: v for k, v in data.items() if k not in ordered})
    body = yaml.safe_dump(ordered, sort_keys=False, default_flow_style=None, width=100)
    return f"campaign {name}:\n" + "\n".join(f"  {line}" for line in body.splitlines())


# -- starting from a harness template --------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """A harness template and the manifest it drafts: target shapes for a GPU, and CPU-sized
    ones in fp32 for a machine without one, where kernels run in Triton's interpreter (its cost
    grows with the programs launched, and its bf16 arithmetic is wrong: SPEC.md)."""

    harness: str  # file under templates/
    op: str
    metric: str
    shapes: list[dict[str, Any]]
    cpu_shapes: list[dict[str, Any]]


def _gemm_shapes(sizes: list[tuple[int, int, int]], dtype: str) -> list[dict[str, Any]]:
    return [
        {"label": f"gemm_{m}x{n}x{k}", "M": m, "N": n, "K": k, "dtype": dtype} for m, n, k in sizes
    ]


def _rows_shapes(sizes: list[tuple[int, int]], dtype: str) -> list[dict[str, Any]]:
    return [{"label": f"x_{m}x{n}", "M": m, "N": n, "dtype": dtype} for m, n in sizes]


def _grouped_shapes(b: int, m: int, n: int, k: int) -> list[dict[str, Any]]:
    return [
        {"label": f"grouped_{d}", "B": b, "M": m, "N": n, "K": k, "distribution": d}
        for d in _DISTRIBUTIONS
    ]


_GEMM = [(256, 256, 256), (1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192)]
_DISTRIBUTIONS = ("uniform", "top2_cf1.0", "top1_cf1.25", "skewed")  # kgit.measure.tokens
TEMPLATES = {
    "gemm": Template(
        "gemm_harness.py",
        "gemm",
        "Combined Step TFLOPS",
        _gemm_shapes(_GEMM, "bf16"),
        _gemm_shapes([(128, 128, 128), (128, 256, 128), (256, 256, 128)], "fp32"),
    ),
    "memory": Template(
        "memory_harness.py",
        "rmsnorm",
        "Forward GB/s",
        _rows_shapes([(4096, 4096), (16384, 4096), (32768, 8192)], "bf16"),
        _rows_shapes([(64, 256), (128, 1024), (256, 4096)], "fp32"),
    ),
    "grouped": Template(
        "grouped_gemm_harness.py",
        "grouped_gemm",
        "Combined Step TFLOPS",
        _grouped_shapes(8, 2048, 4096, 4096),
        [{**shape, "dtype": "fp32"} for shape in _grouped_shapes(4, 32, 64, 64)],
    ),
}

# What a draft says of CPU-sized shapes, in its header and in `kgit init`'s output.
CPU_SHAPES_NOTE = (
    "CPU-sized target_shapes in fp32, for Triton's interpreter (no GPU here, or --shapes-for cpu), "
    "which would not finish the GPU shapes; on the GPU machine: kgit init --from-template {kind} "
    "--shapes-for gpu"
)


def write_template(
    root: Path, kind: str, fields: dict[str, Any], *, gpu: bool | None = None
) -> TemplateWritten:
    """Copy the harness template to bench/quick_test_bench.py and write a manifest draft whose
    missing fields are commented out (so `kgit init NAME --manifest manifest.yaml` asks for them
    on a terminal). Nothing is committed: the harness is a protected path, frozen at baseline, so
    the user plugs the kernel in and commits it before `kgit init`. The target shapes are a GPU's
    when GPU (default: whether this machine has one), else CPU-sized."""
    import yaml

    template = TEMPLATES[kind]
    gpu = gpu_present() if gpu is None else gpu
    harness, draft = root / HARNESS_PATH, root / DRAFT_PATH
    taken = [str(p.relative_to(root)) for p in (harness, draft) if p.exists()]
    if taken:
        raise KgitError(
            f"{' and '.join(taken)} already exist(s): nothing written",
            hint="move it away, or run kgit init NAME --manifest manifest.yaml",
        )
    data: dict[str, Any] = {
        "target_op": template.op,
        "primary_metric": template.metric,
        "quick_command": f"python {HARNESS_PATH}",
        "target_shapes": template.shapes if gpu else template.cpu_shapes,
        **fields,
    }
    harness.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(data_dir("templates") / template.harness, harness)
    todo = [
        f"# {name}:   # TODO {REQUIRED[name][0]}"
        for name in REQUIRED
        if name not in data or data[name] in (None, "", [])
    ]
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    header = (
        f"# kgit manifest draft from the {kind} harness template "
        "(templates/manifest.yaml documents every field).\n"
    )
    cpu_sized = not gpu and "target_shapes" not in fields
    if cpu_sized:
        header += f"# {CPU_SHAPES_NOTE.format(kind=kind)}.\n"
    draft.write_text(header + body + "\n".join(todo) + ("\n" if todo else ""))
    return TemplateWritten(
        template=kind,
        harness=HARNESS_PATH,
        manifest=DRAFT_PATH,
        missing=tuple(name for name in REQUIRED if name not in data),
        shapes_for="gpu" if gpu else "cpu",
        cpu_shapes_note=CPU_SHAPES_NOTE.format(kind=kind) if cpu_sized else None,
    )
