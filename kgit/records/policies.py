"""The decision policies a manifest may name (`decision_policy`), each with the module of kgit's
engine that implements it (the `Policy` protocol of kgit/engine/measuring/policies/policy.py).

This table is the one place where code spells a policy's name to tell policies apart: the
manifest's schema reads its keys (kgit/records/manifest_checks.py) and its default, and the
engine looks a campaign's policy up in it once per command. It names the modules instead of importing them:
the records sit below the engine (docs/architecture.md). A new policy is its module and a row;
one with settings of its own has a section of the manifest of its name (`interleaved:`), which
its rule reads as the standard's settings (kgit/records/manifest.py: Manifest.policy_settings).
"""

from __future__ import annotations

POLICIES: dict[str, str] = {
    "seed": "kgit.engine.measuring.policies.policy_seed",
    "interleaved": "kgit.engine.measuring.policies.policy_interleaved",
}

# The policy a manifest gets when it names none, and the one a manifest stored before that
# default was chosen was judged by (its baseline has no A/A calibration for the other).
DEFAULT_POLICY = "interleaved"
POLICY_BEFORE_DEFAULT = "seed"
