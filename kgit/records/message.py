"""The fields a round's commit message carries besides its trailers: what its author recorded
for the round's summary (iteration rule 4), as `Key: value` lines, e.g. `Lesson: ...`.

They are trailers or body lines alike: both survive a rebase with the message. `kgit show`
and `kgit report` read them back; `kgit import` writes them into the commits it builds.
"""

from __future__ import annotations

import re

RECORD_KEYS = {
    "attribution": "Attribution",
    "next_direction": "Next-Direction",
    "expected": "Expected",
    "root_cause": "Root-Cause",
    "lesson": "Lesson",
}
_RECORD_LINE = re.compile(r"^(" + "|".join(RECORD_KEYS.values()) + r"):\s*(.+)$", re.M | re.I)


def recorded_fields(message: str) -> dict[str, str]:
    """The rule-4 fields written as `Key: value` lines in a commit message."""
    by_key = {v.lower(): k for k, v in RECORD_KEYS.items()}
    return {by_key[m[1].lower()]: m[2].strip() for m in _RECORD_LINE.finditer(message)}
