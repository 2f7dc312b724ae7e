"""The stored result of a gate audit (`kgit gate audit`, and at `kgit baseline`): which mutants
of the kernel the correctness gate caught and which survived.

The latest audit lives in the campaign state (`state.json` of refs/kgit/<campaign>/campaign, key
`gate_audit`); earlier ones stay in that ref's history (`git log -p refs/kgit/NAME/campaign`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kgit.errors import KgitError

AUDIT_VERSION = 1

# A mutant's outcome. A mutant that hangs the gate until its timeout counts as caught: a hang
# fails a gate. One whose rebuild fails never reached the gate and counts for neither side.
CAUGHT, TIMED_OUT, SURVIVED, NOT_BUILT = "caught", "timed out", "survived", "not built"


@dataclass
class MutantResult:
    where: str  # path:line
    kind: str  # kgit/judge/mutants.py KINDS
    mutation: str  # `before` -> `after`
    outcome: str
    seconds: float
    caught_by: str | None = None  # the first failing test the gate named, when it names one


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

    @property
    def tried(self) -> int:
        return sum(m.outcome != NOT_BUILT for m in self.mutants)

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
        known["mutants"] = [MutantResult(**m) for m in data.get("mutants") or []]
        return cls(**known)
