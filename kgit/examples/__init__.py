"""Example kernels bundled with kgit. Each folder is a standalone campaign repo: the demo copies
it out, so its modules import each other as siblings, not through this package."""
