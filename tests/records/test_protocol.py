"""The worker protocol's lines, and the digest a harness prints of the CSV it wrote."""

from __future__ import annotations

import json

from kgit.records.protocol import (
    changed_since_written,
    digest_line,
    parse_marker,
    reply_line,
    written_digest,
)


def test_a_reply_names_the_csv_it_wrote_by_its_digest() -> None:
    kind, payload = parse_marker(reply_line(3, 0, csv=b"label,x\na,1\n")) or ("", {})
    assert kind == "reply" and payload["id"] == 3 and payload["exit"] == 0
    assert not changed_since_written(b"label,x\na,1\n", payload["sha256"])
    assert changed_since_written(b"label,x\na,2\n", payload["sha256"])
    assert json.loads(reply_line(4, 1)[len("kgit-worker-reply: ") :]) == {"id": 4, "exit": 1}


def test_the_first_digest_of_a_pass_is_the_harness_own() -> None:
    written, rewritten = b"label,x\na,1\n", b"label,x\na,2\n"
    # an exit handler that rewrites the CSV and prints a digest of its own comes later
    output = "\n".join(
        ["shape 1/1", digest_line(written), "all_pass: true", digest_line(rewritten)]
    )
    digest = written_digest(output)
    assert changed_since_written(rewritten, digest)
    assert not changed_since_written(written, digest)
    # a harness of one's own prints no digest: nothing to compare
    assert written_digest("all_pass: true") is None
    assert not changed_since_written(rewritten, None)
