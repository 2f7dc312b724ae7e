"""The tampering scan: what a round's change must not do to the process that measures it."""

from __future__ import annotations

import pytest

from kgit.judge import tampering
from kgit.judge.rule11 import new_findings, scan_text

BASE = "import time\nimport torch\n\n\ndef matmul(a, b):\n    return a @ b\n"


@pytest.mark.parametrize(
    ("added", "pattern", "subject"),
    [
        ("time.perf_counter = lambda: 0.0", tampering.PATCHED_MODULE, "time.perf_counter"),
        (
            "setattr(torch.cuda.Event, 'elapsed_time', lambda s, e: 1.0)",
            tampering.PATCHED_MODULE,
            "torch.cuda.Event",
        ),
        ("vars(time)['perf_counter'] = matmul", tampering.PATCHED_MODULE, "time.__dict__"),
        ("time.__dict__['monotonic'] = matmul", tampering.PATCHED_MODULE, "time.__dict__"),
        ("import sys\nsys.modules['time'] = None", tampering.SYS_MODULES, "sys.modules"),
        ("import builtins\nbuiltins.print = matmul", tampering.SYS_MODULES, "builtins.print"),
        ("from kgit.measure import timing", tampering.IMPORTS_KGIT, "kgit"),
        ("key = eval('i' + 'd')", tampering.DYNAMIC_CODE, "eval"),
        ("exec('x = 1')", tampering.DYNAMIC_CODE, "exec"),
        (
            "import sys\nreport = sys.modules['kgit.measure.report']",
            tampering.SYS_MODULES,
            "sys.modules",
        ),
        ("import sys\nm = sys.modules.get('time')", tampering.SYS_MODULES, "sys.modules"),
        ("import atexit", tampering.AT_EXIT, "atexit"),
        ("import sys\ncaller = sys._getframe(1).f_code.co_name", tampering.STACK, "sys._getframe"),
        ("import inspect", tampering.STACK, "inspect"),
        ("from traceback import extract_stack", tampering.STACK, "traceback"),
        ("def who(frame):\n    return frame.f_back", tampering.STACK, "frame.f_back"),
    ],
)
def test_a_change_that_tampers_is_found_at_its_line(added: str, pattern: str, subject: str) -> None:
    new = BASE + added + "\n"
    found = [f for f in new_findings("kernel.py", BASE, new) if f.pattern == pattern]
    assert len(found) == 1, new_findings("kernel.py", BASE, new)
    finding = found[0]
    assert finding.subject == subject
    assert finding.line == BASE.count("\n") + added.count("\n") + 1
    assert finding.describe().startswith(f"tampering: kernel.py:{finding.line}: {pattern}")


@pytest.mark.parametrize(
    "added",
    [
        "torch.backends.cuda.matmul.allow_tf32 = True",
        "torch.backends.cudnn.benchmark = False",
        "import os\nos.environ['TRITON_INTERPRET'] = '1'",
        "torch.set_float32_matmul_precision('high')",
        "class Op:\n    pass\n\n\nOp.forward = matmul",
        "_real = time.perf_counter\nstart = _real()",
    ],
)
def test_settings_and_ordinary_code_pass(added: str) -> None:
    new = BASE + added + "\n"
    assert [f for f in scan_text("kernel.py", new) if f.pattern in tampering.PATTERNS] == []


def test_what_the_base_already_did_is_not_the_rounds_finding() -> None:
    patched = BASE + "time.perf_counter = matmul\n"
    assert new_findings("kernel.py", patched, patched + "# a comment\n") == []
