"""The README is one page a newcomer finishes, its reference lives in docs/, and every link and
command it shows holds (issue 37, item 2)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_is_one_page() -> None:
    assert len(README.read_text().splitlines()) < 250


def test_every_relative_link_of_the_readme_and_the_docs_resolves() -> None:
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in PAGES
        for target in LINK.findall(page.read_text())
        if "://" not in target and not (page.parent / target).exists()
    ]
    assert not broken


def test_every_docs_page_is_linked_from_the_readme() -> None:
    text = README.read_text()
    unlinked = [p.name for p in (ROOT / "docs").glob("*.md") if f"(docs/{p.name})" not in text]
    assert not unlinked


def test_the_readme_shows_ci_s_command_and_the_quick_suite() -> None:
    text = README.read_text()
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert f"```bash\n{ci}\n```" in text
    assert '```bash\npytest -m "not slow" -n 2\n```' in text
    assert "&& kgit demo\n```" in text
