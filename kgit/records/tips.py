"""Historical tips: lessons a campaign leaves for the next one on the same GPU, op and backend.

A tip has the four parts of the seed's format (context, signal, takeaway, applicability) and
where it came from (campaign, round, outcome). Tips are keyed by target, not by commit, so they
live in a commit chain per key, `refs/kgit-tips/<gpu>/<op>/<backend>`, whose tree holds one YAML
file per tip: any campaign of that op in the repository (or in a clone that fetched the ref)
reads them.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass
from typing import Any

from kgit.errors import UsageError
from kgit.records.notes import dump_record, known_fields, load_record

TIP_VERSION = 1
TIPS_PREFIX = "refs/kgit-tips/"
TIP_PARTS = ("context", "signal", "takeaway", "applicability")

_UNSAFE = re.compile(r"[^a-z0-9._-]+")


def key_part(value: str) -> str:
    """One component of a tips ref: lower case, ref-safe; an empty value (no GPU named) is `any`.
    `NVIDIA H200` and `nvidia-h200` share their tips."""
    part = _UNSAFE.sub("-", value.strip().lower()).strip("-.")
    part = re.sub(r"\.{2,}", ".", part).removesuffix(".lock")
    return part[:60] or "any"


def tips_ref(gpu: str, op: str, backend: str) -> str:
    return f"{TIPS_PREFIX}{key_part(gpu)}/{key_part(op)}/{key_part(backend)}"


@dataclass(frozen=True)
class Tip:
    context: str  # what was being tried, on what
    signal: str  # what was observed (numbers, profiler counters, a failure)
    takeaway: str  # what to do (or not do) next time
    applicability: str  # where it holds: shapes, dtypes, backends, hardware
    gpu: str
    op: str
    backend: str
    recorded_at: str
    campaign: str | None = None
    round: int | None = None
    outcome: str | None = None  # the round's status when the tip was recorded
    commit: str | None = None
    schema_version: int = TIP_VERSION

    def file_name(self) -> str:
        """Unique and sortable by time: `20261202T110820Z-c1-r3-1a2b3c4d.yaml`."""
        digest = hashlib.sha1(self.to_text().encode()).hexdigest()[:8]
        stamp = self.recorded_at.replace("-", "").replace(":", "")
        origin = key_part(self.campaign or "manual") + (f"-r{self.round}" if self.round else "")
        return f"{stamp}-{origin}-{digest}.yaml"

    def to_text(self) -> str:
        data = {"kgit": "tip", **{k: v for k, v in asdict(self).items() if v is not None}}
        return dump_record(data)

    @classmethod
    def from_text(cls, text: bytes | str) -> Tip:
        return cls(**known_fields(cls, load_record(text, "tip", TIP_VERSION, "tip")))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_tip_text(parts: dict[str, str | None]) -> dict[str, str]:
    """The four parts, whitespace-tidied; every one is needed (a tip without its signal or its
    applicability misleads the next campaign more than no tip)."""
    tidy = {name: " ".join((parts.get(name) or "").split()) for name in TIP_PARTS}
    empty = [name for name, text in tidy.items() if not text]
    if empty:
        raise UsageError(
            f"a tip needs all four parts; missing: {', '.join(empty)}",
            hint="kgit tips add --context ... --signal ... --takeaway ... --applicability ...",
        )
    return tidy
