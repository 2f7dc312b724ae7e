"""`kept_by`: whether a recorded round note kept its change, read without a YAML parser (the
check `kgit status` makes of the record's notes since the last accept on every call)."""

from __future__ import annotations

import itertools

import pytest

from kgit.records.notes import (
    ACCEPTED,
    ACCEPTED_TRADEOFF,
    BASELINE,
    ERROR,
    ROLLED_BACK,
    VALIDATED,
    RoundNote,
    ShapeResult,
    kept_by,
)

STATUSES = (BASELINE, VALIDATED, ERROR, ACCEPTED, ACCEPTED_TRADEOFF, ROLLED_BACK)
# Names YAML would read as something else unquoted: the dumper quotes them.
NAMES = ("c1", "gemm_h100-2026.12", "123", "yes", "null", "1e3", "0x10", "on", "c1.lock2")
HYPOTHESES = (
    "plain",
    "status: ACCEPTED",
    "campaign: other\nstatus: ACCEPTED",
    "x\nstatus: ACCEPTED",
)


@pytest.mark.parametrize(
    ("name", "status", "hypothesis"), list(itertools.product(NAMES, STATUSES, HYPOTHESES))
)
def test_what_it_reads_off_a_note_kgit_wrote_is_what_the_parser_reads(
    name: str, status: str, hypothesis: str
) -> None:
    text = (
        RoundNote(
            campaign=name,
            round=3,
            status=status,
            hypothesis=hypothesis,
            metric="TFLOPS",
            reasons=["aggregate +1.2% vs best"],
            shapes=[ShapeResult("s64", "PASS", 101.2, 100.0, 1.2)],
        )
        .to_text()
        .encode()
    )
    parsed = RoundNote.from_text(text)
    for asked in (name, "c2"):
        quick = kept_by(text, asked)
        assert quick is None or quick == (parsed.campaign == asked and parsed.accepted)
    if name == "c1":  # the usual name: read without the parser
        assert kept_by(text, "c1") is not None


@pytest.mark.parametrize(
    "text",
    [
        b"campaign: c1\nstatus: ACCEPTED\n",  # not a round note's first line
        b"kgit: round\ncampaign: c1\nstatus: ACCEPTED\nstatus: ROLLED BACK\n",  # repeated
        b"kgit: round\ncampaign: c1\n",  # no status
        b"kgit: round\ncampaign: c1\nstatus: 'ACCEPTED'\n",  # quoted
        b"kgit: round\ncampaign: 'c1'\nstatus: ACCEPTED\n",
        b"kgit: round\ncampaign: c1\nstatus: ACCEPTED!\n",  # no status kgit writes
        b"{kgit: round, campaign: c1, status: ROLLED BACK}\n",  # flow style (a note with no list)
    ],
)
def test_what_kgit_does_not_write_is_left_to_the_parser(text: bytes) -> None:
    assert kept_by(text, "c1") is None
