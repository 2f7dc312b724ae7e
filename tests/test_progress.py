"""Progress: on a terminal a live line names the step in progress and its elapsed time; elsewhere
(CI, agents, pipes) and under --quiet, plain lines only."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from kgit.progress import CLEAR, Live
from tests.conftest import commit, git, run_kgit


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_live_line_shows_the_step_and_clears_before_other_output() -> None:
    screen = Terminal()
    live = Live(screen)
    live.say("harness: 3 shape(s)")
    live.write(b"[1/3] s64: PASS\n")
    live.close()
    text = screen.getvalue()
    assert text.startswith("kgit: harness: 3 shape(s)\n")
    assert CLEAR + "… harness: 3 shape(s) (0 s)" in text
    # The harness's line lands on a cleared line, and the live line comes back after it.
    after = text.split("[1/3] s64: PASS\n")
    assert after[0].endswith(CLEAR) and after[1].startswith(CLEAR + "… harness")
    assert text.endswith(CLEAR)  # closed: nothing left on the last line


def test_the_live_line_ticks_while_a_step_runs() -> None:
    screen = Terminal()
    live = Live(screen)
    live.say("pair 1 (quad of blocks; 1 of at most 8 now)")
    time.sleep(1.3)
    live.close()
    assert "(1 s)" in screen.getvalue()


def _on_a_terminal(repo: Path, *args: str) -> str:
    """ARGS run by kgit with its standard error (and output) on a pseudo-terminal."""
    main, child = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or "CONFIG" in k}
    env["TERM"] = "xterm"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kgit", *args],
        cwd=repo,
        stdin=subprocess.DEVNULL,
        stdout=child,
        stderr=child,
        env=env,
    )
    os.close(child)
    chunks = []
    while True:
        ready, _, _ = select.select([main], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(main)
    return b"".join(chunks).decode(errors="replace")


def test_a_long_harness_pass_shows_a_live_line_on_a_terminal(kernel_repo: Path) -> None:
    (kernel_repo / "kernel.txt").write_text("speed: 100\npass_sleep: 1.6\n")
    git(kernel_repo, "commit", "-qam", "a slow harness")
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    shown = _on_a_terminal(kernel_repo, "baseline")
    assert CLEAR + "… harness" in shown and " (1 s)" in shown
    # The result comes after the live line is cleared, on a line of its own.
    assert CLEAR + "baseline recorded on" in shown, shown[-600:]


def test_no_live_line_off_a_terminal_or_under_quiet(kernel_repo: Path) -> None:
    (kernel_repo / "kernel.txt").write_text("speed: 100\npass_sleep: 1.2\n")
    git(kernel_repo, "commit", "-qam", "a slow harness")
    assert run_kgit("init", "c1", "-m", "manifest.yaml").code == 0
    piped = run_kgit("baseline")
    assert piped.code == 0 and "\033[K" not in piped.err and "kgit: harness" in piped.err
    assert run_kgit("round", "start", "faster").code == 0
    (kernel_repo / "kernel.txt").write_text("speed: 130\npass_sleep: 1.2\n")
    assert commit(kernel_repo, "faster").returncode == 0
    quiet = _on_a_terminal(kernel_repo, "-q", "round", "validate")
    assert "ACCEPTED" in quiet and "\033[K" not in quiet
