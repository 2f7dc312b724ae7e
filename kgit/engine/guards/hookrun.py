"""What the installed hook shims hand over to: `kgit hook pre-commit` and
`kgit hook prepare-commit-msg`. The shim already returned for anything but a round branch."""

from __future__ import annotations

import os
from pathlib import Path

from kgit.engine.campaign import Campaign, list_campaigns
from kgit.engine.guards.gate import gate_commit_in_progress, say_stderr
from kgit.engine.guards.trust import trust_of, untrusted_error
from kgit.engine.recovery import closed_round_checked_out
from kgit.gitdoor import Repo, open_repo
from kgit.records.names import parse_round_branch


def _round_campaign(repo: Repo) -> tuple[Campaign, int] | None:
    parsed = parse_round_branch(repo.current_branch())
    if parsed is None or parsed[0] not in list_campaigns(repo):
        return None
    return Campaign.load(repo, parsed[0]), parsed[1]


def pre_commit() -> int:
    # Keep the index git gave the hook: with `git commit -a` or `git commit PATH` it is a
    # temporary index, and that snapshot is what must be gated.
    repo = open_repo(index_file=os.environ.get("GIT_INDEX_FILE"))
    found = _round_campaign(repo)
    if found is None:
        return _off_round(repo)
    campaign, number = found
    trust = trust_of(campaign)
    if not trust.trusted:  # a fetched campaign's test command never runs by surprise
        error = untrusted_error(campaign, trust, "gate this commit")
        say_stderr(f"{error.message}\nhint: {error.hint} (the commit was blocked)")
        return 1
    if closed_round_checked_out(campaign, repo.current_branch()) is not None:
        say_stderr(
            f"round-{number} of campaign {campaign.name} is not in progress: this branch was "
            "left behind (a kgit command was killed before it switched away)\n"
            f"hint: git checkout kgit/{campaign.name}/best, then kgit round start "
            '"HYPOTHESIS" (the commit was blocked)'
        )
        return 1
    return gate_commit_in_progress(repo, campaign, say_stderr)


def _off_round(repo: Repo) -> int:
    """Off a round branch: a commit passes, but on a best line or another kgit branch (the
    pre-commit framework's hook comes here; kgit's own shim refuses before Python starts)."""
    branch = repo.current_branch() or ""
    parts = branch.removeprefix("refs/heads/").split("/")
    if len(parts) != 3 or parts[0] != "kgit" or parts[1] not in list_campaigns(repo):
        return 0
    say_stderr(
        f"{'/'.join(parts)} moves only through kgit: a commit here would put an ungated change "
        f"on it (the commit was blocked)\nhint: git stash; kgit -c {parts[1]} round start "
        '"HYPOTHESIS"; git stash pop; then commit on the round\'s branch'
    )
    return 1


def prepare_commit_msg(message_file: str, source: str | None = None) -> int:
    """Give round commits the seed's subject and kgit's trailers (they survive rebases)."""
    if source in ("merge", "squash"):
        return 0
    repo = open_repo()
    found = _round_campaign(repo)
    if found is None:
        return 0
    campaign, number = found
    open_round = campaign.state.open_numbered(number)
    hypothesis = open_round.hypothesis if open_round else ""
    path = Path(message_file)
    text = path.read_text()
    manifest = campaign.manifest
    prefix = f"[optimize] {manifest.target_op} {manifest.target_backend} round-{number}: "
    if text.strip() and not text.lstrip().startswith(("[optimize]", "#")):
        text = prefix + text.lstrip()
        if hypothesis and "Hypothesis:" not in text:
            subject, _, rest = text.partition("\n")
            text = f"{subject}\n\nHypothesis: {hypothesis}\n{rest}"
        path.write_text(text)
    trailers = [f"Kgit-Campaign: {campaign.name}", f"Kgit-Round: {number}"]
    if hypothesis and "Hypothesis:" not in path.read_text():  # never said twice
        trailers.append(f"Kgit-Hypothesis: {hypothesis}")
    repo.add_trailers(message_file, trailers)
    return 0
