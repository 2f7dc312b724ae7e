"""`kgit worker`: one agent's loop over a shared queue of hypotheses, on one device.

Each turn takes the next unclaimed hypothesis (kgit/engine/rounds/hypotheses.py), opens its round on
the worker's own work tree, applies the change the line names, commits it through the gate,
validates it (holding the device's measuring lock only while timing) and accepts it, or rolls it
back with the reason. Several workers share one campaign: round numbers come from the record
under its lock, and accept is a compare-and-swap on the best line. A worker whose accept finds
the best line moved by another worker's accept rebases its round onto the new best line and
validates it again (the rebased tree is gated and measured against the best line as it is), a
few times at most; a rebase that conflicts rolls the round back and says so.

Through a remote (`--remote`), the lines of a hypotheses file are claimed in the campaign
record (kgit/engine/rounds/shared_hypotheses.py), and each step of a round is pulled before and pushed after
(kgit/engine/rounds/shared_round.py, which also says what happens when another clone writes the
worker's own round).
"""

from __future__ import annotations

import fcntl
import os
import shlex
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from kgit.engine.campaign import Campaign
from kgit.engine.measuring.device.devicelock import device_key
from kgit.engine.measuring.harness.passes import HarnessError
from kgit.engine.rounds.accept import accept_round
from kgit.engine.rounds.hypotheses import Hypothesis, Ledger, parse_line, read_queue
from kgit.engine.rounds.parallel import rebase_round
from kgit.engine.rounds.rollback import rollback_round
from kgit.engine.rounds.round import StartFiles, start_round
from kgit.engine.rounds.shared_hypotheses import Claimed, SharedQueue, clone_id, take_back
from kgit.engine.rounds.shared_round import ClosedElsewhere, SharedRound
from kgit.engine.rounds.validate import validate_round
from kgit.engine.sharing.publish import Link
from kgit.engine.user_commands import run_command
from kgit.errors import KgitError, UsageError
from kgit.gitdoor import Repo, open_repo
from kgit.progress import Say, Voice
from kgit.records.notes import ACCEPTING
from kgit.records.results import to_json
from kgit.records.worker_results import WorkerClaims, WorkerRound, WorkerSummary

# How often one round follows the best line after other workers' accepts before it gives up (each
# move is another round accepted, so the campaign progresses; 3 starved a gain with 4 workers).
MAX_REBASES = 10
# How many round numbers a worker gives up to other clones' starts before it stops.
MAX_STARTS = 20
# How often a rollback is done again after another clone wrote the round meanwhile.
MAX_ROLLBACKS = 3


@dataclass(frozen=True)
class WorkerSetup:
    campaign: str
    name: str
    device: str | None  # None: the process's own CUDA/HIP_VISIBLE_DEVICES
    max_rounds: int | None = None
    echo: bool = False
    remote: str | None = None  # the remote other clones' workers share the campaign through
    take_over: str | None = None  # a clone (`host:path`) whose workers' rounds this one rolls back


def pin_device(device: str | None) -> str:
    """Make DEVICE the only one this process and its harnesses see; return the lock's key."""
    if device is not None:
        value = "" if device == "cpu" else device
        os.environ["CUDA_VISIBLE_DEVICES"] = os.environ["HIP_VISIBLE_DEVICES"] = value
    return device_key()


def worker_tree(repo: Repo, campaign: str, name: str) -> Path:
    return repo.kgit_dir() / "workers" / campaign / name


@contextmanager
def worker_slot(repo: Repo, campaign: str, name: str) -> Iterator[Path]:
    """The work tree of worker NAME, held for this process's lifetime: two workers of one name
    would commit over each other's rounds."""
    path = worker_tree(repo, campaign, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f"{name}.lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise KgitError(
                f"worker {name} of campaign {campaign} is already running",
                hint="give each worker its own name: kgit worker --name NAME",
            ) from None
        yield path


# Where a worker's hypotheses come from: a function giving the next (a file's lines through
# this clone's ledger, or stdin), or the lines of a file claimed in the campaign record.
Source = Callable[[], Hypothesis | None] | SharedQueue


def run_worker(
    repo: Repo,
    setup: WorkerSetup,
    take: Source,
    say: Say,
    report: Callable[[WorkerRound], None],
) -> WorkerSummary:
    """Rounds until TAKE has nothing left (or max_rounds); REPORT gets each round's outcome."""
    key = pin_device(setup.device)
    start, outcomes = time.monotonic(), list[WorkerRound]()
    link = Link(repo, setup.campaign, setup.remote)
    claims: WorkerClaims | None = None
    with worker_slot(repo, setup.campaign, setup.name) as tree:
        if isinstance(take, SharedQueue):
            claims = WorkerClaims(clone_id(repo), 0, tuple(_take_back(setup, tree, link, say)))
        while setup.max_rounds is None or len(outcomes) < setup.max_rounds:
            item = _next(repo, setup, take)
            if item is None:
                break
            claim = take.claim(item) if isinstance(take, SharedQueue) else None
            outcome = one_round(repo, setup, tree, item, say, link, claim)
            if outcome is None:  # another worker claimed the line first: the next one
                assert claims is not None
                claims = replace(claims, lost=claims.lost + 1)
                continue
            done = WorkerRound(**outcome, worker=setup.name, device=key)
            report(done)
            outcomes.append(done)
    seconds = time.monotonic() - start
    return WorkerSummary(
        campaign=setup.campaign,
        worker=setup.name,
        device=key,
        worktree=str(worker_tree(repo, setup.campaign, setup.name)),
        rounds=len(outcomes),
        accepted=sum(o.status in ACCEPTING for o in outcomes),
        rolled_back=sum(o.status not in ACCEPTING for o in outcomes),
        seconds=round(seconds, 3),
        rounds_per_hour=round(len(outcomes) / seconds * 3600, 2) if seconds > 0 else None,
        sharing=link.report(),
        claims=claims,
    )


def _next(repo: Repo, setup: WorkerSetup, take: Source) -> Hypothesis | None:
    if not isinstance(take, SharedQueue):
        return take()
    # Lines this clone's workers tried without --remote are not tried again either.
    return take.next(Ledger(repo, setup.campaign).claimed())


def _take_back(setup: WorkerSetup, tree: Path, link: Link, say: Say) -> list[int]:
    """Before its first round, a worker of a shared queue rolls back the rounds its own earlier
    process left in flight (its worker lock proves that process gone), and those of the clone
    --take-over names; their lines go back to the queue."""
    repo, name = link.repo, setup.campaign
    done = take_back(repo, name, tree, link, (clone_id(repo), setup.name), say)
    if setup.take_over is not None:
        done += take_back(repo, name, tree, link, (setup.take_over, None), say)
    return done


def one_round(
    repo: Repo,
    setup: WorkerSetup,
    tree: Path,
    item: Hypothesis,
    say: Say,
    link: Link,
    claim: StartFiles | None = None,
) -> dict[str, Any] | None:
    """ITEM's round from start to close; None when CLAIM found the line claimed first."""
    number = _start(repo, setup, tree, item, say, link, claim)
    if number is None:
        return None
    here = open_repo(tree)
    shared = SharedRound(link, here, setup.campaign, number, setup.name, say)
    base = {"round": number, "hypothesis": item.text, "line": item.line, "rebases": 0}
    try:
        return _run_round(shared, setup, item, base)
    except ClosedElsewhere as closed:
        return {**base, **shared.closed_outcome(closed.kept)}


def _run_round(
    shared: SharedRound, setup: WorkerSetup, item: Hypothesis, base: dict[str, Any]
) -> dict[str, Any]:
    here, say, link = shared.tree, shared.say, shared.link
    voice = Voice(say, echo=setup.echo)
    problem = _apply(here, setup, item) or _commit(here, item, setup.echo)
    shared.published()  # a gate note dropped: the round goes on as the remote has it
    if problem:
        return {**base, **_rollback(shared, problem)}
    for attempt in range(MAX_REBASES + 1):
        base["rebases"] = attempt
        try:
            shared.sync()
            verdict = validate_round(_load(here, setup), voice, full=False)
            if not shared.published():
                continue  # the verdict was dropped: validate the remote's copy of the round
            if verdict.decision not in ACCEPTING:
                reason = "; ".join(verdict.reasons) or str(verdict.decision)
                return {**base, **_rollback(shared, reason), "verdict": to_json(verdict)}
            shared.sync()
            accepted = accept_round(_load(here, setup), voice)
            if link.publish(here):
                return {**base, "status": accepted.status, "commit": accepted.commit}
            # Another clone accepted first: the accept was dropped and the round is open again.
            say(f"{setup.name}: round-{shared.number}: {link.conflict}; rebasing, validating again")
            shared.back_on_round(None)
            if attempt == MAX_REBASES:
                return {**base, **_rollback(shared, f"refused: {link.conflict}")}
        except HarnessError as error:
            return {**base, **_rollback(shared, f"validation ERROR: {error.message}")}
        except KgitError as error:
            if not _best_moved(here, setup) or attempt == MAX_REBASES:
                return {**base, **_rollback(shared, f"refused: {error.message}")}
        conflict = rebase_round(_load(here, setup), say)
        if not shared.published():
            continue  # the rebase was dropped: go on from the remote's copy of the round
        if conflict:
            return {**base, **_rollback(shared, conflict)}
    # Only a write dropped on the last attempt ends the loop here.
    reason = f"refused: another clone wrote round-{shared.number} each time ({link.conflict})"
    return {**base, **_rollback(shared, reason)}


def _start(
    repo: Repo,
    setup: WorkerSetup,
    tree: Path,
    item: Hypothesis,
    say: Say,
    link: Link,
    claim: StartFiles | None,
) -> int | None:
    """Open ITEM's round, recording CLAIM with its start; through a remote, its number (and
    claim) is published before any work: a number another clone took first is given up and the
    next one taken, a line another worker claimed first is left to it (None)."""
    for _ in range(MAX_STARTS):
        link.sync()
        campaign = Campaign.load(repo, setup.campaign)
        try:
            started = start_round(campaign, item.text, worktree=tree, with_files=claim)
        except Claimed as taken:
            say(f"{setup.name}: {taken.message}; taking the next line")
            return None
        number = started.round
        if link.publish(open_repo(tree)):
            say(f"{setup.name}: round-{number} started: {item.text}")
            return number
        say(f"{setup.name}: {link.conflict}: opening the next round instead")
    raise KgitError(
        f"{MAX_STARTS} round numbers in a row were taken by other clones first",
        hint="kgit pull; kgit status (is another clone's worker stuck starting rounds?)",
    )


def _load(tree: Repo, setup: WorkerSetup) -> Campaign:
    return Campaign.load(tree, setup.campaign)


def _best_moved(tree: Repo, setup: WorkerSetup) -> bool:
    """Whether the round's branch no longer builds on the best line's tip (another worker's
    accept moved it): the one refusal a rebase and a new validation answer."""
    campaign = _load(tree, setup)
    head = tree.rev_parse("HEAD")
    return head is not None and not tree.is_ancestor(campaign.best_tip(), head)


def _apply(tree: Repo, setup: WorkerSetup, item: Hypothesis) -> str | None:
    """Make the change ITEM names in TREE; the problem in words when it made none."""
    campaign = _load(tree, setup)
    if item.patch is not None:
        command = f"git apply --whitespace=nowarn {item.patch}"
    else:
        assert item.command is not None
        command = item.command
    # Untethered: the change writes the round's work tree, and a half-applied one is worse
    # than one that finishes alone.
    result = run_command(
        command, tree.root, campaign.manifest.timeout_s, tether=None, echo=setup.echo
    )
    if not result.ok:
        return f"the change did not apply (`{command}` exited {result.returncode}): " + _last(
            result.tail
        )
    tree.stage_all()
    if not tree.dirty_paths():
        return f"the change changed nothing (`{command}`)"
    return None


def _commit(tree: Repo, item: Hypothesis, echo: bool) -> str | None:
    """Commit the staged change through the commit gate; the gate's failure in words."""
    # Untethered: a git commit killed midway leaves the index locked; its hook's tests are
    # tethered by the hook's own kgit.
    message = shlex.quote(item.text)
    result = run_command(f"git commit -q -m {message}", tree.root, 3600, tether=None, echo=echo)
    if result.ok:
        return None
    tree.reset_hard()  # the work tree goes back to the round's parent
    return "gate: the commit was blocked: " + _last(result.tail)


def _rollback(shared: SharedRound, reason: str) -> dict[str, Any]:
    tree = shared.tree
    for _ in range(MAX_ROLLBACKS):
        tree.reset_hard()
        done = rollback_round(Campaign.load(tree, shared.name), reason, shared.say)
        if shared.published():
            return {"status": done.status, "commit": done.commit, "reason": reason}
    raise KgitError(
        f"round-{shared.number}: another clone wrote it each time this worker rolled it back",
        hint=f"kgit pull {shared.link.remote}; kgit status (who else works on round-"
        f"{shared.number}?)",
    )


def _last(tail: str, lines: int = 3) -> str:
    return " | ".join(line.strip() for line in tail.strip().splitlines()[-lines:] if line.strip())


def taker(repo: Repo, setup: WorkerSetup, queue: str, stdin: TextIO) -> Source:
    """Where the worker's hypotheses come from. A FILE is shared: each line goes to one worker
    once, through this clone's ledger, or with --remote through claims in the campaign record
    that every clone of the remote sees. `-` reads stdin a line at a time as an agent writes it
    (this worker's alone: nothing to claim)."""
    if setup.take_over is not None and (setup.remote is None or queue == "-"):
        raise UsageError(
            "--take-over gives back the lines of a hypotheses file shared through a remote",
            hint="kgit worker --remote REMOTE --hypotheses FILE --take-over CLONE",
        )
    if queue == "-":
        counter = iter(range(1, 1 << 62))

        def from_stdin() -> Hypothesis | None:
            for line in stdin:
                item = parse_line(line, next(counter), Path.cwd())
                if item is not None:
                    return item
            return None

        return from_stdin
    items = read_queue(Path(queue))
    if setup.remote is not None:
        return SharedQueue(repo, setup.campaign, items, setup.name)
    ledger = Ledger(repo, setup.campaign)
    return lambda: ledger.claim_next(items, setup.name)
