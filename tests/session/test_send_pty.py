"""`wrapagent send` to a running demo session through a real PTY (issue 24).

Order, never timing: the demo agent's events file says when each message and
reply happened, and waiting_for_input appends to it too.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

from wrapagent.commands.sessions_show import render_show

from test_turns_pty import World, quit_demo, ready, say, type_text, world  # noqa: F401 - fixture

from platform_modes import platform_mode  # noqa: F401 - autouse: Linux and macOS paths

SEND = "[send]\nenabled = true\n"
WAITING = '[waiting_for_input]\ncommand = "echo fired {{turn}} >> {events}"\nquiet_secs = 2\n'


def env_of(world: World) -> dict:
    env = dict(os.environ)
    for var in ("WRAPAGENT_SESSION_ID", "WRAPAGENT_DEPTH", "WRAPAGENT_SESSIONS_ROOT"):
        env.pop(var, None)
    env.update(HOME=str(world.tmp / "home"), XDG_CONFIG_HOME=str(world.config),
               XDG_STATE_HOME=str(world.state), XDG_DATA_HOME=str(world.tmp / "data"))
    return env


def send(world: World, *args: str, wait: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wrapagent", "send", *args], cwd=str(world.project),
                          env=env_of(world), capture_output=True, text=True, timeout=60)


def send_bg(world: World, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "wrapagent", "send", *args], cwd=str(world.project),
                            env=env_of(world), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def socket_of(world: World):
    end = time.monotonic() + 30
    while True:
        found = list(world.state.glob("wrapagent/projects/*/*/send.sock"))
        if found:
            return found[0]
        assert time.monotonic() < end, "no send.sock"
        time.sleep(0.05)


def test_sends_wait_for_the_reply_and_go_in_order_one_per_stop(world: World) -> None:
    world.hooks(SEND + WAITING.format(events=world.events))
    child = world.spawn()
    ready(child)
    type_text(child, "(think) a slow one")
    time.sleep(0.2)
    child.send("\r")
    child.expect("thinking")
    first = send(world, "CI is green")                # while the agent thinks
    second = send(world, "--guard", "ci", "and deployed")
    assert first.returncode == 0 and "queued" in first.stdout, first.stderr
    assert second.returncode == 0, second.stderr
    child.expect("MOCK-REPLY-3")
    world.wait_event("fired 3")
    assert quit_demo(child) == 0
    assert world.messages() == ["(think) a slow one", "CI is green",
                                '<prompt-guard name="ci">\nand deployed\n</prompt-guard>']
    assert world.event_lines() == ["message 1", "reply 1", "message 2", "reply 2", "message 3",
                                   "reply 3", "fired 3"]
    rec = world.record()
    assert [(s["text"], s["status"], s["turn"]) for s in rec["sent"]] == [
        ("CI is green", "delivered", 2),
        ('<prompt-guard name="ci">\nand deployed\n</prompt-guard>', "delivered", 3)]
    assert [t.get("by") for t in rec["turns"]][:3] == [None, "send", "send"]
    shown = render_show(rec, None)                    # `wrapagent sessions show` lists them
    assert "Sent (wrapagent send): 2" in shown
    assert "  #1  came " in shown and ", delivered " in shown and "as turn 2:\n    CI is green\n" in shown


def test_a_send_while_the_agent_waits_goes_at_once_and_wait_says_delivered(world: World) -> None:
    world.hooks(SEND + WAITING.format(events=world.events))
    child = world.spawn()
    ready(child)
    say(child, "first", 1)
    world.wait_event("fired 1")
    done = send(world, "--wait", "from the hook")
    assert done.returncode == 0 and "delivered" in done.stdout, done.stderr
    child.expect("MOCK-REPLY-2")
    assert quit_demo(child) == 0
    assert world.messages() == ["first", "from the hook"]


def test_the_users_keys_win_a_send_waits_for_the_next_stop(world: World) -> None:
    world.hooks(SEND + WAITING.format(events=world.events))
    child = world.spawn()
    ready(child)
    say(child, "first", 1)
    world.wait_event("fired 1")
    type_text(child, "mine")                           # the user is typing
    assert send(world, "queued one").returncode == 0
    time.sleep(0.2)
    child.send("\r")
    child.expect("MOCK-REPLY-2")                       # the user's message first
    child.expect("MOCK-REPLY-3")                       # then, at the next stop, the send
    assert quit_demo(child) == 0
    assert world.messages() == ["first", "mine", "queued one"]


def test_the_socket_is_the_users_alone_and_goes_with_the_session(world: World) -> None:
    world.hooks(SEND)
    child = world.spawn()
    ready(child)
    sock = socket_of(world)
    mode = os.stat(sock).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
    assert quit_demo(child) == 0
    assert not sock.exists()
    gone = send(world, "hello")
    assert gone.returncode == 1 and "no running wrapagent session" in gone.stderr


def test_no_running_session_and_a_session_without_send_are_refused(world: World) -> None:
    none = send(world, "hello")
    assert none.returncode == 1 and "no running wrapagent session" in none.stderr
    world.hooks(WAITING.format(events=world.events))  # interactive, but [send] not enabled
    child = world.spawn()
    ready(child)
    say(child, "first", 1)
    refused = send(world, "hello")
    assert refused.returncode == 1 and "[send]" in refused.stderr
    assert quit_demo(child) == 0


def test_wait_timeout_and_the_session_ending_while_queued(world: World) -> None:
    world.hooks(SEND)
    child = world.spawn()
    ready(child)
    type_text(child, "typing")                          # no stop will come: the user has the keys
    late = send(world, "--wait", "--timeout", "0.5", "never now")
    assert late.returncode == 1 and "not delivered within 0.5s" in late.stderr
    waiting = send_bg(world, "--wait", "until the end")
    socket_of(world)
    time.sleep(0.5)                                     # let it queue (its outcome, not a duration, is checked)
    child.send("\x03")
    child.expect("cleared")
    assert quit_demo(child) == 0
    out, err = waiting.communicate(timeout=30)
    assert waiting.returncode == 1 and "the session ended" in err, (out, err)
    rec = world.record()
    assert [s["status"] for s in rec["sent"]] == ["not delivered", "not delivered"]


def test_a_session_that_is_not_interactive_is_refused(world: World) -> None:
    world.hooks(SEND)
    proc = subprocess.Popen([sys.executable, "-m", "wrapagent", "sleep", "60"], cwd=str(world.project),
                            env=env_of(world), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        end = time.monotonic() + 30
        while not list(world.state.glob("wrapagent/projects/*/*/session.json")):
            assert time.monotonic() < end, "no record"
            time.sleep(0.05)
        refused = send(world, "hello")
        assert refused.returncode == 1 and "not interactive" in refused.stderr, refused.stderr
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
