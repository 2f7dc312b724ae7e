"""The evidence a verdict is computed from, stored in the round note so that a second validation
of the same tree against the same reference adds to the first instead of replacing it (a verdict
cannot be shopped for by validating again), and so that the verdict can be recomputed from it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kgit.records.notes import known_fields

# The mode a validation recorded when both sides were resident harnesses (one process each, timed
# in blocks). The word predates the name: notes and harnesses of protocol 1 say "worker", which
# kgit keeps for the `kgit worker` loop everywhere else.
RESIDENT_MODE = "worker"


@dataclass
class Evidence:
    policy: str  # the decision policy that measured it: a name of kgit/records/policies.py
    mode: str  # RESIDENT_MODE (blocks of a resident harness), "pass" (whole harness passes)
    tree: str  # the candidate's tree: evidence is about these files, not a commit's name
    reference: str  # the commit the candidate was compared with
    labels: list[str]
    # The candidate's plain passes, per-shape values (PASS shapes): the seed's runs; under the
    # interleaved policy the first pass of each validation, comparable with the baseline's.
    runs: list[dict[str, float]] = field(default_factory=list)
    # Interleaved: per pair (a quad of blocks, or an A/B pair of passes), per-shape values of the
    # reference (a) and of the candidate (b).
    pairs: list[dict[str, dict[str, float]]] = field(default_factory=list)
    validations: int = 0
    failed: list[str] = field(default_factory=list)  # shapes that FAILed: the tree stays failing
    seconds: float = 0.0
    block_ms: float | None = None
    # The physical floor's evidence: per shape and rate column (TFLOPS, GB/s, the metric), the
    # highest rate the candidate showed and, for GB/s, the bytes it moved (kgit/judge/floor.py).
    rates: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Evidence | None:
        if not data:
            return None
        return cls(**known_fields(cls, data))

    def pools_with(
        self, policy: str, mode: str | None, tree: str, reference: str, labels: list[str]
    ) -> bool:
        """Whether a new validation's runs belong to this body of evidence."""
        return (
            self.policy == policy
            and (mode is None or self.mode == mode)
            and self.tree == tree
            and self.reference == reference
            and self.labels == labels
        )
