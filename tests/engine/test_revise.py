"""A manifest can be fixed and a campaign removed (issue 15 item 1): `kgit manifest edit` records a
revision in the campaign record (anything before the baseline, only what keeps rounds comparable
after it, trust following the commands), and `kgit campaign delete` removes everything kgit keeps
for a campaign."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import MANIFEST, SEED_POLICY, git, run_kgit
from tests.engine.remotes import accepted, rolled_back, validated
from tests.engine.test_trust import trusted_value


def _stored_manifest(repo: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(git(repo, "cat-file", "blob", "refs/kgit/c1/campaign:manifest.yaml"))


def _revisions(repo: Path) -> list[str]:
    return git(repo, "log", "--format=%s", "refs/kgit/c1/campaign", "--", "manifest.yaml").split(
        "\n"
    )


def _write(repo: Path, text: str, name: str = "revised.yaml") -> str:
    (repo / name).write_text(text)
    return name


def test_before_the_baseline_any_field_may_change(kernel_repo: Path) -> None:
    repo = kernel_repo
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    text = MANIFEST.format(python=sys.executable)
    fewer = text.split("  - {label: s256")[0] + "primary_metric_note: x\n"
    refused = run_kgit("manifest", "edit", "-m", _write(repo, fewer))
    assert refused.code == 2 and "did you mean 'primary_metric'" in refused.err, refused

    fewer = text.split("  - {label: s256")[0]
    revised = run_kgit("manifest", "edit", "-m", _write(repo, fewer), "--json")
    assert revised.code == 0, revised
    data = revised.json()
    assert data["recorded"] is True and data["revision"] == 2  # type: ignore[index]
    assert list(data["changed"]) == ["target_shapes"]  # type: ignore[index]
    assert data["needs_trust"] is False  # type: ignore[index]
    assert [s["label"] for s in _stored_manifest(repo)["target_shapes"]] == ["s64", "s128"]
    assert _revisions(repo)[0] == "kgit c1: manifest revision 2: target_shapes"

    baseline = run_kgit("-q", "baseline", "--json")
    assert baseline.code == 0, baseline  # trusted: no command changed
    shapes = git(repo, "notes", "--ref=refs/notes/kgit/c1/rounds", "show", "kgit/c1/best")
    assert "s128" in shapes and "s256" not in shapes

    same = run_kgit("manifest", "edit", "-m", _write(repo, fewer), "--json")
    assert same.code == 0 and same.json()["recorded"] is False  # type: ignore[index]
    assert len(_revisions(repo)) == 2


def test_after_the_baseline_only_what_keeps_rounds_comparable(campaign: Path) -> None:
    repo = campaign
    text = MANIFEST.format(python=sys.executable)
    before = git(repo, "rev-parse", "refs/kgit/c1/campaign")
    for change, field in (
        (text.replace("  - {label: s2048, M: 2048, N: 2048, K: 2048}\n", ""), "target_shapes"),
        (text.replace("Forward TFLOPS", "Combined Step TFLOPS"), "primary_metric"),
        (text.replace("harness.py", "harness.py --fast"), "quick_command"),
        (text.replace("check.py", "check.py -k fast"), "test_command"),
    ):
        refused = run_kgit("manifest", "edit", "-m", _write(repo, change))
        assert refused.code == 2, refused
        assert f"{field} cannot change" in refused.err
        assert "kgit init NEW_NAME" in refused.err  # the way out
    assert git(repo, "rev-parse", "refs/kgit/c1/campaign") == before

    looser = (
        text + "max_iterations: 7\nperformance_target: 150\nthresholds: {core_regression_pct: 3}\n"
    )
    revised = run_kgit("manifest", "edit", "-m", _write(repo, looser), "--json")
    assert revised.code == 0, revised
    data = revised.json()
    assert sorted(data["changed"]) == ["max_iterations", "performance_target", "thresholds"]  # type: ignore[index]
    assert data["changed"]["max_iterations"] == {"from": 50, "to": 7}  # type: ignore[index]
    assert data["needs_trust"] is False  # type: ignore[index]
    assert run_kgit("status", "--json").json()["max_iterations"] == 7  # type: ignore[index]
    stored = _stored_manifest(repo)
    assert stored["thresholds"]["core_regression_pct"] == 3
    # The record still holds every round: the revision is one more commit of it.
    assert git(repo, "rev-parse", "refs/kgit/c1/campaign~1") == before
    # No new approval was needed: a round validates at once.
    number, _ = validated(repo, "bigger tiles", 120)
    assert number == 2


def test_a_changed_command_needs_trust_again(campaign: Path) -> None:
    repo = campaign
    approved = trusted_value(repo)
    text = MANIFEST.format(python=sys.executable) + "acceptance_command: echo full suite\n"
    revised = run_kgit("manifest", "edit", "-m", _write(repo, text))
    assert revised.code == 0, revised
    assert "kgit trust --campaign c1" in revised.out
    assert trusted_value(repo) == approved  # not carried over to the new commands
    assert run_kgit("round", "start", "bigger tiles").code == 0
    (repo / "kernel.txt").write_text("speed: 120\n")
    from tests.conftest import commit

    assert commit(repo, "bigger tiles", "--no-verify").returncode == 0
    refused = run_kgit("-q", "round", "validate")
    assert refused.code == 1 and "acceptance_command" in refused.err, refused
    assert run_kgit("trust", "--yes").code == 0
    assert run_kgit("-q", "round", "validate").code == 0


def test_edit_without_a_terminal_names_the_file_option(campaign: Path) -> None:
    result = run_kgit("manifest", "edit")
    assert result.code == 2 and "kgit manifest edit -m FILE" in result.err


def test_campaign_delete_removes_everything_kgit_keeps(campaign: Path) -> None:
    repo = campaign
    accepted(repo, "bigger tiles", 120)
    rolled_back(repo, "smaller tiles", 90)
    worktrees = repo / ".git" / "kgit" / "worktrees" / "c1"
    (worktrees / "audit").mkdir(parents=True, exist_ok=True)
    git(repo, "worktree", "add", "-q", "--detach", str(worktrees / "reference"), "HEAD")
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/kgit/c1/best"

    asked = run_kgit("campaign", "delete", "c1")  # no terminal, no --yes
    assert asked.code == 2 and "--yes" in asked.err, asked
    assert git(repo, "for-each-ref", "refs/kgit/c1/")

    done = run_kgit("campaign", "delete", "c1", "--yes", "--json")
    assert done.code == 0, done
    data = done.json()
    assert "refs/kgit/c1/campaign" in data["deleted_refs"]  # type: ignore[index]
    assert data["detached_head"] is True  # type: ignore[index]
    for prefix in ("refs/kgit/", "refs/notes/kgit/", "refs/heads/kgit/"):
        assert git(repo, "for-each-ref", prefix) == "", prefix
    assert not worktrees.exists()
    assert str(worktrees) not in git(repo, "worktree", "list")
    assert trusted_value(repo) is None
    assert (repo / "kernel.txt").read_text() == "speed: 120\n"  # the files stay as they were
    assert run_kgit("status").code == 2

    again = run_kgit("init", "c1", "-m", "manifest.yaml")
    assert again.code == 0, again
    missing = run_kgit("campaign", "delete", "nope", "--yes")
    assert missing.code == 2 and "no campaign named 'nope'" in missing.err


def test_a_pull_refuses_a_manifest_that_changes_what_the_baseline_fixed(campaign: Path) -> None:
    from kgit.gitdoor import open_repo
    from tests.engine.remotes import fresh_clone, kgit_in, make_remote

    repo = campaign
    bare = make_remote(repo)
    assert kgit_in(repo, "push").code == 0
    clone = fresh_clone(bare, "clone")
    # A record written outside kgit manifest edit (which refuses this) that drops a shape.
    theirs = open_repo(repo)
    record = theirs.rev_parse("refs/kgit/c1/campaign")
    assert record is not None
    stored = _stored_manifest(repo)
    stored["target_shapes"] = stored["target_shapes"][:-1]
    text = (json.dumps(stored, indent=2) + "\n").encode()
    new = theirs.commit_tree(theirs.tree_with(record, {"manifest.yaml": text}), [record], "x\n")
    theirs.update_ref("refs/kgit/c1/campaign", new, record)
    assert kgit_in(repo, "push").code == 0
    refused = kgit_in(clone, "pull")
    assert refused.code == 1 and "its manifest changes target_shapes" in refused.err, refused

    # A revision kgit manifest edit allows travels.
    theirs.update_ref("refs/kgit/c1/campaign", record, new)
    git(bare, "update-ref", "refs/kgit/c1/campaign", record)
    revised = MANIFEST.format(python=sys.executable) + "max_iterations: 9\n"
    assert kgit_in(repo, "manifest", "edit", "-m", _write(repo, revised)).code == 0
    assert kgit_in(repo, "push").code == 0
    pulled = kgit_in(clone, "pull")
    assert pulled.code == 0, pulled
    assert kgit_in(clone, "status", "--json").json()["max_iterations"] == 9  # type: ignore[index]


def test_a_whole_manifest_without_a_policy_keeps_the_campaigns(campaign: Path) -> None:
    """A file written for a seed campaign names no policy where seed was the default: it must
    not switch the campaign to today's default (refused after the baseline, silent before)."""
    repo = campaign
    text = MANIFEST.format(python=sys.executable).replace(SEED_POLICY, "") + "max_iterations: 9\n"
    revised = run_kgit("manifest", "edit", "-m", _write(repo, text), "--json")
    assert revised.code == 0, revised
    assert list(revised.json()["changed"]) == ["max_iterations"]  # type: ignore[index]
    assert _stored_manifest(repo)["decision_policy"] == "seed"
