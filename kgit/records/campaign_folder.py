"""The seed's campaign folder, as `kgit export` writes it and `kgit import` reads it back: the
names both sides must agree on."""

from __future__ import annotations

# The `kgit:` key of each rounds/round-N/summary.md front matter.
SUMMARY_KIND = "round-summary"
# The folder's copy of the campaign's harness (its first protected path).
HARNESS_FILE = "quick_test_bench.py"
