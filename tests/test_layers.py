"""The package's layers, read from the imports: each imports only those below it.

Views only read, so the engine never reaches them and they reach neither the engine (the layer
that writes the record and runs commands) nor git: they get the record through the read-only
interface of kgit/records/reader.py. Judgements are pure, so `kgit/judge/` reaches neither git
nor the engine nor a view.
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from pathlib import Path

import kgit

ROOT = Path(kgit.__file__).parent


def imports(path: Path) -> set[str]:
    """Every kgit module PATH imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module == "kgit":
            found.update(f"kgit.{alias.name}" for alias in node.names)  # from kgit import x
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name == "kgit" or name.startswith("kgit.")}


def reaching(folder: str, allowed: tuple[str, ...]) -> list[str]:
    """`module -> import` for each import under kgit/FOLDER outside the ALLOWED prefixes."""
    return sorted(
        f"{path.relative_to(ROOT)} -> {name}"
        for path in (ROOT / folder).rglob("*.py")
        for name in imports(path)
        if not name.startswith(allowed)
    )


def test_the_engine_imports_no_view() -> None:
    assert reaching("engine", ("kgit.engine", "kgit.judge", "kgit.records", "kgit.errors",
                               "kgit.gitdoor", "kgit.progress", "kgit.resources")) == []  # fmt: skip


# The engine's rooms, from the ground up: a module imports its own room and those below it only.
ENGINE_ROOMS = ("remote", "orphans", "note_cache", "campaign", "bestline", "user_commands", "recovery", "measuring", "guards",
                "sharing", "lineage", "read_only", "rounds", "status", "lifecycle")  # fmt: skip


def room_of(module: str) -> str:
    return module.split(".")[2]  # kgit.engine.ROOM[.module]


def engine_imports() -> dict[str, set[str]]:
    """module -> the engine modules it imports, for every module under kgit/engine/."""
    found = {}
    for path in (ROOT / "engine").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = {
            n for n in imports(path) if n.startswith("kgit.engine.") and n != name
        }
    return found


def test_the_engines_rooms_import_only_downwards() -> None:
    rank = {room: i for i, room in enumerate(ENGINE_ROOMS)}
    graph = engine_imports()
    assert {room_of(m) for m in graph if m != "kgit.engine"} == set(ENGINE_ROOMS)
    upward = [
        f"{m} -> {n}"
        for m, names in graph.items()
        if m != "kgit.engine"
        for n in names
        if rank[room_of(n)] > rank[room_of(m)]
    ]
    assert upward == []


# measuring/'s own rooms, from the ground up: the device, the sealed world a measuring process
# runs in, the harness's passes, the two sides of a comparison, the policies that judge them.
MEASURING_ROOMS = ("device", "isolation", "harness", "sides", "policies")


def test_measurings_rooms_import_only_downwards() -> None:
    graph = {m: n for m, n in engine_imports().items() if m.startswith("kgit.engine.measuring")}
    room = {m: m.split(".")[3] for m in graph if m != "kgit.engine.measuring"}  # no module loose
    assert set(room.values()) == set(MEASURING_ROOMS)
    rank = {name: i for i, name in enumerate(MEASURING_ROOMS)}
    upward = [
        f"{m} -> {n}"
        for m, names in graph.items()
        if m in room
        for n in names
        if n in room and rank[room[n]] > rank[room[m]]
    ]
    assert upward == []


def test_no_import_circle_in_the_engine() -> None:
    graph = engine_imports()
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " -> ".join((*path[path.index(module) :], module))
        if module in done:
            return
        for name in sorted(graph.get(module, ())):
            visit(name, (*path, module))
        done.add(module)

    for module in sorted(graph):
        visit(module, ())


VIEW_LAYERS = ("kgit.views", "kgit.judge", "kgit.records", "kgit.errors")


def test_views_import_nothing_that_writes() -> None:
    assert reaching("views", VIEW_LAYERS) == []


def test_judgements_are_pure() -> None:
    assert reaching("judge", ("kgit.judge", "kgit.records", "kgit.errors")) == []


def test_records_import_only_records() -> None:
    assert reaching("records", ("kgit.records", "kgit.errors")) == []


def test_the_scan_sees_a_function_level_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from kgit import progress\ndef f():\n    from kgit.views.campaign_report import report_data\n"
    )
    assert imports(module) == {"kgit.progress", "kgit.views.campaign_report"}


RAW_GIT = ("git", "git_text", "succeeds")  # the door's runners: `repo.git("log", ...)`


def raw_git_calls(path: Path) -> list[str]:
    """`file:line .name(` for each call of a raw git runner in PATH."""
    return [
        f"{path.name}:{node.lineno} .{node.func.attr}("
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in RAW_GIT
    ]


def test_all_git_goes_through_the_door() -> None:
    door = ROOT / "gitdoor"
    outside = [p for p in ROOT.rglob("*.py") if door not in p.parents]
    assert [call for path in outside for call in raw_git_calls(path)] == []


def test_the_scan_sees_a_raw_git_call(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f(repo):\n    return repo.git('ls-files', '-z'), repo.rev_parse('x')\n")
    assert raw_git_calls(module) == ["m.py:2 .git("]


def git_commands(path: Path) -> list[str]:
    """`file:line` for each git command PATH spells out to run: `run("git", ...)`, `["git", ...]`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        first = node.args[0] if isinstance(node, ast.Call) and node.args else None
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            first = node.elts[0]
        if isinstance(first, ast.Constant) and first.value == "git":
            found.append(f"{path.name}:{node.lineno}")
    return found


def test_no_git_command_is_spawned_outside_the_door() -> None:
    # The demo is the exception: it plays the user, typing `git commit` where a user would.
    door, demo = ROOT / "gitdoor", ROOT / "demo.py"
    outside = [p for p in ROOT.rglob("*.py") if door not in p.parents and p != demo]
    assert [hit for path in outside for hit in git_commands(path)] == []


def test_the_scan_sees_a_spawned_git_command(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import subprocess\nsubprocess.run(['git', 'status'])\nrun('git', 'log')\n")
    assert sorted(git_commands(module)) == ["m.py:2", "m.py:3"]


# The seed's decision words, and the accept rule built from them, live in kgit/records/notes.py;
# a copy elsewhere (a literal, or the two accepting decisions listed again) drifts from it.
DECISIONS = {"ACCEPTED", "ACCEPTED (trade-off)", "ROLLED BACK", "BASELINE"}


def decision_spellings(path: Path) -> list[str]:
    """`file:line` and what it spells, for each decision word or accept rule written in PATH."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and node.value in DECISIONS:
            found.append(f"{path.name}:{node.lineno} {node.value!r}")
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            names = {elt.id for elt in node.elts if isinstance(elt, ast.Name)}
            if {"ACCEPTED", "ACCEPTED_TRADEOFF"} <= names:
                found.append(f"{path.name}:{node.lineno} the accept rule")
    return found


def test_the_decisions_are_spelled_once() -> None:
    home = ROOT / "records" / "notes.py"
    spelled = [hit for p in ROOT.rglob("*.py") if p != home for hit in decision_spellings(p)]
    assert spelled == []


def test_the_scan_sees_a_second_spelling(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "GOOD = {'PASS', 'ACCEPTED'}\ndef ok(d):\n    return d in (ACCEPTED, ACCEPTED_TRADEOFF)\n"
    )
    assert decision_spellings(module) == ["m.py:1 'ACCEPTED'", "m.py:3 the accept rule"]


def switches(path: Path, words: Collection[str], *, assigned: bool = False) -> list[str]:
    """`file:line` and the word, for each place PATH tells WORDS apart: a comparison with one
    (`==`, `in`), a `case` on one, a dict keyed by two or more of them (one key alone is, for
    policies, the manifest's `interleaved:` section); with ASSIGNED, also one assigned (for
    policies: a default, or the policy an upgrade gives)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            named = [e for o in operands for e in getattr(o, "elts", [o])]
        elif isinstance(node, ast.MatchValue) or (
            assigned and isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value
        ):
            named = [node.value]
        elif isinstance(node, ast.Dict):
            named = [key for key in node.keys if key is not None]
        else:
            continue
        names = [n.value for n in named if isinstance(n, ast.Constant) and n.value in words]
        if isinstance(node, ast.Dict) and len(names) < 2:
            continue
        found += [f"{path.name}:{node.lineno} {name!r}" for name in names]
    return found


def policy_switches(path: Path) -> list[str]:
    from kgit.records.policies import POLICIES

    return switches(path, POLICIES, assigned=True)


def test_policies_are_told_apart_only_in_their_table() -> None:
    """A policy is its module and its row in kgit/records/policies.py; a switch over the names
    elsewhere is a place a new policy would have to visit."""
    table = ROOT / "records" / "policies.py"
    assert [hit for p in ROOT.rglob("*.py") if p != table for hit in policy_switches(p)] == []


def test_the_scan_sees_a_switch_over_policies(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "def f(m):\n    if m.decision_policy == 'seed' or m.p in ('x', 'interleaved'):\n"
        "        return {'seed': 1, 'interleaved': 2}\n    match m.p:\n"
        "        case 'interleaved':\n            return {'interleaved': {}}\n"
        "    m.decision_policy = 'seed'\n"
    )
    assert sorted(policy_switches(module)) == [
        "m.py:2 'interleaved'",
        "m.py:2 'seed'",
        "m.py:3 'interleaved'",
        "m.py:3 'seed'",
        "m.py:5 'interleaved'",
        "m.py:7 'seed'",
    ]


MODULE_LINES, FUNCTION_LINES = 450, 60  # docs/architecture.md's limits


def test_no_module_and_no_function_over_the_limits() -> None:
    over = []
    for path in ROOT.rglob("*.py"):
        text = path.read_text()
        if text.count("\n") > MODULE_LINES:
            over.append(f"{path.relative_to(ROOT)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > FUNCTION_LINES:
                    over.append(f"{path.relative_to(ROOT)}: {node.name} {lines} lines")
    assert over == []


def metric_switches(path: Path) -> list[str]:
    from kgit.records.metrics import GBPS, METRICS, TFLOPS

    return switches(path, {*METRICS, TFLOPS, GBPS})


def test_metrics_are_told_apart_only_in_their_table() -> None:
    """A metric is its row in kgit/records/metrics.py; a comparison with a metric's name or unit
    elsewhere is a place a new metric would have to visit. The measuring library stands beside
    kgit (harnesses import it, kgit never does) and reads its own rows' columns; the CSV reader
    tells the GEMM schema by its column, not by the metric."""
    table = ROOT / "records" / "metrics.py"
    beside = ROOT / "measure"
    found = [
        hit
        for p in ROOT.rglob("*.py")
        if p != table and beside not in p.parents
        for hit in metric_switches(p)
    ]
    assert [hit for hit in found if not hit.startswith("schema.py:")] == []
    assert [hit.split(" ", 1)[1] for hit in found] == ["'Forward TFLOPS'"]


def test_the_scan_sees_a_switch_over_metrics(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "def f(metric):\n    if 'GB/s' in metric or metric == 'Combined Step TFLOPS':\n"
        "        return 1\n"
    )
    assert metric_switches(module) == ["m.py:2 'GB/s'", "m.py:2 'Combined Step TFLOPS'"]
