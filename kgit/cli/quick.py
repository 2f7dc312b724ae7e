"""`kgit status` and `kgit log` without click: the commands a user and an agent run most, read
from a plain command line by a small parser, so that they load neither click (~15 ms) nor the
other commands' modules. Whatever this parser does not read as plainly as click would (help,
--version, `--`, an unknown or combined option, a value that looks like an option) goes to click
(kgit/cli/app.py), which reads the same command line the same way (tests/test_quick.py holds
both to it) and owns the help.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from kgit.cli.context import Ctx
from kgit.cli.output import emit

# The group's options (kgit/cli/app.py's `cli`) and each light command's flags, as click
# declares them.
_QUIET = ("-q", "--quiet")
_COMPLETION = "_KGIT_COMPLETE"  # click's shell completion, by the program's name
_CAMPAIGN = ("-c", "--campaign")
_FLAGS = {
    "status": {"--all": "all_campaigns", "--json": "as_json"},
    "log": {"--json": "as_json", "-v": "verbose", "--verbose": "verbose"},
}


def quick_command(args: Sequence[str]) -> Callable[[], None] | None:
    """The light command ARGS name, ready to run, or None when click should read ARGS."""
    if _COMPLETION in os.environ:  # a shell asking click to complete a word
        return None
    campaign, quiet, rest = None, False, list(args)
    while rest and rest[0] not in _FLAGS:
        option = rest.pop(0)
        name, eq, value = option.partition("=")
        if option in _QUIET:
            quiet = True
        elif option in _CAMPAIGN and rest and _plain(rest[0]):
            campaign = rest.pop(0)
        elif name == "--campaign" and eq and _plain(value):
            campaign = value
        else:
            return None
    if not rest:
        return None
    command, flags = rest[0], _FLAGS[rest[0]]
    if any(flag not in flags for flag in rest[1:]):
        return None
    chosen = {key: False for key in flags.values()} | {flags[flag]: True for flag in rest[1:]}
    # click's `envvar`: the variable stands in for an option not given, and an empty one is none
    obj = Ctx(campaign or os.environ.get("KGIT_CAMPAIGN") or None, quiet)
    run = status if command == "status" else log
    return lambda: run(obj, **chosen)


def _plain(value: str) -> bool:
    """A campaign name click would take as this parser does (not empty, not option-like)."""
    return bool(value) and not value.startswith("-")


def status(obj: Ctx, all_campaigns: bool, as_json: bool) -> None:
    """Where the campaign stands and what to do next."""
    from kgit.engine.campaign import list_campaigns
    from kgit.engine.status import status_data
    from kgit.records.status_results import CampaignNames
    from kgit.views.status_log import render_status

    repo = obj.repo()
    if all_campaigns:
        names = CampaignNames(tuple(list_campaigns(repo)))
        emit(names, as_json, lambda n: "\n".join(n.names) or "no campaign")
        return
    branch = repo.branch_at_open()
    data = status_data(obj.campaign(branch=branch), branch)
    emit(data, as_json, render_status)


def log(obj: Ctx, as_json: bool, verbose: bool) -> None:
    """The whole lineage, rolled-back rounds included."""
    from kgit.engine.lineage import lineage
    from kgit.engine.read_only import CampaignReader
    from kgit.records.lineage_results import Lineage
    from kgit.views.status_log import quick_is_subset, render_log

    campaign = obj.campaign()
    subset = quick_is_subset(CampaignReader(campaign))
    emit(
        Lineage(tuple(lineage(campaign))),
        as_json,
        lambda rows: render_log(rows, quick_is_subset=subset, whole=verbose),
    )
