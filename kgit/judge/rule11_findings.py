"""Rule 11's findings: the patterns it names, why each breaks a training step, and one
finding at file:line (see kgit/judge/rule11.py for the rule)."""

from __future__ import annotations

from dataclasses import dataclass

from kgit.judge import tampering

IDENTITY_CACHE = "identity-keyed cache"
TENSOR_KEY = "tensor-keyed cache"
MEMOIZED = "memoized tensor arguments"
IDENTITY_TEST = "identity test against a stored tensor"
TENSOR_ATTR = "result stashed on a tensor"
CONSTEXPR_GROUP = "constexpr tokens per group"
DIVISIBLE_GROUP = "groups assumed to divide by the block"
STATIC_PARTITION = "static per-expert partition"
NO_EMPTY_GROUP = "no empty group assumed"

_CACHE_WHY = (
    "hits when the benchmark reuses a tensor or the allocator reuses an address, and misses or "
    "returns stale data in a training step; _version, shape or dtype in the key do not rescue "
    "it (allowed: weights keyed by id(weight) + _version + shape)"
)
_UNIFORM_WHY = (
    "valid only when every expert gets the same tokens: routed MoE traffic is skewed (top-k, "
    "capacity factors, hot and empty experts)"
)
WHY = {
    IDENTITY_CACHE: "a cache keyed on the identity of a non-weight tensor " + _CACHE_WHY,
    TENSOR_KEY: "a cache keyed on a tensor object (tensors hash by identity) " + _CACHE_WHY,
    MEMOIZED: "memoization over tensor arguments (keyed by identity) " + _CACHE_WHY,
    IDENTITY_TEST: "reusing a result when the same tensor object comes back " + _CACHE_WHY,
    TENSOR_ATTR: "a result kept as an attribute of an input tensor (`x._out = out`) " + _CACHE_WHY,
    CONSTEXPR_GROUP: "tokens per group compiled in as a constant: " + _UNIFORM_WHY,
    DIVISIBLE_GROUP: "every group's rows assumed to be a multiple of the block: " + _UNIFORM_WHY,
    STATIC_PARTITION: "groups cut as equal slices of the tokens: " + _UNIFORM_WHY,
    NO_EMPTY_GROUP: "asserts that no group is empty: " + _UNIFORM_WHY,
    # What a change must not do to the measuring process, scanned and reported alongside.
    **tampering.WHY,
}
PATTERNS = tuple(WHY)


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    pattern: str
    text: str  # the source line, stripped
    subject: str = ""  # what the key or the shortcut is about (`x`, `M_per_group`)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def why(self) -> str:
        return WHY[self.pattern]

    @property
    def key(self) -> tuple[str, str]:
        """What makes two findings the same one, wherever the line moved."""
        return self.pattern, " ".join(self.text.split())

    def describe(self) -> str:
        about = f" ({self.subject})" if self.subject else ""
        rule = "tampering" if self.pattern in tampering.PATTERNS else "training shortcut"
        return f"{rule}: {self.where}: {self.pattern}{about}: `{self.text}`"

    def to_dict(self) -> dict[str, str | int]:
        return {
            "path": self.path,
            "line": self.line,
            "where": self.where,
            "pattern": self.pattern,
            "subject": self.subject,
            "text": self.text,
            "why": self.why,
        }


# -- names ------------------------------------------------------------------------------------
