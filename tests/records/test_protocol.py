"""The resident-harness protocol's lines, and the digest a harness prints of the CSV it wrote."""

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


def test_every_digest_line_of_the_whole_output_is_seen_across_chunks() -> None:
    """A pass that floods its output after the harness's digest pushed that line out of the
    kept tail, then printed one of its own (accepted at +114%): the lines are read as they
    stream, split anywhere."""
    from kgit.records.protocol import DigestLines

    written, forged = digest_line(b"label,x\na,1\n"), digest_line(b"label,x\na,2\n")
    stream = f"shape 1/1\n{written}\nall_pass: true\n".encode() + b"x" * 100_000 + b"\n"
    stream += f"{forged}\r\nall_pass: true".encode()
    lines = DigestLines()
    for start in range(0, len(stream), 7):  # chunks that cut every line
        lines.feed(stream[start : start + 7])
    assert lines.close() == [written.split(": ")[1], forged.split(": ")[1]]
    # a line that only starts like a digest deep inside a flood is not one
    flood = DigestLines()
    flood.feed(b"y" * 10_000 + written.encode() + b"\n")
    assert flood.close() == []
