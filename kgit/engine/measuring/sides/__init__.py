"""The two sides of an A/B comparison: each side's harness, resident or one pass a turn
(`sides.py`), its process with its output, requests and kill (`side_process.py`), the idle side
held still while the other times (`holding.py`), the work trees of kgit's own each side runs in
(`side_trees.py`), and those trees on disk, their size and removal (`trees.py`)."""
