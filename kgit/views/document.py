"""A tiny document model for reports: headings, paragraphs, lists, tables, code and images,
rendered to GitHub Markdown (tables through tabulate) or to one self-contained HTML page.

Building the report once as blocks keeps the Markdown and the HTML saying the same thing.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

from kgit.records.notes import ERROR, KEPT, ROLLED_BACK


@dataclass(frozen=True)
class Heading:
    level: int
    text: str


@dataclass(frozen=True)
class Para:
    text: str  # inline Markdown: `code` and **bold** only


@dataclass(frozen=True)
class Bullets:
    items: list[str]


@dataclass(frozen=True)
class Table:
    headers: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class Code:
    text: str


@dataclass(frozen=True)
class Image:
    alt: str
    path: Path  # a PNG on disk: linked from Markdown, embedded in HTML


Block = Heading | Para | Bullets | Table | Code | Image


@dataclass
class Document:
    blocks: list[Block] = field(default_factory=list)

    def add(self, *blocks: Block) -> None:
        self.blocks.extend(blocks)


def cell(text: str) -> str:
    """Table cells stay on one line and cannot close the cell."""
    return " ".join(text.split()).replace("|", "\\|")


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    from tabulate import tabulate

    return tabulate(
        [[cell(c) for c in row] for row in rows],
        headers=[cell(h) for h in headers],
        tablefmt="github",
        disable_numparse=True,
    )


def to_markdown(doc: Document, link_base: Path | None = None) -> str:
    """Markdown text; image links are relative to LINK_BASE (the report's folder) when given."""
    parts = []
    for block in doc.blocks:
        if isinstance(block, Heading):
            parts.append("#" * block.level + " " + block.text)
        elif isinstance(block, Para):
            parts.append(block.text)
        elif isinstance(block, Bullets):
            parts.append("\n".join(f"- {item}" for item in block.items))
        elif isinstance(block, Table):
            parts.append(markdown_table(block.headers, block.rows) if block.rows else "(none)")
        elif isinstance(block, Code):
            parts.append(f"```\n{block.text}\n```")
        else:
            parts.append(f"![{block.alt}]({_link(block.path, link_base)})")
    return "\n\n".join(parts) + "\n"


def _link(path: Path, base: Path | None) -> str:
    if base is None:
        return path.as_posix()
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


_INLINE = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*")


# Words the HTML colours (green: held, red: did not), always as text too: a mark that is colour
# or an emoji alone is lost without an emoji font, in print and to colour-blind readers.
PASS_MARK, FAIL_MARK = "**PASS**", "**FAIL**"
_GOOD = {"PASS", *KEPT, "reached"}
_BAD = {"FAIL", ERROR, ROLLED_BACK}


def _verdict_class(text: str) -> str:
    word = text.strip()
    return ' class="good"' if word in _GOOD else ' class="bad"' if word in _BAD else ""


def _inline_html(text: str) -> str:
    out, pos = [], 0
    for match in _INLINE.finditer(text):
        out.append(html.escape(text[pos : match.start()]))
        if match[1] is not None:
            out.append(f"<code>{html.escape(match[1])}</code>")
        else:
            out.append(f"<strong{_verdict_class(match[2])}>{html.escape(match[2])}</strong>")
        pos = match.end()
    out.append(html.escape(text[pos:]))
    return "".join(out)


_CSS = """
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
h1,h2,h3{border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3} tr:nth-child(even) td{background:#fafafa}
code,pre{background:#f5f5f5;font-family:ui-monospace,monospace}
pre{padding:.6em;overflow-x:auto} img{max-width:100%}
.good{color:#116329;font-weight:600} .bad{color:#b3261e;font-weight:600}
"""


def _html_block(block: Block) -> str:
    if isinstance(block, Heading):
        return f"<h{block.level}>{_inline_html(block.text)}</h{block.level}>"
    if isinstance(block, Para):
        return f"<p>{_inline_html(block.text)}</p>"
    if isinstance(block, Bullets):
        items = "".join(f"<li>{_inline_html(i)}</li>" for i in block.items)
        return f"<ul>{items}</ul>"
    if isinstance(block, Table):
        head = "".join(f"<th>{_inline_html(h)}</th>" for h in block.headers)
        body = "".join(
            "<tr>"
            + "".join(f"<td{_verdict_class(c)}>{_inline_html(c)}</td>" for c in row)
            + "</tr>"
            for row in block.rows
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    if isinstance(block, Code):
        return f"<pre>{html.escape(block.text)}</pre>"
    data = base64.b64encode(block.path.read_bytes()).decode()
    return f'<p><img alt="{html.escape(block.alt)}" src="data:image/png;base64,{data}"></p>'


def to_html(doc: Document, title: str) -> str:
    """One self-contained page: inline CSS, images embedded as base64 PNG."""
    body = "\n".join(_html_block(block) for block in doc.blocks)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n"
        f"<body>\n{body}\n</body></html>\n"
    )
