"""A round's judgement, in one pure function: the change's facts, the evidence measured of it and
the standard it is held to, in, the verdict with its reasons, out.

`kgit round validate` records the judgement, `kgit round accept` replays it from the recorded
facts and evidence and requires that it accepts, and `kgit finish` reports it for the best line
against the baseline. The order of the checks lives here alone, most serious first: a link out of
the repository, a protected path changed, a file outside kernel_source, a rule-11 shortcut, then
the measurements under the policy's rule (kgit/judge/decision.py: `decide`, called once per
judgement), overridden by a rate past the device's peak; the device's reasons come last, and
never change the decision.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kgit.judge.decision import Rule, Standard, decide
from kgit.judge.stats import ABJudgement
from kgit.judge.verdict import (
    NOT_MEASURED,
    Verdict,
    link_verdict,
    protected_verdict,
    rule11_verdict,
    scope_verdict,
)
from kgit.records.evidence import Evidence
from kgit.records.notes import ROLLED_BACK


@dataclass(frozen=True)
class Facts:
    """What the change's files say before anything is measured: links out of the repository,
    protected paths changed, files outside kernel_source (SOURCES), rule-11 shortcuts found."""

    linked: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()
    outside: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    shortcuts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Measured:
    """The evidence and the standard it is held to: what was measured, the policy's STANDARD and
    RULE, the physical floor's findings (OVER: rates past the device's peak), the device's
    reasons (DEVICES), and where a FAIL of the evidence was seen (FAILED_WHERE)."""

    evidence: Evidence
    standard: Standard
    rule: Rule
    over: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    failed_where: str = ""


@dataclass(frozen=True)
class Judgement:
    """A verdict and its reasons. SETTLED: whether more measurement could change it; ESTIMATES:
    the pairs' estimates it rests on (None under a rule without pairs); RULED: the policy rule's
    verdict beneath the facts and the floor (None when nothing was measured); MEASURED: whether
    evidence was weighed; OBJECTIONS: every reason the facts give, not only the most serious
    one's; OVER: the physical floor's findings, whatever decided (finish lists them all)."""

    verdict: Verdict
    settled: bool = True
    estimates: ABJudgement | None = None
    ruled: Verdict | None = None
    measured: bool = False
    objections: tuple[str, ...] = ()
    over: tuple[str, ...] = ()

    @property
    def accepts(self) -> bool:
        return self.verdict.accepts

    @property
    def needs_measuring(self) -> bool:
        """The facts decide nothing, and nothing was measured yet."""
        return not self.measured and self.verdict.cause == NOT_MEASURED and not self.settled


def _facts_verdict(facts: Facts) -> Verdict | None:
    """What the change's files alone decide, most serious first; None when they decide nothing."""
    if facts.linked:
        return link_verdict(list(facts.linked))
    if facts.protected:
        return protected_verdict(list(facts.protected))
    if facts.outside:
        return scope_verdict(list(facts.outside), list(facts.sources))
    if facts.shortcuts:  # no number makes such a gain real
        return rule11_verdict(list(facts.shortcuts))
    return None


def objections(facts: Facts) -> tuple[str, ...]:
    """Every reason the change's files give against it, in the judgement's order."""
    verdicts = [
        _facts_verdict(Facts(linked=facts.linked)),
        _facts_verdict(Facts(protected=facts.protected)),
        _facts_verdict(Facts(outside=facts.outside, sources=facts.sources)),
        _facts_verdict(Facts(shortcuts=facts.shortcuts)),
    ]
    return tuple(reason for v in verdicts if v is not None for reason in v.reasons)


def judge(facts: Facts, measured: Measured | None = None) -> Judgement:
    """The judgement of a change with FACTS on the evidence MEASURED. Without evidence only the
    facts can decide (the judgement `needs_measuring` unless they do); with it, the policy's
    rule weighs it even where the facts decide (RULED, for a report of every reason)."""
    said = objections(facts)
    by_facts = _facts_verdict(facts)
    if measured is None:
        if by_facts is not None:
            return Judgement(by_facts, objections=said)
        waiting = Verdict(ROLLED_BACK, NOT_MEASURED, ["nothing measured yet"])
        return Judgement(waiting, settled=False, objections=said)
    judged = decide(
        measured.evidence,
        measured.standard,
        measured.rule,
        over=measured.over,
        failed_where=measured.failed_where,
    )
    verdict = by_facts or replace(
        judged.verdict, reasons=[*judged.verdict.reasons, *measured.devices]
    )
    ruled = judged.ruled or judged.verdict
    return Judgement(verdict, judged.settled, judged.judgement, ruled, True, said, measured.over)
