"""The stored result of a gate audit (`kgit gate audit`, and at `kgit baseline`): which mutants
of the kernel the correctness gate caught and which survived.

The latest audit lives in the campaign state (`state.json` of refs/kgit/<campaign>/campaign, key
`gate_audit`); earlier ones stay in that ref's history (`git log -p refs/kgit/NAME/campaign`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kgit.errors import KgitError

# 3: "below tolerance" is EQUIVALENT, `below_tolerance` counts are `equivalent`; `drawn` and
# `coverage`. Version 2 reads with those renamed and the new fields empty (`from_dict`).
# 2: each mutant's kernel function and reach, UNREACHED and BELOW_TOLERANCE, the per-kernel
# figures (`functions`), the launches (`reach`) and the audit's mode. A version-1 audit reads
# with those empty (`from_dict`).
AUDIT_VERSION = 3

# A mutant's outcome. A mutant that hangs the gate until its timeout counts as caught: a hang
# fails a gate. One whose rebuild fails never reached the gate and counts for neither side.
CAUGHT, TIMED_OUT, SURVIVED, NOT_BUILT = "caught", "timed out", "survived", "not built"
# A mutant in a kernel that neither the gate nor the target shapes launch: not run, since it
# would pass any gate and says nothing about this one.
UNREACHED = "unreached"
# A mutant the gate passed whose results the harness's own reference check also passes on every
# target shape, within tolerance (`+ eps` -> `- eps`, a boundary between two paths that no
# shape sits on): equivalent on these shapes, not a hole in the gate.
EQUIVALENT = "equivalent on the target shapes"
_OLD_EQUIVALENT = "below tolerance"  # its name up to version 2
UNREACHED_WORDS = "unreached by the gate and by the target shapes"


@dataclass
class MutantResult:
    where: str  # path:line
    kind: str  # kgit/judge/mutants.py KINDS
    mutation: str  # `before` -> `after`
    outcome: str
    seconds: float
    caught_by: str | None = None  # the first failing test the gate named, when it names one
    function: str | None = None  # the kernel function it lies in, when known
    reach: str | None = None  # kgit/judge/reach.py TIERS: who runs that function
    note: str | None = None  # why it was judged without a gate run, or what else checked it


@dataclass
class KernelFigures:
    """One kernel function's share of the audit: the gate's strength there, as counts."""

    path: str
    function: str
    line: int
    shapes: bool | None  # the target shapes launch it (None: not known)
    gate: bool | None  # the gate launches it
    sites: int = 0
    tried: int = 0  # judged: caught + survived + equivalent
    caught: int = 0
    survived: int = 0
    unreached: int = 0
    equivalent: int = 0


@dataclass
class GateAudit:
    campaign: str
    commit: str  # the best line's commit whose kernel_source was mutated
    at: str
    trigger: str  # "baseline" or "kgit gate audit"
    command: str  # the gate: the manifest's test_command
    schema_version: int = AUDIT_VERSION
    sites: int = 0  # mutation sites found in kernel_source; `mutants` is a deterministic draw
    mutants: list[MutantResult] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "path: why it was not mutated"
    # Files the gate passed with, though replaced by one that cannot load or build: the gate
    # does not load them from the audited tree (an installed copy?), so it checks none of them.
    unexercised: list[str] = field(default_factory=list)
    tail_warning: str | None = None  # kgit/judge/tails.py
    control_s: float | None = None  # the gate on the unmutated kernel
    timeout_s: float | None = None  # allowed per mutant
    seconds: float = 0.0
    error: str | None = None  # why the audit could not judge any mutant
    # "full" (kgit gate audit: every drawn mutant) or "quick" (the baseline's: at most two gate
    # runs of time, the first survivor of each kernel ends that kernel's mutants)
    mode: str = "full"
    budget_s: float | None = None  # the quick audit's wall-time allowance
    not_run: int = 0  # drawn mutants left unjudged (the budget ran out, or a survivor came first)
    drawn: int = 0  # the mutants drawn: those in `mutants` and the `not_run`
    # What the judged mutants covered (kgit/judge/audit_coverage.py): {of, lines, lines_of,
    # kinds, kinds_of}; empty before version 3.
    coverage: dict[str, Any] = field(default_factory=dict)
    functions: list[KernelFigures] = field(default_factory=list)
    reach: list[str] = field(default_factory=list)  # what the shapes and the gate run, in words

    @property
    def tried(self) -> int:
        return sum(m.outcome not in (NOT_BUILT, UNREACHED) for m in self.mutants)

    @property
    def unreached(self) -> list[MutantResult]:
        return [m for m in self.mutants if m.outcome == UNREACHED]

    @property
    def equivalent(self) -> list[MutantResult]:
        return [m for m in self.mutants if m.outcome == EQUIVALENT]

    @property
    def caught(self) -> int:
        return sum(m.outcome in (CAUGHT, TIMED_OUT) for m in self.mutants)

    @property
    def timed_out(self) -> int:
        return sum(m.outcome == TIMED_OUT for m in self.mutants)

    @property
    def survivors(self) -> list[MutantResult]:
        return [m for m in self.mutants if m.outcome == SURVIVED]

    @property
    def weak(self) -> bool:
        """The gate let something through: a mutant survived or a file is never loaded."""
        return bool(self.survivors or self.unexercised)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> dict[str, Any]:
        """The counts and the survivors, for status, the report and --json."""
        return {
            "commit": self.commit,
            "at": self.at,
            "trigger": self.trigger,
            "tried": self.tried,
            "caught": self.caught,
            "timed_out": self.timed_out,
            "survived": len(self.survivors),
            "survivors": [f"{m.where} {m.kind} {m.mutation}" for m in self.survivors],
            "unreached": len(self.unreached),
            "equivalent": len(self.equivalent),
            "drawn": self.drawn,
            "not_run": self.not_run,
            "coverage": self.coverage,
            "functions": [asdict(f) for f in self.functions],
            "reach": self.reach,
            "unexercised": self.unexercised,
            "skipped": self.skipped,
            "tail_warning": self.tail_warning,
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GateAudit:
        version = data.get("schema_version")
        if not isinstance(version, int) or version > AUDIT_VERSION:
            raise KgitError(
                f"the stored gate audit has schema_version {version!r}; this kgit reads up to "
                f"{AUDIT_VERSION}",
                hint="upgrade kgit (pip install -U kgit), or run kgit gate audit again",
            )
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["mutants"] = [_known(MutantResult, _renamed(m)) for m in data.get("mutants") or []]
        known["functions"] = [
            _known(KernelFigures, _renamed(f)) for f in data.get("functions") or []
        ]
        known["schema_version"] = AUDIT_VERSION  # version 1 lacks only what defaults fill in
        return cls(**known)


def _renamed(data: dict[str, Any]) -> dict[str, Any]:
    """A version-2 mutant or kernel's figures with "below tolerance" read as EQUIVALENT."""
    data = dict(data)
    if data.get("outcome") == _OLD_EQUIVALENT:
        data["outcome"] = EQUIVALENT
    if "below_tolerance" in data:
        data.setdefault("equivalent", data.pop("below_tolerance"))
    return data


def _known(cls: Any, data: dict[str, Any]) -> Any:
    return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})
