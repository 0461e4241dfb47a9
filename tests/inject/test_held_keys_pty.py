"""Keys held while the blocks go in, end to end through a real PTY with the demo agent.

Asserted by order of events only: the demo agent echoes what it reads and
logs every message it received, byte for byte.

The demo adapter's `settle_max_secs` is raised to 600 s here (wrapagent is
started through a one-line launcher that replaces the adapter): a release
that waits for it instead of for the quiet after the composer redrew can
then never happen within the tests' timeouts, whatever the machine's load.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

from platform_modes import platform_mode  # noqa: F401 - autouse: Linux and macOS paths
from pty_session import quit_demo, session_env, wait_until_armed

GUARD = '[[prompt_guard]]\nname = "g"\ncommand = "echo guard says hi"\n'
GUARD_BLOCK = '<prompt-guard name="g">\nguard says hi\n</prompt-guard>\n'
BLOCK_ECHOED = "</prompt-guard>\r\n\r\n"
"""How the demo agent shows the end of the delivered block and its blank line."""

HUGE_SETTLE_MAX = 600.0
LAUNCHER = ("import sys\n"
            "from wrapagent.inject.adapters import demo\n"
            "from wrapagent.values import replace\n"
            f"demo.ADAPTER = replace(demo.ADAPTER, settle_max_secs={HUGE_SETTLE_MAX})\n"
            "from wrapagent.__main__ import main\n"
            "sys.exit(main())\n")
TIMEOUT = 30  # seconds; far below HUGE_SETTLE_MAX, far above any honest release


class DemoWorld:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.home = tmp_path / "home"
        self.config = tmp_path / "config"
        self.state = tmp_path / "state"
        self.project = tmp_path / "project"
        self.demo_log = tmp_path / "demo.jsonl"
        for d in (self.home, self.config / "wrapagent", self.state, self.project):
            d.mkdir(parents=True)
        (self.config / "wrapagent" / "hooks.toml").write_text(GUARD)
        subprocess.run(["git", "init", "-q", str(self.project)], check=True)

    def env(self) -> dict[str, str]:
        return session_env(self.tmp, WRAPAGENT_DEMO_LOG=str(self.demo_log))

    def spawn(self, **env: str) -> pexpect.spawn:
        """`wrapagent demo` with settle_max_secs at 600 s, ready and armed."""
        child = pexpect.spawn(sys.executable, ["-c", LAUNCHER, "demo"], env={**self.env(), **env},
                              cwd=str(self.project), dimensions=(30, 100), timeout=TIMEOUT)
        child.delayafterclose = 0
        child.delayafterterminate = 0
        child.delaybeforesend = None
        child.expect_exact("demo> ")
        wait_until_armed(self.state)
        return child

    def messages(self) -> list[str]:
        if not self.demo_log.exists():
            return []
        return [json.loads(line)["text"] for line in self.demo_log.read_text().splitlines()]

    def record(self) -> dict:
        (path,) = self.state.glob("wrapagent/projects/*/*/session.json")
        return json.loads(path.read_text())


@pytest.fixture
def demo(tmp_path: Path) -> DemoWorld:
    return DemoWorld(tmp_path)


def test_lone_first_key_is_released_once_the_composer_redrew(demo: DemoWorld) -> None:
    """One key, then nothing: it reaches the tool after the block, with no second key to push it.

    Before the fix the output thread only stored the time of the composer's
    redraw and nobody woke the main thread to re-read the deadline: the key
    waited for settle_max_secs (600 s here) and this expect timed out.
    """
    child = demo.spawn()
    child.send("Q")  # and nothing else until it shows
    child.expect_exact(BLOCK_ECHOED + "Q")
    child.send("\r")
    child.expect_exact("end of message 1")
    assert quit_demo(child) == 0
    assert demo.messages() == [GUARD_BLOCK + "\nQ"]
    assert demo.record()["injection"]["status"] == "submitted"


def test_held_paste_and_the_enter_after_it_reach_the_tool_apart(demo: DemoWorld) -> None:
    """A pasted first message, a pause, Enter, all while the blocks cannot go yet (a guard waits
    for a gate file the test opens only after the Enter): the tool must see paste, then Enter.

    The demo agent reads as gemini 0.61 does here (WRAPAGENT_DEMO_PASTE_ENTER=joins): an Enter
    in the same read as the paste's end is a newline in the paste, and nothing is submitted.
    Before held keys kept their timing, the paste and the Enter went out in one write and
    "end of message 1" never came.
    """
    gate = demo.tmp / "gate"
    (demo.config / "wrapagent" / "hooks.toml").write_text(
        '[[prompt_guard]]\nname = "g"\ntimeout_secs = 120\n'
        f'command = "while [ ! -e {gate} ]; do sleep 0.02; done; echo guard says hi"\n')
    child = demo.spawn(WRAPAGENT_DEMO_PASTE_ENTER="joins")
    child.send("\x1b[200~pasted first message\x1b[201~")
    time.sleep(0.5)  # the user's pause (not a check): the Enter is a read of its own
    child.send("\r")
    gate.touch()  # only now can the blocks go: the paste and the Enter were both held
    child.expect_exact("end of message 1")
    assert quit_demo(child) == 0
    assert demo.messages() == [GUARD_BLOCK + "\npasted first message"]
    assert demo.record()["injection"]["status"] == "submitted"
