"""Driving wrapagent through a real pseudo-terminal, the one way every PTY test does it.

A test gives wrapagent a HOME and XDG folders of its own (`session_env`,
or a whole `DemoWorld`), starts it on a fresh outer PTY the way a user's
terminal does (`spawn_wrapagent`), types like a person (`type_text`, `enter`), and waits
for what it needs: screen text (pexpect's `expect`), a line in the session's
log (`wait_for_log`, `wait_until_armed`) or any condition (`wait_for`).

The two pauses below are not waits for something to happen: they are how a
person types, and the coding-agent CLIs (and the demo agent modelled on
them) behave differently without them, so they are part of what is tested.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pexpect

from demo_sessions import wait_for_log, wait_until_armed
from waiting import wait_for

__all__ = ["ENTER_PAUSE", "KEY_GAP", "WRAPAGENT", "DemoWorld", "enter", "quit_demo", "say", "session_env",
           "spawn_wrapagent", "type_text", "wait_for", "wait_for_log", "wait_until_armed"]

WRAPAGENT = [sys.executable, "-m", "wrapagent"]
OUTER_VARS = ("WRAPAGENT_SESSION_ID", "WRAPAGENT_DEPTH", "WRAPAGENT_SESSIONS_ROOT")
"""Variables an outer wrapagent session sets; a test's wrapagent must not think it runs inside one."""
KEY_GAP = 0.02
"""Seconds between typed keys: a fast typist. Keys sent in one write arrive as one read, which the
CLIs take as a paste."""
ENTER_PAUSE = 0.2
"""Seconds between the last key of a message and its Enter. The CLIs take an Enter that comes within
~150 ms of the keys before it as a pasted newline, not a submit."""
SPAWN_TIMEOUT = 60
"""pexpect's default `expect` deadline, generous: a loaded 2-core machine starts Python in seconds."""


def session_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The test's environment for wrapagent: HOME and XDG folders under `tmp`, no outer session, `extra` on top.

    The folders are `tmp/home`, `tmp/config`, `tmp/state`, `tmp/data`; a test that
    writes configuration creates `tmp/config/wrapagent` itself.
    """
    env = {k: v for k, v in os.environ.items() if k not in OUTER_VARS}
    env.update(HOME=str(tmp / "home"), XDG_CONFIG_HOME=str(tmp / "config"), XDG_STATE_HOME=str(tmp / "state"),
               XDG_DATA_HOME=str(tmp / "data"), TERM="xterm-256color")
    env.update(extra)
    return env


def spawn_wrapagent(*args: str, env: dict[str, str], cwd: Path | str, dimensions: tuple[int, int] = (30, 100),
                    timeout: float = SPAWN_TIMEOUT) -> pexpect.spawn:
    """`wrapagent ARGS` on a fresh outer PTY of `dimensions` (rows, columns).

    pexpect's delays after close/terminate are off: teardown waits for the
    process itself (`close`), not for a fixed time.
    """
    child = pexpect.spawn(WRAPAGENT[0], [*WRAPAGENT[1:], *args], env=env, cwd=str(cwd), dimensions=dimensions,
                          timeout=timeout)
    child.delayafterclose = 0
    child.delayafterterminate = 0
    return child


def type_text(child: pexpect.spawn, text: str, gap: float = KEY_GAP) -> None:
    """Type `text` key by key, as a person does (see KEY_GAP)."""
    for ch in text:
        child.send(ch)
        time.sleep(gap)


def enter(child: pexpect.spawn, pause: float = ENTER_PAUSE) -> None:
    """Submit what was typed: an Enter of its own, after the pause a person leaves (see ENTER_PAUSE)."""
    time.sleep(pause)
    child.send("\r")


def say(child: pexpect.spawn, text: str, n: int) -> None:
    """Type message `n` to the demo agent, submit it, wait until the agent replied to it and prompts again."""
    type_text(child, text)
    enter(child)
    child.expect(f"MOCK-REPLY-{n}")
    child.expect("demo> ")


def quit_demo(child: pexpect.spawn) -> int:
    """Quit the demo agent (`/quit`), wait for wrapagent to end, and return its exit status."""
    child.send("/quit\r")
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


class DemoWorld:
    """A HOME, XDG folders and a project of the test's own (`tmp/home`, `config`, `state`, `project`),
    wrapagent's configuration written into it, and wrapagent run in it: on a PTY (`spawn`) or as a
    command (`wrapagent`). The demo agent logs each message it receives to `demo_log`."""

    def __init__(self, tmp: Path, *, git: bool = False) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        self.config = tmp / "config"
        self.state = tmp / "state"
        self.project = tmp / "project"
        self.demo_log = tmp / "demo.jsonl"
        for folder in (self.home, self.config / "wrapagent", self.state, self.project):
            folder.mkdir(parents=True)
        if git:
            subprocess.run(["git", "init", "-q", str(self.project)], check=True)

    def env(self, **extra: str) -> dict[str, str]:
        return session_env(self.tmp, WRAPAGENT_DEMO_LOG=str(self.demo_log), **extra)

    def hooks(self, text: str) -> None:
        (self.config / "wrapagent" / "hooks.toml").write_text(text)

    def global_config(self, text: str) -> None:
        (self.config / "wrapagent" / "config.toml").write_text(text)

    def spawn(self, *args: str, cwd: Path | None = None, dimensions: tuple[int, int] = (30, 100),
              timeout: float = SPAWN_TIMEOUT, **env: str) -> pexpect.spawn:
        """`wrapagent ARGS` on a fresh PTY, in the project (or `cwd`), `env` added to the world's."""
        return spawn_wrapagent(*args, env=self.env(**env), cwd=cwd or self.project, dimensions=dimensions,
                               timeout=timeout)

    def wrapagent(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        """`wrapagent ARGS` as a command (no terminal, stdin from /dev/null), text output captured."""
        return subprocess.run([*WRAPAGENT, *args], cwd=str(cwd or self.project), env=self.env(), capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)

    def messages(self) -> list[str]:
        """The messages the demo agent received, exactly, in order."""
        if not self.demo_log.exists():
            return []
        return [json.loads(line)["text"] for line in self.demo_log.read_text().splitlines()]

    def record(self) -> dict:
        """The one session's record (AssertionError unless there is exactly one)."""
        records = sorted(self.state.glob("wrapagent/projects/*/*/session.json"))
        assert len(records) == 1, records
        return json.loads(records[0].read_text())
