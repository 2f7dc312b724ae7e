"""What guards a campaign: trust, the commit hook's install, the gate audit."""

from __future__ import annotations

import sys
from dataclasses import replace

import click

from kgit.cli.app import CONTEXT, Ctx, cli, emit, json_option
from kgit.errors import KgitError, UsageError


@cli.group(context_settings=CONTEXT)
def hooks() -> None:
    """The commit gate's hooks."""


@hooks.command("install")
@click.pass_obj
def hooks_install(obj: Ctx) -> None:
    """(Re)install kgit's pre-commit and prepare-commit-msg hooks, chaining existing ones.

    Refused while a campaign of the repository is not trusted here (kgit trust)."""
    from kgit.engine.guards.hooks import configure_git, install_hooks
    from kgit.engine.guards.trust import untrusted_campaigns

    untrusted = untrusted_campaigns(obj.repo())
    if untrusted:
        raise KgitError(
            "cannot install the hooks: the commands of campaign(s) "
            f"{', '.join(untrusted)} are not trusted in this repository (the hook would run them)",
            hint=" && ".join(f"kgit trust --campaign {name}" for name in untrusted)
            + " (each shows the commands and asks), then kgit hooks install",
        )
    click.echo("installed: " + ", ".join(install_hooks(obj.repo())))
    # A clone that pulled its campaigns has none of kgit init's git settings either.
    configure_git(obj.repo())
    click.echo("git config: git log shows each round's summary note")


@cli.command()
@click.option(
    "-c", "--campaign", "name", metavar="NAME", help="The campaign to trust [default: as kgit -c]."
)
@click.option("--yes", is_flag=True, help="Approve without asking (for scripts).")
@json_option
@click.pass_obj
def trust(obj: Ctx, name: str | None, yes: bool, as_json: bool) -> None:
    """Approve the commands of a campaign that came from elsewhere (a fetch, another clone).

    \b
    kgit runs a manifest's commands (the gate's test_command, the harness, the rebuild
    and acceptance commands) only when this repository approves that exact manifest:
    its SHA-256 in the repository's own config (kgit.NAME.trust), which git never
    transfers. kgit init and kgit import approve what you define; a campaign fetched
    from another clone, or whose manifest changed there, waits for this command. It
    shows the commands and asks; --yes approves without asking.
    """
    from kgit.engine.guards.trust import record_trust, render_trust, trust_data

    obj.campaign_name = name or obj.campaign_name
    campaign = obj.campaign()
    data = trust_data(campaign)
    if not as_json:
        click.echo(render_trust(data))
    if not data.trusted:
        if not yes and not sys.stdin.isatty():
            raise UsageError(
                f"kgit trust asks before it approves campaign {campaign.name}'s commands, and "
                "there is no terminal to ask on",
                hint=f"read the commands above, then kgit trust --campaign {campaign.name} --yes",
            )
        if not yes and not click.confirm("run these commands in this repository?", err=True):
            raise KgitError("not trusted: nothing changed", hint="kgit status")
        record_trust(campaign)  # the manifest shown above, not one fetched meanwhile
    emit(
        replace(data, trusted=True, was_trusted=data.trusted),
        as_json,
        lambda r: (
            f"{'already trusted' if r.was_trusted else 'trusted'}: campaign "
            f"{r.campaign} ({r.config_key} = {r.manifest_sha256[:16]}...)"
        ),
    )


# --- the gate audit ---


@cli.group(context_settings=CONTEXT)
def gate() -> None:
    """The correctness gate (the manifest's test_command, run by the commit hook)."""


@gate.command("audit")
@click.option(
    "--max",
    "count",
    # 200: with the operand kinds a two-kernel file has some 50 sites; every one of them may be
    # asked for, each a gate run at most.
    type=click.IntRange(1, 200),
    metavar="N",
    help="Mutants to run the gate on [default: the manifest's gate_audit_mutants, or 6 when "
    "that is 0].",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=1),
    metavar="S",
    help="Seconds one mutant's gate may run before it counts as a hang (caught) [default: 3x "
    "the unmutated gate's time + 10 s, at least 30 s, at most timeout_s].",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 1 when a mutant survives or the gate never loads a kernel file (for agents "
    "and CI); without it the audit warns and exits 0.",
)
@json_option
@click.pass_obj
def gate_audit(
    obj: Ctx, count: int | None, timeout_s: float | None, strict: bool, as_json: bool
) -> None:
    """Check that the gate catches small bugs planted in the kernel (a mutation check).

    \b
    A gate that does not exercise the kernel passes anything: tests that check only
    shapes and dtypes, or compare the kernel with itself, or use power-of-two shapes only.
    kgit copies the best line's commit into its own work tree (.git/kgit/worktrees/
    NAME/audit; your work tree is never touched) and runs the gate there:
      1. on the unmutated kernel: it must pass (its time sets each mutant's timeout);
      2. with each kernel_source file made unloadable: a gate that still passes never
         loads that file (it may import an installed copy);
      3. on N mutants, one at a time: a reduction divided by the padded block width
         (N -> BLOCK_N), masked-off lanes reading another value (other=0.0 -> 1.0), a
         load or store without its mask, a bound off by one (< -> <=), an arithmetic
         operator swapped, an integer off by one.
    Mutants come from the Triton kernels the target shapes launch first, then those only
    the gate launches (both recorded in these runs); one of a kernel neither launches is
    reported "unreached by the gate and by the target shapes" and not run.
    A mutant the gate fails on is caught (a hang counts as caught); one it passes has
    SURVIVED: a bug the gate cannot see, unless the harness's reference check passes it
    on every target shape too ("equivalent on the target shapes"). Python/Triton files are mutated through their
    syntax tree, C/C++/CUDA/HIP files by tokens (with rebuild_command, a mutant that does
    not build is set aside, not counted). The same source always gives the same mutants.
    Also warns when no target shape has a tail (every M, N, K a multiple of the
    BLOCK_*/TILE_* constant that tiles it; sizes chosen at run time are not seen). The audit is stored in the campaign record (kgit status,
    kgit report, with per-kernel figures); kgit baseline runs a quick one with the
    manifest's gate_audit_mutants (0: off): at most two gate runs of wall time.
    """
    from kgit.engine.guards.audit import run_audit
    from kgit.records.results import to_json
    from kgit.views.audit_text import audit_shown, render_audit

    campaign = obj.campaign()
    wanted = count or campaign.manifest.gate_audit_mutants or 6
    audit = run_audit(
        campaign,
        obj.voice.unechoed(),
        count=wanted,
        trigger="kgit gate audit",
        timeout_s=timeout_s,
    )
    emit(audit_shown(audit), as_json, lambda shown: render_audit(to_json(shown)))
    if strict and audit.weak:
        sys.exit(1)  # the gate let a wrong kernel through: a refusal, facts already printed
