"""A campaign's decision policy: the `Policy` protocol each policy's module follows, and the
lookup of a policy in the table of kgit/records/policies.py.

A policy is a module (`policy_seed.py`, `policy_interleaved.py`) whose functions and constants
are the protocol's members; nothing outside it asks which policy a campaign runs. Validate,
accept, finish and the baseline look the policy up once and call its members.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from kgit.errors import KgitError
from kgit.records.policies import POLICIES

if TYPE_CHECKING:
    from kgit.engine.campaign import Campaign
    from kgit.engine.measuring.policies.target import Calibrated, Outcome, Pick, Target
    from kgit.judge.decision import Judged, Standard
    from kgit.progress import Voice
    from kgit.records.evidence import Evidence
    from kgit.records.manifest import Manifest, Thresholds


@runtime_checkable
class Policy(Protocol):
    """How a policy measures, calibrates and decides (each policy's module says how it does)."""

    @property
    def stored_reference(self) -> bool:
        """Whether the verdict compares the candidate with the reference's stored figures (then
        it must say when they were measured on another device), rather than measuring the
        reference beside the candidate in each validation."""
        ...

    def measure(
        self, campaign: Campaign, target: Target, path: Path, prior: Evidence | None, voice: Voice
    ) -> Outcome:
        """Measure TARGET's candidate, checked out at PATH, adding to PRIOR when it pools."""
        ...

    def calibrate(
        self, campaign: Campaign, commit: str, path: Path, pick: Pick, voice: Voice
    ) -> Calibrated:
        """The baseline COMMIT's first pass (checked out at PATH), and whatever the policy
        measures of its noise besides, on the shapes PICK(first pass) returns."""
        ...

    def floors(self, campaign: Campaign, labels: list[str], versus: str) -> dict[str, float]:
        """The noise floors the policy's rule judges LABELS with (empty: it needs none)."""
        ...

    def rule(self, evidence: Evidence, standard: Standard) -> Judged:
        """The decision rule, pure (kgit/judge/decision.py: decide applies it)."""
        ...

    def statistics(self, evidence: Evidence) -> dict[str, Any]:
        """What the round's note shows of EVIDENCE besides what every policy shows."""
        ...

    def words(self, thresholds: Thresholds) -> str:
        """The policy in a few words, for the report."""
        ...


def policy_named(name: str) -> Policy:
    """The policy the table calls NAME."""
    if name not in POLICIES:
        raise KgitError(
            f"no decision policy {name!r} in this kgit (it knows {', '.join(POLICIES)})",
            hint="upgrade kgit, or validate again under the campaign's policy",
        )
    module = import_module(POLICIES[name])
    if not isinstance(module, Policy):
        raise TypeError(f"{POLICIES[name]} does not implement the Policy protocol")
    return cast(Policy, module)


def policy_of(manifest: Manifest) -> Policy:
    """The campaign's decision policy."""
    return policy_named(manifest.decision_policy)
