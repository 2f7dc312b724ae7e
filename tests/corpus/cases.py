"""The bad-input corpus (issue 12): inputs a user or an agent gets wrong, each with the exit code
kgit owes it. Data only; tests/corpus/test_bad_input_corpus.py runs every case through the CLI.

Exit 2 is bad usage: a flag, a name, a manifest, a shapes file, a CSV. Exit 1 is a refused
state: the input is fine but the campaign is not where the command needs it; those cases say why.
A case runs in a copy of one of two repositories: REPO (a kernel repository with its test and
harness committed, no campaign) or CAMPAIGN (the same with campaign c1 baselined).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

REPO = "repo"
CAMPAIGN = "campaign"


@dataclass(frozen=True)
class Link:
    """A symbolic link to TARGET (relative to the case's repository, or absolute)."""

    target: str


@dataclass(frozen=True)
class Fifo:
    """A named pipe with no writer: opening it for reading would block forever."""


FileData = str | bytes | Link | Fifo


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    files: dict[str, FileData] = field(default_factory=dict)  # written before the run
    where: str = CAMPAIGN
    code: int = 2
    says: str = ""  # a piece of the error message
    why: str = ""  # exit 1: the state that is refused
    subprocess: bool = False  # run as `python -m kgit` instead of in process


# -- manifests ------------------------------------------------------------------------------------

GOOD: dict[str, Any] = {
    "target_op": "gemm",
    "target_backend": "FAKE",
    "target_gpu": "CPU",
    "primary_metric": "Forward TFLOPS",
    "kernel_source": "kernel.txt",
    "test_command": "python check.py",
    "quick_command": "python harness.py",
    "timeout_s": 30,
    "target_shapes": [
        {"label": "s64", "M": 64, "N": 64, "K": 64},
        {"label": "s128", "M": 128, "N": 128, "K": 128},
    ],
}
GOOD_TEXT = yaml.safe_dump(GOOD, sort_keys=False)
_DROP = object()


def manifest(**changes: Any) -> str:
    """GOOD with CHANGES (a value of _DROP removes the key), as YAML."""
    data = {**GOOD, **changes}
    return yaml.safe_dump({k: v for k, v in data.items() if v is not _DROP}, sort_keys=False)


def shapes(*extra: dict[str, Any]) -> str:
    return manifest(target_shapes=[GOOD["target_shapes"][0], *extra])


def init_with(case_id: str, text: FileData, says: str = "", *flags: str) -> Case:
    return Case(
        f"manifest-{case_id}",
        ("init", "c2", "--manifest", "bad.yaml", "--no-input", *flags),
        {"bad.yaml": text},
        where=REPO,
        says=says,
    )


ALIAS_BOMB = "".join(
    f"{name}: &{name} [{','.join([f'*{prev}'] * 9) if prev else ','.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)

MANIFESTS = [
    init_with("empty", "", "missing 7 field(s)"),
    init_with("only-comments", "# nothing yet\n", "missing 7 field(s)"),
    init_with("a-list", "- target_op: gemm\n", "must be a YAML mapping"),
    init_with("a-scalar", "gemm\n", "must be a YAML mapping"),
    init_with("unclosed-quote", GOOD_TEXT + "target_gpu: 'H200\n", "not valid YAML"),
    init_with("tab-indent", GOOD_TEXT.replace("- label: s64", "-\tlabel: s64"), "not valid YAML"),
    init_with("bad-indent", "target_op: gemm\n  target_backend: X\n", "not valid YAML"),
    init_with("latin-1", GOOD_TEXT.encode() + "target_gpu: é\n".encode("latin-1"), "UTF-8"),
    init_with("nul-bytes", b"target_op: gemm\x00\x00\n", "YAML"),
    init_with("two-documents", GOOD_TEXT + "---\ntarget_op: other\n", "not valid YAML"),
    init_with("alias-bomb", GOOD_TEXT + ALIAS_BOMB + "representative_shapes: *i\n", "aliases"),
    init_with("alias", GOOD_TEXT.replace("target_gpu: CPU", "target_gpu: &g CPU\ntarget_lang: *g")),
    init_with("merge-key", "base: &b {target_op: gemm}\n<<: *b\n", "aliases"),
    init_with("duplicate-key", GOOD_TEXT + "target_op: gemm_fp8\n", "duplicate key 'target_op'"),
    init_with(
        "duplicate-shape-key",
        GOOD_TEXT.replace("  M: 64\n", "  M: 64\n  M: 32\n", 1),
        "duplicate key 'M'",
    ),
    init_with("complex-key", GOOD_TEXT + "? [a, b]\n: 1\n", "YAML"),
    init_with("over-1-MB", GOOD_TEXT + "#" * 1_100_000 + "\n", "1,000,000 bytes"),
    init_with("newer-schema", manifest(schema_version=99), "upgrade kgit"),
    init_with("schema-version-text", manifest(schema_version="one"), "schema_version"),
    init_with("no-test-command", manifest(test_command=_DROP), "test_command"),
    init_with("no-quick-command", manifest(quick_command=_DROP), "quick_command"),
    init_with("no-shapes", manifest(target_shapes=_DROP), "target_shapes"),
    init_with("no-metric", manifest(primary_metric=_DROP), "primary_metric"),
    init_with("no-op", manifest(target_op=_DROP), "target_op"),
    init_with("no-kernel-source", manifest(kernel_source=_DROP), "kernel_source"),
    init_with("empty-kernel-source", manifest(kernel_source=[]), "kernel_source"),
    init_with("shapes-empty", manifest(target_shapes=[]), "target_shapes"),
    init_with("shapes-a-string", manifest(target_shapes="64x64x64"), "target_shapes"),
    init_with("shapes-a-number", manifest(target_shapes=64), "target_shapes"),
    init_with("label-a-list", manifest(target_shapes=[{"label": ["a"], "M": 1, "N": 1, "K": 1}])),
    init_with("representative-a-number", manifest(representative_shapes=1.5), "representative"),
    init_with("representative-shapes", manifest(representative_shapes=[{"label": "s64"}])),
    init_with("shape-a-list", manifest(target_shapes=[[64, 64, 64]]), "target_shapes[0]"),
    init_with("shape-no-label", manifest(target_shapes=[{"M": 1, "N": 1, "K": 1}]), "label"),
    init_with("label-comma", shapes({"label": "a,b", "M": 1, "N": 1, "K": 1}), "target_shapes[1]"),
    init_with("label-newline", shapes({"label": "a\nb", "M": 1, "N": 1, "K": 1}), "label"),
    init_with("label-empty", shapes({"label": "", "M": 1, "N": 1, "K": 1}), "target_shapes[1]"),
    init_with("label-a-number", shapes({"label": 64, "M": 1, "N": 1, "K": 1}), "target_shapes[1]"),
    init_with("label-twice", shapes({"label": "s64", "M": 1, "N": 1, "K": 1}), "duplicate label"),
    init_with("dim-zero", shapes({"label": "z", "M": 0, "N": 1, "K": 1}), "target_shapes[1].M"),
    init_with("dim-negative", shapes({"label": "z", "M": -1, "N": 1, "K": 1}), "target_shapes[1]"),
    init_with("dim-text", shapes({"label": "z", "M": "64", "N": 1, "K": 1}), "target_shapes[1].M"),
    init_with("dim-float", shapes({"label": "z", "M": 1.5, "N": 1, "K": 1}), "target_shapes[1].M"),
    init_with("dtype-a-number", shapes({"label": "z", "M": 1, "N": 1, "K": 1, "dtype": 16})),
    init_with("tflops-no-k", shapes({"label": "z", "M": 1, "N": 1}), "('z'): no K"),
    init_with(
        "combined-no-dims",
        manifest(primary_metric="Combined Step TFLOPS", target_shapes=[{"label": "x"}]),
        "('x'): no M, N, K",
    ),
    init_with("max-iterations-120", manifest(max_iterations=120), "max_iterations"),
    init_with("max-iterations-0", manifest(max_iterations=0), "max_iterations"),
    init_with("max-iterations-text", manifest(max_iterations="ten"), "max_iterations"),
    init_with("timeout-zero", manifest(timeout_s=0), "timeout_s"),
    init_with("timeout-negative", manifest(timeout_s=-5), "timeout_s"),
    init_with("execution-mode", manifest(execution_mode="cloud-mode"), "execution_mode"),
    init_with("execution-mode-null", manifest(execution_mode=None), "execution_mode"),
    init_with("decision-policy", manifest(decision_policy="vibes"), "decision_policy"),
    init_with("thresholds-unknown", manifest(thresholds={"bogus": 1}), "thresholds"),
    init_with("thresholds-zero", manifest(thresholds={"core_regression_pct": 0}), "thresholds"),
    init_with("thresholds-150", manifest(thresholds={"core_regression_pct": 150}), "thresholds"),
    init_with("thresholds-text", manifest(thresholds="strict"), "thresholds"),
    init_with("interleaved-pairs", manifest(interleaved={"min_pairs": 1}), "interleaved"),
    init_with("interleaved-conf", manifest(interleaved={"confidence": 1.5}), "interleaved"),
    init_with("representative-unknown", manifest(representative_shapes=["nope"]), "'nope'"),
    init_with("kernel-source-up", manifest(kernel_source="../../x"), "outside the repository"),
    init_with("kernel-source-abs", manifest(kernel_source="/etc/passwd"), "outside"),
    init_with("kernel-source-number", manifest(kernel_source=42), "kernel_source"),
    init_with("protected-up", manifest(protected_paths=["../h.py"]), "outside the repository"),
    init_with("protected-uncommitted", manifest(protected_paths=["new.py"]), "not committed"),
    init_with("quick-command-empty", manifest(quick_command=""), "quick_command"),
    init_with("test-command-number", manifest(test_command=42), "test_command"),
    init_with("quick-command-quote", manifest(quick_command="python 'harness.py"), "shell"),
    init_with("test-command-quote", manifest(test_command='pytest -k "a and b'), "shell"),
    init_with("target-op-empty", manifest(target_op=""), "target_op"),
    init_with("metric-empty", manifest(primary_metric=""), "primary_metric"),
    init_with("metric-number", manifest(primary_metric=42), "primary_metric"),
    init_with("performance-target-list", manifest(performance_target=[1, 2]), "performance_target"),
]

# -- shapes files (--shapes-file replaces the manifest's target_shapes) ---------------------------


def shapes_file(case_id: str, text: FileData, says: str = "") -> Case:
    return Case(
        f"shapes-{case_id}",
        ("init", "c2", "-m", "good.yaml", "--shapes-file", "shapes.yaml", "--no-input"),
        {"shapes.yaml": text},
        where=REPO,
        says=says,
    )


SHAPES_FILES = [
    shapes_file("empty", "", "holds no list of shapes"),
    shapes_file("a-scalar", "64x64x64\n", "holds no list of shapes"),
    shapes_file("mapping-without-shapes", "shapes: []\n", "holds no list of shapes"),
    shapes_file("list-of-numbers", "[64, 128]\n", "holds no list of shapes"),
    shapes_file("list-of-lists", "[[64, 64, 64]]\n", "holds no list of shapes"),
    shapes_file("invalid-yaml", "- {label: a, M: 1\n", "not valid YAML"),
    shapes_file("json-trailing", '[{"label": "a", "M": 1, "N": 1, "K": 1}] x\n', "YAML"),
    shapes_file("alias", "- &s {label: a, M: 1, N: 1, K: 1}\n- *s\n", "aliases"),
    shapes_file("duplicate-key", "- {label: a, M: 1, M: 2, N: 1, K: 1}\n", "duplicate key 'M'"),
    shapes_file("no-k", "- {label: a, M: 1, N: 1}\n", "no K"),
    shapes_file("duplicate-labels", "- {label: a, M: 1, N: 1, K: 1}\n" * 2, "duplicate label"),
    shapes_file("label-comma", "- {label: 'a,b', M: 1, N: 1, K: 1}\n", "target_shapes[0]"),
    shapes_file("latin-1", "- {label: é, M: 1, N: 1, K: 1}\n".encode("latin-1"), "UTF-8"),
    shapes_file("over-1-MB", "#" * 1_100_000 + "\n", "1,000,000 bytes"),
    shapes_file("empty-list", "[]\n", "target_shapes"),
    Case(
        "shapes-missing-file",
        ("init", "c2", "-m", "good.yaml", "--shapes-file", "nope.yaml", "--no-input"),
        where=REPO,
        says="does not exist",
    ),
    Case(
        "shapes-a-folder",
        ("init", "c2", "-m", "good.yaml", "--shapes-file", "sub", "--no-input"),
        {"sub/x": "1"},
        where=REPO,
        says="is a directory",
    ),
]

# -- harness CSVs (`kgit csv parse`, the campaign's metric: Forward TFLOPS) ----------------------

HEADER = (
    "label,B,M,N,K,Check,Forward TFLOPS,Forward TFLOPS_stddev,Backward TFLOPS,"
    "Backward TFLOPS_stddev,Forward Time (ms),Backward Time (ms),out_snr,da_snr,db_snr"
)
ROW = "s64,1,64,64,64,PASS,100,1,100,1,0.1,0.2,50,50,50"


def row(**cells: str) -> str:
    """ROW with some cells replaced, by column name."""
    names, values = HEADER.split(","), ROW.split(",")
    return ",".join(cells.get(name, value) for name, value in zip(names, values, strict=True))


def csv_case(case_id: str, data: str | bytes, says: str = "", *flags: str) -> Case:
    return Case(f"csv-{case_id}", ("csv", "parse", "bad.csv", *flags), {"bad.csv": data}, says=says)


CSVS = [
    csv_case("empty", "", "empty"),
    csv_case("blank-lines", "\n\n\n", "empty"),
    csv_case("header-only", HEADER + "\n", "no rows"),
    csv_case("header-drift", HEADER.replace("Check", "check") + "\n" + ROW + "\n", "drifted"),
    csv_case("extra-column", HEADER + ",note\n" + ROW + ",x\n", "extra 'note'"),
    csv_case("no-check-column", "label,Forward TFLOPS\ns64,100\n", "'Check'"),
    csv_case("no-metric-column", "label,Check,Forward GB/s\ns64,PASS,1\n", "'Forward TFLOPS'"),
    csv_case("metric-text", f"{HEADER}\n{row(**{'Forward TFLOPS': 'fast'})}\n", "not a number"),
    csv_case("metric-nan", f"{HEADER}\n{row(**{'Forward TFLOPS': 'nan'})}\n", "PASS row"),
    csv_case("metric-inf", f"{HEADER}\n{row(**{'Forward TFLOPS': 'inf'})}\n", "PASS row"),
    csv_case("metric-zero", f"{HEADER}\n{row(**{'Forward TFLOPS': '0'})}\n", "PASS row"),
    csv_case("metric-negative", f"{HEADER}\n{row(**{'Forward TFLOPS': '-5'})}\n", "PASS row"),
    csv_case("snr-text", f"{HEADER}\n{row(out_snr='high')}\n", "not a number"),
    csv_case("check-maybe", f"{HEADER}\n{row(Check='MAYBE')}\n", "'MAYBE'"),
    csv_case("check-empty", f"{HEADER}\n{row(Check='')}\n", "Check"),
    csv_case("label-empty", f"{HEADER}\n{row(label='')}\n", "empty label"),
    csv_case("label-twice", f"{HEADER}\n{ROW}\n{ROW}\n", "duplicate label"),
    csv_case("short-row", f"{HEADER}\ns64,1,64\n", "cells"),
    csv_case("long-row", f"{HEADER}\n{ROW},1,2\n", "cells"),
    csv_case(
        "header-twice", "label,Check,x,x\ns64,PASS,1,1\n", "repeats a column", "--metric", "x"
    ),
    csv_case("latin-1", f"{HEADER}\n{row(label='é')}\n".encode("latin-1"), "UTF-8"),
    csv_case("nul-bytes", f"{HEADER}\n{ROW}\x00\n", "NUL"),
    csv_case("unclosed-quote", f'{HEADER}\n"s64,1,64,64,64,PASS,100\n', "CSV"),
    csv_case("huge-field", f"{HEADER}\n{'x' * 200_000},{ROW}\n", "CSV"),
    csv_case("png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "CSV"),
    csv_case("unknown-metric", f"{HEADER}\n{ROW}\n", "'Nope'", "--metric", "Nope"),
    Case("csv-missing-file", ("csv", "parse", "nope.csv"), says="does not exist"),
    Case("csv-a-folder", ("csv", "parse", "sub"), {"sub/x": "1"}, says="is a directory"),
]

# -- campaign names ------------------------------------------------------------------------------


def name_case(case_id: str, name: str) -> Case:
    return Case(
        f"name-{case_id}",
        ("init", name, "-m", "good.yaml", "--no-input"),
        where=REPO,
        says="invalid campaign name",
    )


NAMES = [
    name_case("slash", "a/b"),
    name_case("dot-dot", "a..b"),
    name_case("lock", "x.lock"),
    name_case("space", "a b"),
    name_case("leading-dot", ".hidden"),
    name_case("trailing-dot", "x."),
    name_case("non-ascii", "é"),
    name_case("too-long", "a" * 101),
    name_case("colon", "a:b"),
    name_case("tilde", "a~b"),
    name_case("caret", "a^b"),
    name_case("star", "a*b"),
    name_case("backslash", "a\\b"),
    name_case("at-brace", "@{u}"),
    name_case("empty", ""),
    name_case("newline", "a\nb"),
    Case(
        "name-leading-dash",
        ("init", "-bad", "-m", "good.yaml", "--no-input"),
        where=REPO,
        says="No such option",  # click reads -bad as the short options -b -a -d
    ),
    Case("name-option-climbs", ("-c", "../x", "status"), says="invalid campaign name"),
    Case("name-option-slash", ("-c", "a/b", "log"), says="invalid campaign name"),
    Case("name-option-unknown", ("-c", "nosuch", "status"), says="no campaign named 'nosuch'"),
    Case(
        "name-import",
        ("import", "folder", "--name", "bad/name"),
        {"folder/x": "1"},
        where=REPO,
        says="invalid campaign name",
    ),
    Case(
        "name-taken",
        ("init", "c1", "-m", "good.yaml", "--no-input"),
        says="campaign 'c1' already exists",
    ),
]

# -- command-line arguments ----------------------------------------------------------------------

ARGUMENTS = [
    Case("arg-unknown-command", ("nosuch",), says="No such command"),
    Case("arg-unknown-option", ("log", "--bogus"), says="No such option"),
    Case("arg-option-misplaced", ("baseline", "-q"), says="No such option"),
    Case("arg-campaign-no-value", ("-c",), says="requires an argument"),
    Case("arg-init-no-name", ("init",), where=REPO, says="Missing argument"),
    Case("arg-show-no-round", ("show",), says="Missing argument"),
    Case("arg-show-text", ("show", "abc"), says="not a round number"),
    Case("arg-show-round-x", ("show", "round-x"), says="not a round number"),
    Case("arg-show-float", ("show", "1.5"), says="not a round number"),
    Case("arg-show-negative", ("show", "-1"), says="No such option"),
    Case("arg-show-unknown", ("show", "999"), says="round-999"),
    Case("arg-show-zero", ("show", "0"), says="round-0"),
    Case("arg-report-format", ("report", "--format", "pdf"), says="'pdf'"),
    Case("arg-report-no-folder", ("report", "-o", "nodir/r.md"), says="nodir"),
    Case("arg-round-no-command", ("round",), says="round"),
    Case("arg-round-unknown", ("round", "bogus"), says="No such command"),
    Case("arg-start-no-hypothesis", ("round", "start"), says="Missing argument"),
    Case("arg-start-empty-hypothesis", ("round", "start", ""), says="hypothesis"),
    Case("arg-start-blank-hypothesis", ("round", "start", " \n "), says="hypothesis"),
    Case("arg-rollback-reason-no-value", ("round", "rollback", "--reason"), says="requires"),
    Case("arg-validate-extra", ("round", "validate", "--full", "extra"), says="extra argument"),
    Case("arg-hook-unknown", ("hook", "nosuch"), says="unknown hook"),
    Case("arg-export-no-folder", ("export",), says="Missing argument"),
    Case("arg-export-not-empty", ("export", "out"), {"out/x": "1"}, says="not empty"),
    Case("arg-export-onto-file", ("export", "out.txt"), {"out.txt": "x"}, says="out.txt"),
    Case("arg-export-under-file", ("export", "f.txt/x"), {"f.txt": "x"}, says="cannot write"),
    Case("arg-export-name-too-long", ("export", "x" * 300), says="File name too long"),
    Case("arg-plots-dev-null", ("report", "--plots", "/dev/null"), says="cannot write the plots"),
    Case("arg-plots-too-long", ("report", "--plots", "p" * 300), says="cannot write the plots"),
    Case("arg-tips-add-nothing", ("tips", "add"), says="a tip needs all four parts"),
    Case("arg-tips-round-text", ("tips", "add", "--round", "abc"), says="not a valid integer"),
    Case("arg-finish-path-no-value", ("finish", "--allow-path"), says="requires an argument"),
    Case("arg-status-extra", ("status", "--all", "extra"), says="extra argument"),
    Case("arg-demo-kernel", ("demo", "--kernel", "conv"), says="'conv'"),
    Case(
        "arg-max-iterations-text",
        ("init", "c2", "-m", "good.yaml", "--max-iterations", "abc"),
        where=REPO,
        says="not a valid integer",
    ),
    Case(
        "arg-max-iterations-500",
        ("init", "c2", "-m", "good.yaml", "--max-iterations", "500", "--no-input"),
        where=REPO,
        says="max_iterations",
    ),
    Case(
        "arg-execution-mode",
        ("init", "c2", "-m", "good.yaml", "--execution-mode", "cloud"),
        where=REPO,
        says="'cloud'",
    ),
    Case(
        "arg-from-template",
        ("init", "c2", "--from-template", "conv"),
        where=REPO,
        says="'conv'",
    ),
    Case(
        "arg-manifest-missing",
        ("init", "c2", "-m", "nope.yaml", "--no-input"),
        where=REPO,
        says="nope.yaml",
    ),
    Case(
        "arg-manifest-folder",
        ("init", "c2", "-m", "sub", "--no-input"),
        {"sub/x": "1"},
        where=REPO,
        says="is a directory",
    ),
    Case(
        "arg-kernel-source-outside",
        ("init", "c2", "-m", "good.yaml", "--kernel-source", "/etc/passwd", "--no-input"),
        where=REPO,
        says="outside the repository",
    ),
    Case(
        "arg-kernel-source-empty",
        ("init", "c2", "-m", "good.yaml", "--kernel-source", "", "--no-input"),
        where=REPO,
        says="kernel_source",
    ),
    Case(
        "arg-test-command-empty",
        ("init", "c2", "-m", "good.yaml", "--test-command", "", "--no-input"),
        where=REPO,
        says="test_command",
    ),
    Case(
        "arg-metric-empty",
        ("init", "c2", "-m", "good.yaml", "--primary-metric", "", "--no-input"),
        where=REPO,
        says="primary_metric",
    ),
    Case(
        "arg-manifest-dev-zero",
        ("init", "c2", "-m", "/dev/zero", "--no-input"),
        where=REPO,
        says="not a regular file",
    ),
    Case(
        "arg-manifest-fifo",
        ("init", "c2", "-m", "pipe", "--no-input"),
        {"pipe": Fifo()},
        where=REPO,
        says="not a regular file",
    ),
    Case(
        "arg-shapes-dev-zero",
        ("init", "c2", "-m", "good.yaml", "--shapes-file", "/dev/zero", "--no-input"),
        where=REPO,
        says="not a regular file",
    ),
    Case("arg-csv-dev-zero", ("csv", "parse", "/dev/zero"), says="not a regular file"),
    Case("arg-csv-fifo", ("csv", "parse", "pipe"), {"pipe": Fifo()}, says="not a regular file"),
    Case("arg-import-missing", ("import", "nope"), where=REPO, says="does not exist"),
    Case("arg-import-a-file", ("import", "f.txt"), {"f.txt": "x"}, where=REPO, says="f.txt"),
]

# -- seed campaign folders (`kgit import`) ------------------------------------------------------

_SUMMARY = "---\nkgit: round-summary\nround: 1\nstatus: BASELINE\nnote: {}\n---\n"
_NOTE = "{round: 1, status: BASELINE, hypothesis: baseline, metric: Forward TFLOPS%s}"


def summary_with(extra: str = "", metric: str = "Forward TFLOPS") -> str:
    note = _NOTE.replace("Forward TFLOPS", metric) % extra
    return _SUMMARY.replace("note: {}", f"note: {note}")


def import_case(case_id: str, files: dict[str, FileData], says: str) -> Case:
    return Case(
        f"import-{case_id}",
        ("import", "seed", "--name", "c2"),
        {f"seed/{path}": data for path, data in files.items()},
        where=REPO,
        says=says,
    )


IMPORTS = [
    import_case("no-manifest", {"rounds/x": "1"}, "has no manifest.yaml"),
    import_case("no-rounds", {"manifest.yaml": GOOD_TEXT}, "round-1 must be the baseline"),
    import_case(
        "no-front-matter",
        {"manifest.yaml": GOOD_TEXT, "rounds/round-1/summary.md": "# round 1\n"},
        "no YAML front matter",
    ),
    import_case(
        "note-not-a-note",
        {"manifest.yaml": GOOD_TEXT, "rounds/round-1/summary.md": _SUMMARY},
        "the front matter is invalid",
    ),
    import_case(
        "manifest-alias",
        {"manifest.yaml": GOOD_TEXT + ALIAS_BOMB, "rounds/round-1/summary.md": _SUMMARY},
        "aliases",
    ),
    import_case("manifest-a-list", {"manifest.yaml": "- 1\n"}, "not a mapping of fields"),
    import_case(
        "note-aggregate-a-list",
        {"manifest.yaml": GOOD_TEXT, "rounds/round-1/summary.md": summary_with(", aggregate: [1]")},
        "note.aggregate: [1] is not float | None",
    ),
    import_case(
        "note-shape-label-a-number",
        {
            "manifest.yaml": GOOD_TEXT,
            "rounds/round-1/summary.md": summary_with(", shapes: [{label: 1, check: PASS}]"),
        },
        "note.shapes",
    ),
    import_case(
        "abandoned-round-text",
        {
            "manifest.yaml": GOOD_TEXT,
            "rounds/round-1/summary.md": summary_with(),
            "rounds/round-2/summary.md": _SUMMARY.replace("round: 1", "round: 2").replace(
                "note: {}", "abandoned: {round: two, hypothesis: x, at: y}"
            ),
        },
        "abandoned needs round: 2",
    ),
    import_case(
        "note-other-metric",
        {"manifest.yaml": GOOD_TEXT, "rounds/round-1/summary.md": summary_with("", "GB/s")},
        "is not the manifest's primary_metric",
    ),
    import_case(
        "manifest-kgit-section",
        {"manifest.yaml": GOOD_TEXT + "kgit: [1]\n", "rounds/round-1/summary.md": _SUMMARY},
        "kgit section is not a mapping",
    ),
    import_case(
        "manifest-outside",
        {"manifest.yaml": manifest(kernel_source="../../x")},
        "outside the repository",
    ),
    import_case(
        "manifest-a-link",
        {"manifest.yaml": Link("good.yaml"), "rounds/round-1/summary.md": _SUMMARY},
        "is a symbolic link",
    ),
]

# A few run as a real `python -m kgit` process: the same promises outside click's runner.
SUBPROCESS = [
    Case(
        f"subprocess-{case.id}",
        case.args,
        case.files,
        case.where,
        case.code,
        case.says,
        case.why,
        subprocess=True,
    )
    for case in (MANIFESTS[10], MANIFESTS[13], CSVS[3], NAMES[0], ARGUMENTS[0])
]

# -- refused states (exit 1) ---------------------------------------------------------------------

REFUSED = [
    Case(
        "state-baseline-twice",
        ("baseline",),
        code=1,
        says="already has its baseline",
        why="round-1 is recorded once",
    ),
    Case(
        "state-validate-no-round",
        ("round", "validate"),
        code=1,
        says="no round in progress",
        why="nothing to validate before round start",
    ),
    Case(
        "state-accept-no-round",
        ("round", "accept"),
        code=1,
        says="no round",
        why="nothing to accept before round start",
    ),
    Case(
        "state-rollback-no-round",
        ("round", "rollback"),
        code=1,
        says="no round",
        why="nothing to roll back before round start",
    ),
    Case(
        "state-start-dirty",
        ("round", "start", "bigger tiles"),
        {"kernel.txt": "speed: 5\n"},
        code=1,
        says="kernel.txt",
        why="uncommitted kernel edits would leak into the round",
    ),
    Case("state-no-campaign-log", ("log",), where=REPO, says="no kgit campaign"),
    Case("state-no-campaign-status", ("status",), where=REPO, says="no kgit campaign"),
    Case("state-no-campaign-baseline", ("baseline",), where=REPO, says="no kgit campaign"),
    Case("state-no-campaign-start", ("round", "start", "x"), where=REPO, says="no kgit campaign"),
    Case("state-no-campaign-report", ("report",), where=REPO, says="no kgit campaign"),
    Case("state-no-campaign-export", ("export", "out"), where=REPO, says="no kgit campaign"),
    Case("state-no-campaign-tips", ("tips",), where=REPO, says="no kgit campaign"),
]

CASES = [*MANIFESTS, *SHAPES_FILES, *CSVS, *NAMES, *ARGUMENTS, *IMPORTS, *SUBPROCESS, *REFUSED]
