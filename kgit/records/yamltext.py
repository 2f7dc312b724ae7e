"""Files and YAML that a user hands kgit (a manifest, a shapes file, an imported summary, a
harness CSV), read defensively.

`yaml.safe_load` alone is not enough for input that becomes a campaign: a 600-byte file of nested
aliases ("billion laughs") expands into a structure that hung `kgit init` for minutes, a 16 MB
manifest took over a minute to parse, and a key written twice silently kept its last value. So
here: a size cap (and only regular files are opened), no aliases (nor merge keys, which need them), and a duplicate key is an error
that names the key and both lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgit.errors import UsageError

MAX_YAML_BYTES = 1_000_000  # a real manifest is a few kB; 1,000 shapes fit in ~100 kB


def read_capped(path: Path, max_bytes: int, kind: str) -> bytes:
    """The bytes of the regular file PATH, refused when larger than MAX_BYTES. Never opens
    anything else: a FIFO would block the open, /dev/zero would never end."""
    try:
        if not path.is_file():
            raise UsageError(
                f"{path} is not a regular file", hint=f"pass the path of the {kind} itself"
            )
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise UsageError(
            f"cannot read {path}: {exc.strerror or exc}", hint="check the path and its permissions"
        ) from None
    if len(data) > max_bytes:
        raise UsageError(
            f"{path} is over {max_bytes:,} bytes; kgit reads a {kind} of at most that",
            hint=f"is it the right file? A {kind} is a few kB",
        )
    return data


def read_text_capped(path: Path, max_bytes: int = MAX_YAML_BYTES) -> str:
    """PATH's UTF-8 text, as `read_capped` reads it."""
    data = read_capped(path, max_bytes, "YAML file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{path} is not UTF-8 text ({exc.reason})", hint="save it as UTF-8"
        ) from None


def load_yaml_text(text: str, source: str, max_bytes: int = MAX_YAML_BYTES) -> Any:
    """The single YAML document in TEXT, refused (UsageError naming SOURCE) when it is too big,
    malformed, uses an alias or repeats a key."""
    import yaml  # only commands that read a user's YAML pay for the import

    size = len(text.encode("utf-8", "surrogateescape"))
    if size > max_bytes:
        raise UsageError(
            f"{source} is {size:,} bytes; kgit reads YAML files of at most {max_bytes:,} bytes",
            hint="is it the right file? A manifest is a few kB (a long shape list can go in a "
            "--shapes-file, which has the same limit)",
        )
    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        _refuse_aliases(loader_class(text), source)
        loader = loader_class(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _refuse_duplicates(node, source)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except (yaml.YAMLError, RecursionError) as exc:  # RecursionError: the pure-Python parser
        raise UsageError(
            f"{source} is not valid YAML: {exc}", hint="check the indentation and the quoting"
        ) from None


def refuse_aliases(text: str, source: str) -> None:
    """UsageError when TEXT uses a YAML alias (one pass over the parser's events)."""
    import yaml

    _refuse_aliases(getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text), source)


def _line(mark: Any) -> int:
    return int(mark.line) + 1 if mark is not None else 0


def _refuse_aliases(loader: Any, source: str) -> None:
    """One pass over the parser's events, before anything is built from them."""
    import yaml

    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, yaml.AliasEvent):
                line = _line(event.start_mark)
                raise UsageError(
                    f"{source} line {line}: YAML aliases (*{event.anchor}) are not allowed",
                    hint="write the value out where the alias stands (aliases and anchors can "
                    "expand a small file into a huge one)",
                )
    finally:
        loader.dispose()


def _refuse_duplicates(root: Any, source: str) -> None:
    """Walk the node tree (a tree: without aliases no node is shared) for repeated keys."""
    import yaml

    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: dict[tuple[str, str], int] = {}
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    line = _line(key.start_mark)
                    ident = (key.tag, key.value)
                    if ident in seen:
                        raise UsageError(
                            f"{source} line {line}: duplicate key {key.value!r} "
                            f"(first at line {seen[ident]})",
                            hint="keep one of the two: YAML would silently use the last",
                        )
                    seen[ident] = line
                stack.extend([key, value])
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
