"""Bad input and broken harnesses: a clear error with a hint, no traceback, nothing lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import commit, git, run_kgit


def start_round_with(repo: Path, kernel: str) -> None:
    assert run_kgit("round", "start", "a change").code == 0
    (repo / "kernel.txt").write_text(kernel)
    assert commit(repo, "change").returncode == 0


@pytest.mark.parametrize(
    ("kernel", "message"),
    [
        ("speed: 120\nexit: 3\n", "harness exited 3"),
        ("speed: 120\ndrift\n", "header drifted"),
        ("speed: 120\nflood\n", None),  # 50 MB of output: only the tail is kept
        ("speed: 120\nfail: s64\n", None),  # a FAIL shape is a verdict, not an error
    ],
)
def test_a_broken_harness_is_a_recorded_error(
    campaign: Path, kernel: str, message: str | None
) -> None:
    repo = campaign
    start_round_with(repo, kernel)
    result = run_kgit("-q", "round", "validate", "--json")
    assert "Traceback" not in result.err
    if message is None:
        if "fail" in kernel:
            assert result.code == 0 and result.json()["decision"] == "ROLLED BACK"  # type: ignore[index]
        else:
            assert result.code == 0, result
        return
    assert result.code == 1
    assert message in result.json()["error"]  # type: ignore[index]
    note = git(repo, "notes", "--ref=refs/notes/kgit/c1/rounds", "show", "HEAD")
    assert "status: ERROR" in note
    assert "round-2" in run_kgit("show", "2").out
    # The round is still open: fix the harness input and validate again (not a new round).
    (repo / "kernel.txt").write_text("speed: 120\n")
    assert commit(repo, "fix").returncode == 0
    assert run_kgit("round", "validate").code == 0


def test_a_hanging_harness_times_out(kernel_repo: Path) -> None:
    manifest = kernel_repo / "manifest.yaml"
    manifest.write_text(manifest.read_text().replace("timeout_s: 30", "timeout_s: 2"))
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    assert run_kgit("baseline").code == 0
    start_round_with(kernel_repo, "speed: 120\nhang\n")
    result = run_kgit("-q", "round", "validate")
    assert result.code == 1 and "timed out after 2 s" in result.err


def test_a_harness_that_cannot_run_here_records_nothing(campaign: Path) -> None:
    repo = campaign
    start_round_with(repo, "speed: 120\nexit: 2\n")
    result = run_kgit("-q", "round", "validate")
    assert result.code == 1 and "cannot run on this machine" in result.err
    assert "no note found" in git_fails(
        repo, "notes", "--ref=refs/notes/kgit/c1/rounds", "list", "HEAD"
    )
    assert "refs/kgit/c1/rounds/2" not in git(repo, "for-each-ref", "refs/kgit/c1/rounds/")


def git_fails(repo: Path, *args: str) -> str:
    import subprocess

    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    assert proc.returncode != 0
    return proc.stderr


def test_a_missing_test_command_refuses_the_baseline(kernel_repo: Path) -> None:
    manifest = kernel_repo / "manifest.yaml"
    text = manifest.read_text()
    manifest.write_text(text.replace("test_command:", "test_command: no-such-tool-xyz #"))
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    result = run_kgit("-q", "baseline")
    assert result.code == 1 and "correctness gate failed" in result.err and "hint:" in result.err
    assert "not found" in result.err


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda t: t + "max_iterations: 120\n", "max_iterations"),
        (
            lambda t: t.replace("quick_command:", "quick_cmd:"),
            "'quick_command' is a required property",
        ),
        (lambda t: t.replace("label: s128", "label: s64"), "duplicate label 's64'"),
        (lambda t: t.replace("M: 128,", "M: -128,"), "target_shapes[1].M"),
        (lambda t: t + "execution_mode: cloud\n", "execution_mode"),
        (lambda t: t + "thresholds: {core_regresion_pct: 3}\n", "thresholds"),
        (lambda t: t + "representative_shapes: [nope]\n", "'nope' is not a label"),
        (lambda t: "target_op: [unclosed\n", "not valid YAML"),
        (lambda t: "- a list\n", "must be a YAML mapping"),
        (lambda t: "!!python/object/apply:os.system [echo pwned]\n", "not valid YAML"),
        (lambda t: t + "schema_version: 7\n", "upgrade kgit"),
    ],
)
def test_bad_manifests_are_refused_with_the_key_named(
    kernel_repo: Path, edit, expected: str
) -> None:  # type: ignore[no-untyped-def]
    manifest = kernel_repo / "manifest.yaml"
    manifest.write_text(edit(manifest.read_text()))
    before = git(kernel_repo, "for-each-ref")
    result = run_kgit("init", "c1", "-m", "manifest.yaml")
    assert result.code == 2, result
    assert expected in result.err and "hint:" in result.err and "Traceback" not in result.err
    assert git(kernel_repo, "for-each-ref") == before


def test_unknown_keys_are_refused_with_a_suggestion_and_user_keys_pass(kernel_repo: Path) -> None:
    manifest = kernel_repo / "manifest.yaml"
    text = manifest.read_text()
    manifest.write_text(text + "max_iteration: 20\n")
    result = run_kgit("init", "c1", "-m", "manifest.yaml")
    assert result.code == 2, result
    assert "max_iteration: unknown key; did you mean 'max_iterations'?" in result.err
    manifest.write_text(text + "x-owner: kernel team\n")
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0


@pytest.mark.parametrize("name", ["../escape", "a/b", "-rf", "has space", "x..y", "best.lock", ""])
def test_hostile_campaign_names_are_refused(kernel_repo: Path, name: str) -> None:
    result = run_kgit("init", "-m", "manifest.yaml", "--", name)
    assert result.code == 2 and "invalid campaign name" in result.err
    assert "refs/kgit" not in git(kernel_repo, "for-each-ref")


def test_unknown_campaign_and_no_campaign(kernel_repo: Path) -> None:
    none = run_kgit("status")
    assert none.code == 2 and "kgit init" in none.err
    run_kgit("init", "c1", "-m", "manifest.yaml")
    unknown = run_kgit("-c", "c2", "status")
    assert unknown.code == 2 and "no campaign named 'c2'" in unknown.err


def test_outside_a_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_kgit("status")
    assert result.code == 1 and "not inside a git work tree" in result.err


def test_unexpected_errors_exit_3_with_a_log(campaign: Path) -> None:
    repo = campaign
    # Corrupt the campaign's stored state behind kgit's back.
    tree = git(repo, "rev-parse", "refs/kgit/c1/campaign^{tree}")
    entries = git(repo, "ls-tree", tree).splitlines()
    import subprocess

    bad = (
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"],
            cwd=repo,
            input=b"{not json",
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    lines = [
        e if not e.endswith("state.json") else e.split()[0] + " blob " + bad + "\tstate.json"
        for e in entries
    ]
    new_tree = subprocess.run(
        ["git", "mktree"],
        cwd=repo,
        input="\n".join(lines) + "\n",
        text=True,
        capture_output=True,
        check=True,
    ).stdout.strip()
    parent = git(repo, "rev-parse", "refs/kgit/c1/campaign")
    commit_sha = git(repo, "commit-tree", new_tree, "-p", parent, "-m", "corrupt")
    git(repo, "update-ref", "refs/kgit/c1/campaign", commit_sha)
    result = run_kgit("status")
    assert result.code == 3 and "kgit crashed" in result.err and "Traceback" not in result.err
    logs = list((repo / ".git" / "kgit" / "crashes").glob("crash-*.log"))
    assert logs and "Traceback" in logs[0].read_text()
