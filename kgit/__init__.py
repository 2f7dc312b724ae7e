"""kgit: git-native GPU kernel optimization campaigns."""

__version__ = "0.1.0"
