"""Whole sessions through a real PTY with the demo agent: resets re-inject, waiting_for_input fires.

Order, never timing, is asserted: the demo agent appends what it did (message,
reply, reset) to an events file and the waiting_for_input hook appends to the
same file, so "the hook fired before the reply" shows up as a line out of order.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pexpect
import pytest

from platform_modes import platform_mode  # noqa: F401 - autouse: Linux and macOS paths
from pty_session import DemoWorld, quit_demo, say, type_text

GUARD_COUNTER = (
    '[[prompt_guard]]\nname = "g"\n'
    'command = "n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {counter}; echo guard run $n"\n'
)
WAITING = '[waiting_for_input]\ncommand = "echo fired {{turn}} $WRAPAGENT_TURN >> {events}"\nquiet_secs = 2\n'


def block(n: int) -> str:
    return f'<prompt-guard name="g">\nguard run {n}\n</prompt-guard>\n\n'


class World(DemoWorld):
    """A world of its own with a git project; the demo agent also appends what it did to `events`."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp, git=True)
        self.events = tmp / "events.log"

    def spawn(self, *args: str) -> pexpect.spawn:  # type: ignore[override]
        return super().spawn("demo", *args, timeout=30, WRAPAGENT_DEMO_EVENTS=str(self.events),
                             WRAPAGENT_DEMO_THINK_SECS="3")

    def event_lines(self) -> list[str]:
        """`message 1`, `reply 1`, `reset /clear`, `fired 1 1` in the order they happened."""
        if not self.events.exists():
            return []
        out = []
        for line in self.events.read_text().splitlines():
            if line.startswith("{"):
                ev = json.loads(line)
                out.append(f"{ev['event']} {ev.get('n', ev.get('command'))}")
            else:
                out.append(line.strip())
        return out

    def wait_event(self, line: str, count: int = 1, timeout: float = 60.0) -> None:
        """Wait (generously) until `line` was appended `count` times."""
        end = time.monotonic() + timeout
        while self.event_lines().count(line) < count:
            assert time.monotonic() < end, f"{line!r} x{count} never came: {self.event_lines()}"
            time.sleep(0.05)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def ready(child: pexpect.spawn) -> None:
    child.expect("demo> ")
    time.sleep(0.15)  # the injector arms once output has been quiet


def command(child: pexpect.spawn, text: str, shows: str) -> None:
    type_text(child, text)
    time.sleep(0.1)
    child.send("\r")
    child.expect_exact(shows)
    child.expect("demo> ")


def test_reset_reinjects_fresh_blocks_once(world: World) -> None:
    counter = world.tmp / "counter"
    world.hooks(GUARD_COUNTER.format(counter=counter))
    child = world.spawn()
    ready(child)
    say(child, "first", 1)
    say(child, "second", 2)
    command(child, "/clear", "(new conversation 2)")
    time.sleep(0.1)
    say(child, "third", 3)
    say(child, "fourth", 4)
    assert quit_demo(child) == 0
    assert world.messages() == [block(1) + "first", "second", block(2) + "third", "fourth"]
    rec = world.record()
    assert rec["injection"]["status"] == "submitted"      # the first conversation, as before
    injections = rec["injections"]
    assert [(i["conversation"], i["status"]) for i in injections] == [(1, "submitted"), (2, "submitted")]
    assert injections[1]["text"] == block(2)
    assert [h["name"] for h in rec["hooks"] if h["kind"] == "guard"] == ["g", "g"]  # guards ran again


def test_new_conversation_is_not_a_resume(world: World) -> None:
    """`demo --resume` resumes: the first conversation's guards see is_resume, the reset's do not."""
    world.hooks('[[prompt_guard]]\nname = "ctx"\ncommand = "cat"\n')   # echoes the JSON it reads
    child = world.spawn("--resume")
    ready(child)
    say(child, "first", 1)
    command(child, "/new", "(new conversation 2)")
    time.sleep(0.1)
    say(child, "second", 2)
    assert quit_demo(child) == 0
    first, second = world.messages()
    assert '"is_resume": true' in first and '"is_resume": false' in second
    assert world.record()["is_resume"] is True


@pytest.mark.parametrize("erase", ["\x03", "\x7f" * 6])
def test_reset_typed_but_not_submitted_does_not_rearm(world: World, erase: str) -> None:
    counter = world.tmp / "counter"
    world.hooks(GUARD_COUNTER.format(counter=counter))
    child = world.spawn()
    ready(child)
    say(child, "first", 1)
    type_text(child, "/clear")
    child.send(erase)
    time.sleep(0.2)
    say(child, "second", 2)
    assert quit_demo(child) == 0
    assert world.messages() == [block(1) + "first", "second"]
    assert len(world.record()["injections"]) == 1


def test_reset_before_the_first_message_changes_nothing(world: World) -> None:
    counter = world.tmp / "counter"
    world.hooks(GUARD_COUNTER.format(counter=counter))
    child = world.spawn()
    ready(child)
    command(child, "/clear", "(new conversation 2)")
    time.sleep(0.1)
    say(child, "first", 1)
    say(child, "second", 2)
    assert quit_demo(child) == 0
    assert world.messages() == [block(1) + "first", "second"]
    assert counter.read_text().strip() == "1"


def test_waiting_for_input_fires_once_per_turn_after_the_reply(world: World) -> None:
    world.hooks(WAITING.format(events=world.events))
    child = world.spawn()
    ready(child)
    say(child, "(think) a slow one", 1)     # 3 s of spinner, gaps of 0.1 s, then the reply
    world.wait_event("fired 1 1")
    say(child, "a quick one", 2)
    world.wait_event("fired 2 2")
    assert quit_demo(child) == 0
    assert world.event_lines() == ["message 1", "reply 1", "fired 1 1",
                                   "message 2", "reply 2", "fired 2 2"]
    rec = world.record()
    assert [t["n"] for t in rec["turns"]] == [1, 2, 3]  # `/quit` is the third submission
    assert all(t["quiet_at"] > t["at"] for t in rec["turns"][:2])
    assert rec["turns"][2]["quiet_at"] is None           # the tool exited instead of waiting
    (entry,) = [h for h in rec["hooks"] if h["name"] == "waiting_for_input"]
    assert entry["runs"] == 2 and entry["turn"] == 2 and entry["failed"] == 0
    assert rec["injections"] == []                       # no guards configured: nothing injected


def test_permission_prompt_is_a_wait_and_the_answer_resumes(world: World) -> None:
    world.hooks(WAITING.format(events=world.events))
    child = world.spawn()
    ready(child)
    type_text(child, "(ask) run the tests")
    time.sleep(0.2)
    child.send("\r")
    child.expect("press Enter to allow")
    world.wait_event("fired 1 1")            # the prompt waits for the user: that is a wait
    child.send("\r")                          # allow: the agent works again, then replies
    child.expect("MOCK-REPLY-1")
    world.wait_event("fired 1 1", count=2)   # same turn, a new wait
    assert quit_demo(child) == 0
    assert world.event_lines() == ["fired 1 1", "message 1", "reply 1", "fired 1 1"]


def _group_alive(pgid: int) -> bool:
    from wrapagent import portable

    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return portable.group_alive(pgid)


def test_a_waiting_hook_still_running_when_the_tool_quits_is_ended(world: World) -> None:
    """A waiting_for_input hook of 300 s does not hold the exit: its group is ended, the record finished."""
    pidfile = world.tmp / "hook.pid"
    world.hooks('[waiting_for_input]\ncommand = "echo $$ > %s; exec sleep 300"\nquiet_secs = 1\n'
                'timeout_secs = 600\n' % pidfile)
    child = world.spawn()
    ready(child)
    say(child, "a quick one", 1)
    end = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < end, "the waiting_for_input hook never started"
        time.sleep(0.05)
    pgid = int(pidfile.read_text())
    assert _group_alive(pgid)
    try:
        assert quit_demo(child) == 0     # pexpect's 30 s timeout: far below the hook's 300 s
        assert not _group_alive(pgid)
        rec = world.record()
        assert rec["state"] == "finished" and rec["exit_code"] == 0
        (entry,) = [h for h in rec["hooks"] if h["name"] == "waiting_for_input"]
        assert entry["error"] == "ended: the tool exited" and entry["failed"] == 0
        log = "".join(p.read_text() for p in world.state.glob("wrapagent/projects/*/*/session.log"))
        assert "still running when the tool exited, killed" in log and "waiting_for_input" in log
    finally:
        try:
            os.killpg(pgid, 9)
        except ProcessLookupError:
            pass


REASONS = '[waiting_for_input]\ncommand = "echo fired {{turn}} {{reason}} >> {events}"\nquiet_secs = 2\n'


def wait_log(world: World, text: str, timeout: float = 60.0) -> None:
    """Wait (generously) until the session log says `text`."""
    end = time.monotonic() + timeout
    while True:
        logs = list(world.state.glob("wrapagent/projects/*/*/session.log"))
        if logs and text in logs[0].read_text(errors="replace"):
            return
        assert time.monotonic() < end, f"{text!r} never in the session log"
        time.sleep(0.05)


def test_a_dialog_fires_at_once_with_reason_dialog_and_once(world: World) -> None:
    world.hooks(REASONS.format(events=world.events))
    child = world.spawn()
    ready(child)
    type_text(child, "(ask) run the tests")
    time.sleep(0.2)
    child.send("\r")
    child.expect("press Enter to allow")
    world.wait_event("fired 1 dialog")
    # the quiet wait that follows is the same wait: no second run for it
    wait_log(world, "waiting_for_input already fired for the dialog")
    child.send("\r")                          # allow: the agent works again, then replies
    child.expect("MOCK-REPLY-1")
    world.wait_event("fired 1 idle")
    assert quit_demo(child) == 0
    assert world.event_lines() == ["fired 1 dialog", "message 1", "reply 1", "fired 1 idle"]
    (entry,) = [h for h in world.record()["hooks"] if h["name"] == "waiting_for_input"]
    assert entry["runs"] == 2 and entry["reasons"] == {"dialog": 1, "idle": 1}
