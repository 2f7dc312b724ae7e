"""Hostile or careless manifests (issue 12, item 9): each is refused fast, with the line or the
key to fix, and `kgit init` writes nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kgit.errors import UsageError
from kgit.records.manifest import manifest_from_stored, parse_manifest
from kgit.records.yamltext import load_yaml_text
from tests.conftest import git, run_kgit

# 9 levels of 9 aliases: ~600 bytes that expand to 9^9 strings.
ALIAS_BOMB = "".join(
    f"{name}: &{name} [{','.join([f'*{prev}'] * 9) if prev else ','.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)


def init_refused(repo: Path, manifest: str, *extra: str) -> str:
    (repo / "manifest.yaml").write_text(manifest)
    start = time.monotonic()
    result = run_kgit("init", "c1", "--manifest", "manifest.yaml", "--no-input", *extra)
    assert time.monotonic() - start < 10
    assert result.code == 2, result
    assert "hint:" in result.err and "Traceback" not in result.err
    assert git(repo, "for-each-ref", "refs/kgit/", "refs/heads/kgit/") == ""
    return result.err


def test_an_alias_bomb_is_refused_at_once(kernel_repo: Path) -> None:
    assert len(ALIAS_BOMB) < 700
    # Named by a field, the expansion is what jsonschema and json.dumps would walk: 9^9 items.
    text = (kernel_repo / "manifest.yaml").read_text() + ALIAS_BOMB + "representative_shapes: *i\n"
    assert "manifest.yaml line 18: YAML aliases (*a) are not allowed" in init_refused(
        kernel_repo, text
    )


def test_a_harmless_alias_is_refused_too(kernel_repo: Path) -> None:
    text = (
        (kernel_repo / "manifest.yaml")
        .read_text()
        .replace("target_gpu: CPU", "target_gpu: &gpu CPU\ntarget_lang: *gpu")
    )
    assert "YAML aliases (*gpu)" in init_refused(kernel_repo, text)


def test_a_huge_manifest_is_refused_before_it_is_parsed(kernel_repo: Path) -> None:
    text = (kernel_repo / "manifest.yaml").read_text() + "# padding\n" * 1_600_000
    assert "manifest.yaml is over 1,000,000 bytes" in init_refused(kernel_repo, text)


def test_a_manifest_of_many_shapes_under_the_cap_is_read() -> None:
    head = "target_op: g\ntarget_backend: T\nprimary_metric: Forward TFLOPS\n"
    head += "test_command: t\nquick_command: python h.py\ntarget_shapes:\n"
    shapes = "".join(f"  - {{label: s{i}, M: {i + 1}, N: 8, K: 8}}\n" for i in range(2000))
    manifest, _ = parse_manifest(head + shapes)
    assert len(manifest.target_shapes) == 2000


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("kernel_source: ../../x", "kernel_source: '../../x' is outside the repository"),
        ("kernel_source: /etc/passwd", "kernel_source: '/etc/passwd' is outside the repository"),
        ("kernel_source: [ok.py, a/../../b.py]", "kernel_source[1]: 'a/../../b.py' is outside"),
        (
            "kernel_source: kernel.txt\nprotected_paths: [../harness.py]",
            "protected_paths[0]: '../harness.py' is outside",
        ),
    ],
)
def test_paths_must_stay_inside_the_repository(kernel_repo: Path, line: str, message: str) -> None:
    text = (kernel_repo / "manifest.yaml").read_text().replace("kernel_source: kernel.txt", line)
    assert message in init_refused(kernel_repo, text)


def test_a_path_flag_is_checked_like_the_manifest(kernel_repo: Path) -> None:
    text = (kernel_repo / "manifest.yaml").read_text()
    err = init_refused(kernel_repo, text, "--kernel-source", "../../etc/shadow")
    assert "kernel_source[0]: '../../etc/shadow' is outside the repository" in err


def test_a_duplicate_key_names_the_key_and_both_lines(kernel_repo: Path) -> None:
    text = (kernel_repo / "manifest.yaml").read_text() + "target_op: gemm_fp8\n"
    err = init_refused(kernel_repo, text)
    assert "line 17: duplicate key 'target_op' (first at line 1)" in err


def test_a_duplicate_key_inside_a_shape_is_found(kernel_repo: Path) -> None:
    text = (kernel_repo / "manifest.yaml").read_text()
    text = text.replace("{label: s128, M: 128,", "{label: s128, M: 128, M: 256,")
    assert "line 12: duplicate key 'M' (first at line 12)" in init_refused(kernel_repo, text)


def test_a_tflops_shape_without_k_is_refused_by_its_label(kernel_repo: Path) -> None:
    text = (kernel_repo / "manifest.yaml").read_text()
    text = text.replace("{label: s256, M: 256, N: 256, K: 256}", "{label: s256, M: 256, N: 256}")
    err = init_refused(kernel_repo, text)
    assert "target_shapes[2] ('s256'): no K; Forward TFLOPS needs integer M, N and K" in err


def test_a_bandwidth_metric_needs_no_k() -> None:
    text = "target_op: rmsnorm\ntarget_backend: T\nprimary_metric: Forward GB/s\n"
    text += "test_command: t\nquick_command: python h.py\ntarget_shapes: [{label: x, M: 8, N: 8}]\n"
    assert parse_manifest(text)[0].shape_labels == ["x"]


def test_a_shapes_file_is_read_as_carefully(kernel_repo: Path) -> None:
    (kernel_repo / "shapes.yaml").write_text(ALIAS_BOMB)
    text = (kernel_repo / "manifest.yaml").read_text()
    err = init_refused(kernel_repo, text, "--shapes-file", "shapes.yaml")
    assert "shapes.yaml line 2: YAML aliases (*a) are not allowed" in err


def test_yaml_text_reads_plain_documents() -> None:
    assert load_yaml_text("a: [1, {b: 2}]\n'1': x\n1: y\n", "f") == {
        "a": [1, {"b": 2}],
        "1": "x",
        1: "y",
    }
    assert load_yaml_text("", "f") is None
    with pytest.raises(UsageError, match="f is not valid YAML"):
        load_yaml_text("a: 1\n---\nb: 2\n", "f")


# -- issue 15 item 1: a mistyped manifest names the fix --------------------------------------

VALID = """\
target_op: gemm
target_backend: TRITON
primary_metric: Forward TFLOPS
test_command: pytest -q
quick_command: python bench.py
target_shapes:
  - {label: s1, M: 64, N: 64, K: 64}
"""


def _problems(text: str) -> str:
    with pytest.raises(UsageError) as refused:
        parse_manifest(text)
    return refused.value.message


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (VALID.replace("target_shapes:", "target_shape:"), "did you mean 'target_shapes'?"),
        (VALID + "thresholds: {treshold: 3}\n", "thresholds.treshold: unknown key"),
        (VALID + "interleaved: {block: 10}\n", "did you mean 'block_ms'?"),
        (
            VALID.replace("Forward TFLOPS", "Combined Step TFLOP"),
            "did you mean 'Combined Step TFLOPS'?",
        ),
        (VALID.replace("K: 64}", "K: 64, dtype: fp23}"), "unknown dtype 'fp23'; did you mean"),
        (VALID + "decision_policy: interleave\n", "decision_policy"),
    ],
)
def test_a_typo_is_refused_with_the_key_it_probably_is(text: str, says: str) -> None:
    assert says in _problems(text)


def test_user_keys_and_custom_metrics_pass() -> None:
    manifest, warnings = parse_manifest(VALID + "x-team: kernels\n")
    assert manifest.target_op == "gemm" and warnings == []
    _, warnings = parse_manifest(VALID.replace("Forward TFLOPS", "Tokens per second"))
    assert any("not one kgit knows" in w for w in warnings)


def test_the_dtype_names_are_those_the_harness_reads() -> None:
    from kgit.measure.shapes import _DTYPES
    from kgit.records.manifest_schema import DTYPE_NAMES

    assert set(DTYPE_NAMES) == set(_DTYPES)


def test_the_default_policy_is_interleaved_and_a_named_seed_is_kept() -> None:
    """The interleaved policy met the issue's figures on an H200 (docs/measured.md, "Verdicts on
    the H200"): a manifest that says nothing gets it; one that names `seed` keeps the seed's rule;
    the template documents the same default."""
    from kgit.resources import data_dir

    assert parse_manifest(VALID)[0].decision_policy == "interleaved"
    assert parse_manifest(VALID + "decision_policy: seed\n")[0].decision_policy == "seed"
    template = load_yaml_text((data_dir("templates") / "manifest.yaml").read_text(), "template")
    assert template["decision_policy"] == "interleaved"
    # A campaign stored before the default changed keeps the rule its rounds were judged by.
    stored = parse_manifest(VALID)[0].to_dict()
    del stored["decision_policy"]
    assert manifest_from_stored(json.dumps(stored)).decision_policy == "seed"
    stored["decision_policy"] = None
    assert manifest_from_stored(json.dumps(stored)).decision_policy == "seed"


def test_a_policys_settings_are_the_manifest_section_of_its_name() -> None:
    """What a policy's rule reads besides the thresholds: its own section (`interleaved:`), found
    by the policy's name; a policy with no section has none."""
    from kgit.records.manifest import Interleaved

    manifest = parse_manifest(VALID + "interleaved: {confidence: 0.95}\n")[0]
    assert manifest.policy_settings == Interleaved(confidence=0.95)
    assert parse_manifest(VALID + "decision_policy: seed\n")[0].policy_settings is None


def test_a_policy_added_to_the_table_is_one_the_manifest_accepts_and_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The manifest spells no policy: a row added to the table is enough for `decision_policy`
    to accept its name, and for the hint of a wrong one to list it."""
    from kgit.records.policies import POLICIES

    assert "`toy`" not in _problems(VALID + "decision_policy: vibes\n")
    monkeypatch.setitem(POLICIES, "toy", "tests.engine.toy_policy")
    assert parse_manifest(VALID + "decision_policy: toy\n")[0].decision_policy == "toy"
    said = _problems(VALID + "decision_policy: vibes\n")
    assert "expected one of `seed`, `interleaved`, `toy`; the default is `interleaved`" in said
