"""Rounds: start, validate, accept, rollback, and the worker that runs them from a queue."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from kgit import progress
from kgit.cli.app import CONTEXT, Ctx, cli, emit, emit_line, json_option
from kgit.views.commands import (
    render_accepted,
    render_rolled_back,
    render_verdict,
    render_worker_round,
    render_worker_summary,
)


@cli.group(context_settings=CONTEXT)
def round() -> None:
    """One hypothesis, one change: start, validate, accept or rollback.

    \b
      kgit round start "bigger BLOCK_K halves the K loop"
      git commit -am "BLOCK_K 64"     after the edit: the hook runs the gate
      kgit round validate             the verdict, recorded in a note
      kgit round accept               if it says ACCEPTED (else kgit round rollback)
    """


@round.command("start", short_help="Open the next round on its own branch, for one hypothesis.")
@click.argument("hypothesis")
@click.option("--reopen", is_flag=True, help="Go on with a finished campaign (kgit finish again).")
@click.option(
    "--worktree",
    type=click.Path(file_okay=False, path_type=Path),
    help="Open the round in this work tree (added if missing), beside rounds already in flight.",
)
@json_option
@click.pass_obj
def round_start(
    obj: Ctx, hypothesis: str, reopen: bool, worktree: Path | None, as_json: bool
) -> None:
    """Begin the next round with its HYPOTHESIS, on a new branch from the best line."""
    from kgit.engine.rounds.round import start_round

    where = worktree.resolve() if worktree else None
    result = start_round(obj.campaign(), hypothesis, reopen=reopen, worktree=where)
    emit(
        result,
        as_json,
        lambda r: (
            f"round-{r.round} started on {r.branch.removeprefix('refs/heads/')}\n"
            f"next: change the kernel, {r.commit}, kgit round validate"
        ),
    )


@round.command("validate", short_help="Gate, measure and judge the round's commit.")
@click.option(
    "--full", is_flag=True, help="Measure every target shape, not only the representative ones."
)
@json_option
@click.pass_obj
def round_validate(obj: Ctx, full: bool, as_json: bool) -> None:
    """Gate, measure and judge the round's last commit; store the verdict in its notes."""
    from kgit.engine.rounds.validate import validate_round

    obj.long_step()
    with progress.collecting() as phases:
        result = validate_round(obj.campaign(), obj.voice, full=full)
    obj.say(phases.line())
    emit(replace(result, phases=phases.to_dict()), as_json, render_verdict)


@round.command("accept", short_help="Fast-forward the best line to an accepted round.")
@click.option(
    "--attribution", help="What the gain comes from; kept in the round's note, shown in the report."
)
@click.option("--lesson", help="What the round taught; kept in its note, shown in the report.")
@json_option
@click.pass_obj
def round_accept(obj: Ctx, attribution: str | None, lesson: str | None, as_json: bool) -> None:
    """Fast-forward the best line to the round's commit (only on an accepting verdict)."""
    from kgit.engine.rounds.accept import accept_round

    obj.long_step()
    words = {"attribution": attribution or "", "lesson": lesson or ""}
    result = accept_round(obj.campaign(), obj.voice, words=words)
    emit(
        result,
        as_json,
        render_accepted,
    )


@round.command("rollback", short_help="Go back to the best line (the round stays recorded).")
@click.option(
    "--reason",
    help="Why it failed (the root cause): required, as the campaign method asks; kept in the round's "
    "note and the report. Completing an interrupted rollback keeps the reason it had.",
)
@click.option("--lesson", help="What the round taught; kept in its note, shown in the report.")
@json_option
@click.pass_obj
def round_rollback(obj: Ctx, reason: str | None, lesson: str | None, as_json: bool) -> None:
    """Return to the best line; the round's commit and notes stay reachable."""
    from kgit.engine.rounds.rollback import rollback_round

    result = rollback_round(obj.campaign(), reason, obj.say, lesson)
    emit(
        result,
        as_json,
        render_rolled_back,
    )


@cli.command()
@click.option(
    "--hypotheses",
    "queue",
    required=True,
    metavar="FILE",
    help="The queue: `HYPOTHESIS :: COMMAND` or JSON lines; `-` reads them from stdin as they "
    "come. Workers given one FILE share it, each line tried once (with --remote, workers of "
    "every clone of REMOTE).",
)
@click.option(
    "--device",
    metavar="N",
    help="Pin the worker to GPU N (sets CUDA_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES; `cpu` "
    "for none) [default: the devices this shell sees].",
)
@click.option(
    "--name", metavar="NAME", help="The worker's name and work tree [default: device-<N>]."
)
@click.option("--max-rounds", type=click.IntRange(min=1), help="Stop after this many rounds.")
@click.option(
    "--remote",
    metavar="REMOTE",
    help="Share the campaign with workers in other clones of REMOTE: pull before each step, "
    "push after each write (a push another clone beat is replayed on its record); the lines of "
    "FILE are claimed in the campaign record, which every clone sees.",
)
@click.option(
    "--take-over",
    metavar="CLONE",
    help="First roll back the rounds in flight of the workers of CLONE (`host:path`, as their "
    "claims name it), a clone that will not come back; their lines go back to the queue.",
)
@json_option
@click.pass_obj
def worker(
    obj: Ctx,
    queue: str,
    device: str | None,
    name: str | None,
    max_rounds: int | None,
    remote: str | None,
    take_over: str | None,
    as_json: bool,
) -> None:
    """Run rounds from a queue of hypotheses, one at a time, on one device.

    \b
    Each round: take the next hypothesis, open its round in the worker's own work tree
    (.git/kgit/workers/<campaign>/<name>), apply its change, commit through the gate, validate
    (the device's measuring lock is held only while timing), then accept, or roll back with the
    reason. N workers share a campaign: one per GPU, e.g.
      kgit worker --device 0 --hypotheses ideas.txt &
      kgit worker --device 1 --hypotheses ideas.txt &
    Workers in other clones (other hosts) share it through a remote, one FILE for all:
      kgit worker --remote origin --device 0 --hypotheses ideas.txt
    A worker restarted under its name takes back the round its dead process left; --take-over
    does so for a clone that is gone. With --json, one JSON line per round as it ends, then
    the summary.
    """
    from kgit.engine.rounds.worker import WorkerSetup, run_worker, taker
    from kgit.records.worker_results import WorkerRound

    campaign = obj.campaign()
    default = f"device-{device}" if device is not None else "worker"
    if remote is not None:
        from kgit.engine.remote import check_remote

        check_remote(obj.repo(), remote)
    setup = WorkerSetup(
        campaign.name,
        name or default,
        device,
        max_rounds,
        obj.voice.echo,
        remote=remote,
        take_over=take_over,
    )
    take = taker(obj.repo(), setup, queue, sys.stdin)
    obj.long_step()

    def report(outcome: WorkerRound) -> None:
        emit_line(outcome, as_json, render_worker_round)

    summary = run_worker(obj.repo(), setup, take, obj.say, report)
    emit_line(summary, as_json, render_worker_summary)
