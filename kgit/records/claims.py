"""A claim on a line of a hypotheses file that workers in several clones share (`kgit worker
--remote`). It lives in the campaign record as `claims/<key>` (kgit/engine/rounds/shared_hypotheses.py), written
in the same commit as the round it opened, so it travels between clones under the record's
compare-and-swap and names the round, the worker and the clone that took the line."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from kgit.records.notes import dump_record, known_fields, load_record

CLAIM_VERSION = 1
CLAIMS_DIR = "claims"  # claims/<key> in the campaign record's tree


def claim_path(key: str) -> str:
    return f"{CLAIMS_DIR}/{key}"


@dataclass(frozen=True)
class Claim:
    hypothesis: str
    round: int  # the round it opened, in the same record commit
    worker: str
    clone: str  # `host:path` of the clone the worker ran in (kgit/engine/rounds/shared_hypotheses.py: clone_id)
    pid: int
    claimed_at: str
    line: int = 0  # in the hypotheses file, as the claiming clone read it
    schema_version: int = CLAIM_VERSION

    @property
    def claimer(self) -> str:
        return f"{self.worker} on {self.clone}"

    def to_text(self) -> str:
        return dump_record({"kgit": "claim", **asdict(self)})

    @classmethod
    def from_text(cls, text: bytes | str) -> Claim:
        return cls(**known_fields(cls, load_record(text, "claim", CLAIM_VERSION, "claim")))
