"""Stored formats: the round note, the gate note and the campaign state. Each carries
`schema_version`; an older one is upgraded here, a newer one is refused with "upgrade kgit".

The round note is YAML because people read it in `git log --notes=kgit/<campaign>/rounds`: one
`key: value` per line, per-shape results one flow mapping per line.
"""

from __future__ import annotations

import functools
import json
import re
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any, TypeVar

from kgit.errors import KgitError

T = TypeVar("T")

NOTE_VERSION = 1
STATE_VERSION = 2  # 2: open_rounds (several rounds in flight) replaces open_round

# Round statuses. The three decisions are the seed's own words.
BASELINE = "BASELINE"
VALIDATED = "VALIDATED"
ERROR = "ERROR"
ACCEPTED = "ACCEPTED"
ACCEPTED_TRADEOFF = "ACCEPTED (trade-off)"
ROLLED_BACK = "ROLLED BACK"
ACCEPTING = (ACCEPTED, ACCEPTED_TRADEOFF)  # the decisions that move the best line
KEPT = (*ACCEPTING, BASELINE)  # the rounds the best line holds
FINAL = (*KEPT, ROLLED_BACK)  # a round note with one of these is closed

# How a killed command left the open round (kgit/engine/recovery.py): an accept that moved the
# best line, or a rollback that marked the note, both not yet recorded.
ACCEPT = "accept"
ROLLBACK = "rollback"

# How a note on a notes ref differs from the one kgit recorded (kgit/engine/guards/seal.py).
CHANGED = "changed"  # the notes ref holds another note than kgit recorded
MISSING = "missing"  # kgit recorded a note the notes ref no longer holds
UNRECORDED = "unrecorded"  # a note kgit never wrote (and not a copy of one it did)


def _check_version(data: dict[str, Any], current: int, what: str) -> None:
    version = data.get("schema_version")
    if not isinstance(version, int):
        raise KgitError(f"stored {what} has no schema_version", hint="was it written by kgit?")
    if version > current:
        raise KgitError(
            f"stored {what} has schema_version {version}; this kgit reads up to {current}",
            hint="upgrade kgit (pip install -U kgit)",
        )


def load_record(text: bytes | str, kind: str, version: int, what: str) -> dict[str, Any]:
    """A stored YAML record of KIND (`kgit: KIND`), refused when it is not one or is newer."""
    import yaml  # kept off the read path: `kgit status` reads parsed notes from the cache

    hint = (
        f"a {what} was changed outside kgit: find it with `git log --notes='kgit/*'`, then "
        "restore it from a clone or remove it (git notes --ref=REF remove COMMIT)"
    )
    _refuse_aliases(text, what, hint)
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise KgitError(f"a stored {what} is not valid YAML: {exc}", hint=hint) from None
    if not isinstance(data, dict) or data.get("kgit") != kind:
        raise KgitError(f"this is not a kgit {what}", hint=hint)
    _check_version(data, version, what)
    return data


# A top-level `campaign:` or `status:` line of a round note, as kgit writes them (plain values).
_TOP_LINE = re.compile(rb"^(campaign|status): ?(.*)$", re.MULTILINE)


def kept_by(text: bytes, campaign: str) -> bool | None:
    """Whether the round note TEXT, as kgit writes it, is CAMPAIGN's and kept its change, read off
    its top-level `campaign:` and `status:` lines without a YAML parser: importing one was a fifth
    of `kgit status`, which checks the record's notes since the last accept on every call. None
    where TEXT is not plainly in kgit's layout (a line missing or repeated, a value quoted or
    unknown): the caller parses it. TEXT is a blob of the campaign record, where only kgit
    writes (a record rewritten by hand is the hole docs/threat-model.md names)."""
    if not text.startswith(b"kgit: round\n"):
        return None
    found: dict[bytes, list[bytes]] = {b"campaign": [], b"status": []}
    for match in _TOP_LINE.finditer(text):
        found[match.group(1)].append(match.group(2))
    names, statuses = found[b"campaign"], found[b"status"]
    if len(names) != 1 or len(statuses) != 1:
        return None
    status = statuses[0].decode(errors="replace")
    name = names[0].decode(errors="replace")
    if status not in (*FINAL, VALIDATED, ERROR) or name[:1] in ("'", '"', ""):
        return None
    return name == campaign and status in KEPT


def _refuse_aliases(text: bytes | str, what: str, hint: str) -> None:
    """kgit never writes a YAML alias (its records are built fresh by `asdict`), and a record
    that arrives from another clone may carry a "billion laughs" one: a 1 kB round note of nested
    aliases, pulled in a campaign record, hung `kgit log` for minutes while the note cache
    expanded it. Only text with a `*` is scanned (one parser pass)."""
    from kgit.errors import UsageError
    from kgit.records.yamltext import refuse_aliases

    decoded = text if isinstance(text, str) else text.decode(errors="replace")
    if "*" not in decoded:
        return
    try:
        refuse_aliases(decoded, what)
    except UsageError as exc:
        raise KgitError(f"a stored {exc.message}: kgit never writes one", hint=hint) from None


# YAML reads these as line breaks; PyYAML writes them raw in plain scalars under allow_unicode,
# so a reason or a harness tail holding one (U+0085 from a decoded byte pair, say) read back with
# a space in its place. Double quotes escape them.
_YAML_BREAKS = ("\x85", "\u2028", "\u2029")


def dump_record(data: dict[str, Any], flow: bool | None = False) -> str:
    """A record as YAML people can read (unicode kept, keys in field order) that reads back
    exactly: `load_record(dump_record(d))` equals d."""
    import yaml  # kept off the read path: `kgit status` reads parsed notes from the cache

    base = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class Dumper(base):  # type: ignore[valid-type, misc]
        pass

    def text(dumper: Any, value: str) -> Any:
        style = '"' if any(b in value for b in _YAML_BREAKS) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    body: str = yaml.dump(
        data, Dumper=Dumper, sort_keys=False, default_flow_style=flow, width=100, allow_unicode=True
    )
    return body


@functools.cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


def type_problems(cls: type, data: dict[str, Any]) -> list[str]:
    """The fields of DATA whose values do not have the types CLS declares. Notes kgit wrote
    have them; a note from outside (an imported folder) is checked here before it is stored,
    or a list where a number belongs crashes every later view."""
    checks = _checks(cls)
    return [
        f"{name}: {value!r:.60} is not {checks[name][0]}"
        for name, value in data.items()
        if name in checks and not checks[name][1](value)
    ]


@functools.cache
def _checks(cls: type) -> dict[str, tuple[Any, Callable[[Any], bool]]]:
    """Each field's declared type and its check, built once: the views' caches are checked on
    every read (1,000 notes), and resolving the hints each time cost ten times the checks."""
    return {name: (hint, _check(hint)) for name, hint in typing.get_type_hints(cls).items()}


def _check(hint: Any) -> Callable[[Any], bool]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return lambda value: True
    if origin in (typing.Union, types.UnionType):
        parts = [_check(arg) for arg in args]
        return lambda value: any(part(value) for part in parts)
    if origin is list:
        item = _check(args[0])
        return lambda value: isinstance(value, list) and all(map(item, value))
    if origin is dict:
        key, entry = _check(args[0]), _check(args[1])
        return lambda value: (
            isinstance(value, dict) and all(key(k) and entry(v) for k, v in value.items())
        )
    if is_dataclass(hint):
        return lambda value: isinstance(value, dict) and not type_problems(hint, value)  # type: ignore[arg-type]
    if hint in (float, int):
        number = (int, float) if hint is float else int
        return lambda value: isinstance(value, number) and not isinstance(value, bool)
    if isinstance(hint, type):
        return lambda value: isinstance(value, hint)
    return lambda value: True


def known_fields(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """The keys CLS knows: a note written by a newer minor kgit may carry more."""
    names = _field_names(cls)
    return {k: v for k, v in data.items() if k in names}


def _rounded(value: Any) -> Any:
    """Floats to 6 significant digits, for people reading `git log --notes`; the byte-exact
    measurements are in the bench note."""
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.6g}")
    return value


def _compact(record: dict[str, Any]) -> dict[str, Any]:
    """A record's fields without the empty ones (None, [], {}), which its dataclass defaults
    give back on reading. Only a record's own fields: inside a free-form mapping (statistics,
    hashes) an empty value is data, and dropping it would change what is read back."""
    return {k: _rounded(v) for k, v in record.items() if v not in (None, [], {})}


@dataclass
class ShapeResult:
    label: str
    check: str
    # Primary metric (mean over runs), None when the shape did not PASS. Every field that the
    # writer may drop (`_compact` leaves out None) has a default, or a FAIL shape's note is unreadable.
    value: float | None = None
    best: float | None = None
    delta_pct: float | None = None  # vs best
    vs_baseline_pct: float | None = None


@dataclass
class RoundNote:
    """Everything kgit knows about one round, attached to the round's commit."""

    campaign: str
    round: int
    status: str
    hypothesis: str
    metric: str
    schema_version: int = NOTE_VERSION
    level: str = "quick"  # quick: representative shapes; full: all target shapes
    parent: str | None = None  # the best line's tip the round started from
    decision: str | None = None
    reasons: list[str] = field(default_factory=list)
    aggregate: float | None = None
    best_aggregate: float | None = None
    baseline_aggregate: float | None = None
    delta_vs_best_pct: float | None = None
    delta_vs_baseline_pct: float | None = None
    run_aggregates: list[float] = field(default_factory=list)
    shapes: list[ShapeResult] = field(default_factory=list)
    diagnostics: dict[str, float] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    hashes: dict[str, Any] = field(default_factory=dict)
    started_at: str | None = None
    validated_at: str | None = None
    decided_at: str | None = None
    rollback_reason: str | None = None
    # What the user said of the round when closing it (round accept --attribution/--lesson,
    # round rollback --lesson): the seed's rule-4 summary fields.
    attribution: str | None = None
    lesson: str | None = None
    harness_tail: str | None = None
    fingerprint: dict[str, str] = field(default_factory=dict)  # GPU, driver, CUDA, torch, triton
    statistics: dict[str, Any] = field(default_factory=dict)  # the judged estimates, per shape
    tree: str | None = None  # the tree the verdict is about: accept refuses any other tree
    cause: str | None = None  # why the decision (kgit/judge/verdict.py), for code and agents
    evidence: dict[str, Any] = field(default_factory=dict)  # kgit/records/evidence.py
    # Rule 11's findings in what the round added (kgit/judge/rule11.py): path, line, pattern...
    findings: list[dict[str, Any]] = field(default_factory=list)

    def to_text(self) -> str:
        data = _compact({"kgit": "round", **asdict(self)})
        if "shapes" in data:
            data["shapes"] = [_compact(shape) for shape in data["shapes"]]
        return dump_record(data, flow=None)

    @classmethod
    def from_text(cls, text: bytes | str) -> RoundNote:
        return cls.from_dict(load_record(text, "round", NOTE_VERSION, "round note"))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], with_shapes: bool = True) -> RoundNote:
        """WITH_SHAPES=False skips the per-shape results: listing 1,000 rounds does not need them
        and building them is most of the cost."""
        shapes = (
            [ShapeResult(**known_fields(ShapeResult, s)) for s in data.get("shapes") or []]
            if with_shapes
            else []
        )
        return cls(**known_fields(cls, {**data, "shapes": shapes}))

    @property
    def accepted(self) -> bool:
        return self.status in KEPT

    def values(self) -> dict[str, float]:
        """Primary metric per PASS shape."""
        return {s.label: s.value for s in self.shapes if s.value is not None}


def in_line_order(rounds: Iterable[tuple[str, T]], line: Sequence[str]) -> list[T]:
    """The items of ROUNDS, (commit, item) pairs, in the order the best line took their commits
    (LINE: its first-parent history, newest first); commits off the line come first, in their
    given order. Rounds in parallel are not accepted in round order: round-3 may be accepted
    before round-2, which is then rebased onto it, and round-2's figures are the newer ones."""
    place = {commit: n for n, commit in enumerate(reversed(line))}
    return [item for _, item in sorted(rounds, key=lambda pair: place.get(pair[0], -1))]


WORK_TREE = "work tree"
CLEAN_CHECKOUT = "clean checkout"


@dataclass
class GateNote:
    """The commit gate's result, attached to the tree that was tested; WHERE it ran: the user's
    work tree (the commit hook: untracked files there can change the tests' outcome) or kgit's
    clean checkout of the commit (validate and accept trust only that)."""

    campaign: str
    passed: bool
    command: str
    seconds: float
    at: str
    schema_version: int = NOTE_VERSION
    output_tail: str | None = None
    where: str = WORK_TREE  # or CLEAN_CHECKOUT; a note written before the field: WORK_TREE

    def to_text(self) -> str:
        return json.dumps({"kgit": "gate", **asdict(self)}, indent=1) + "\n"

    @classmethod
    def from_text(cls, text: bytes | str) -> GateNote:
        data = json.loads(text)
        _check_version(data, NOTE_VERSION, "gate note")
        return cls(**known_fields(cls, data))


@dataclass
class OpenRound:
    number: int
    hypothesis: str
    parent: str
    started_at: str


@dataclass
class CampaignState:
    """The campaign's mutable facts, in `state.json` of the campaign record ref."""

    name: str
    base: str  # the commit the campaign started from
    created: str
    schema_version: int = STATE_VERSION
    next_round: int = 2  # round-1 is the baseline
    # Rounds in flight: one on the main work tree, or several at once, each on its own work tree
    # (kgit/engine/rounds/parallel.py). Numbers come from next_round under the write lock: never reused.
    open_rounds: list[OpenRound] = field(default_factory=list)
    frozen_header: list[str] | None = None
    protected: dict[str, str | None] = field(default_factory=dict)  # path -> blob sha at baseline
    representative: list[str] = field(default_factory=list)
    inactive: list[str] = field(default_factory=list)  # shapes failing at baseline
    noise_floors: dict[str, float] = field(default_factory=dict)  # A/A-calibrated, per shape
    fingerprint: dict[str, str] = field(default_factory=dict)  # the baseline's environment
    # Rounds rolled back before any commit (no commit to hold a note): round, hypothesis, reason.
    abandoned: list[dict[str, Any]] = field(default_factory=list)
    finished: bool = False
    finished_at: str | None = None
    # The last `kgit finish`: {"branch", "commit", "best"}; kept after a reopen as history.
    final: dict[str, str] | None = None
    reopened: list[str] = field(default_factory=list)  # when `round start --reopen` reopened it
    # The latest gate audit (kgit/records/gate_audit.py), as a mapping; None before any.
    gate_audit: dict[str, Any] | None = None
    # The commit whose gate audit the baseline started in the background, until it ends
    # (kgit/engine/guards/audit_background.py): the record, not only the mark under .git/kgit/
    # that any process of the user's may delete, says that one was started.
    gate_audit_started: str | None = None

    def to_json(self) -> bytes:
        return (json.dumps(asdict(self), indent=2, sort_keys=True) + "\n").encode()

    @classmethod
    def from_json(cls, data: bytes) -> CampaignState:
        raw = json.loads(data)
        _check_version(raw, STATE_VERSION, "campaign state")
        if raw["schema_version"] == 1:  # one round at most, stored alone
            single = raw.pop("open_round", None)
            raw["open_rounds"], raw["schema_version"] = [single] if single else [], 2
        raw["open_rounds"] = [OpenRound(**found) for found in raw.get("open_rounds") or []]
        return cls(**known_fields(cls, raw))

    @property
    def open_round(self) -> OpenRound | None:
        """The round in flight; the oldest one when several are (each has its work tree)."""
        return min(self.open_rounds, key=lambda found: found.number, default=None)

    def open_numbered(self, number: int) -> OpenRound | None:
        return next((found for found in self.open_rounds if found.number == number), None)

    def close_round(self, number: int) -> None:
        self.open_rounds = [found for found in self.open_rounds if found.number != number]

    @property
    def baselined(self) -> bool:
        return self.frozen_header is not None
