"""Campaigns between clones: push and pull."""

from __future__ import annotations

import click

from kgit.cli.app import Ctx, cli, emit, json_option


@cli.command()
@click.argument("remote", required=False)
@json_option
@click.pass_obj
def push(obj: Ctx, remote: str | None, as_json: bool) -> None:
    """Publish the campaign(s) to REMOTE, as compare-and-swap on every ref.

    \b
    The campaign's branches (best, round-N, final), its record and kept rounds
    (refs/kgit/NAME/), its notes (refs/notes/kgit/NAME/) and the tips chains, in one
    atomic push where each ref moves only if the remote still holds what kgit just
    fetched. Refused when the remote moved (another clone accepted or pushed): kgit
    pull first. Push right after kgit round start to reserve the round's number.
    REMOTE defaults to the branch's upstream remote, else origin; -c NAME pushes one
    campaign (default: all of this clone's).
    """
    from kgit.engine.remote import default_remote
    from kgit.engine.sharing.push import push as run_push
    from kgit.views.sync import render_push

    repo = obj.repo()
    emit(run_push(repo, remote or default_remote(repo), obj.campaign_name), as_json, render_push)


@cli.command()
@click.argument("remote", required=False)
@click.option(
    "--take-remote",
    is_flag=True,
    help="When this clone's record and the remote's diverged (colliding rounds), keep this "
    "clone's refs under refs/kgit-salvage/ and take the remote's.",
)
@json_option
@click.pass_obj
def pull(obj: Ctx, remote: str | None, take_remote: bool, as_json: bool) -> None:
    """Take the campaign(s) of REMOTE into this clone, losing no record.

    \b
    Fetches kgit's refs into refs/kgit-remotes/REMOTE/, then takes a campaign whose
    record is a fast-forward of this clone's (or new here), merges notes and tips,
    and refuses a record that diverged (the rounds that collide are named), was
    rewritten, or whose best line no round accepted. Runs nothing and installs
    nothing: a campaign that arrives is not trusted here until kgit trust, and the
    commit gate waits for kgit hooks install. REMOTE defaults to the branch's
    upstream remote, else origin; -c NAME pulls one campaign (default: all of the
    remote's).
    """
    from kgit.engine.remote import default_remote
    from kgit.engine.sharing.pull import pull as run_pull
    from kgit.views.sync import render_pull

    repo = obj.repo()
    name, where = obj.campaign_name, remote or default_remote(repo)
    emit(run_pull(repo, where, name, take_remote), as_json, render_pull)
