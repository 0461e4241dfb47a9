"""`wrapagent send` through a real PTY with the demo agent.

The demo agent logs each message it received (exactly the text) and appends
`message n` / `reply n` to an events file; a waiting_for_input hook appends
`fired n` to the same file, so "the send arrived after the reply, as the
next message" is asserted as an order, never as a duration.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pexpect

from wrapagent.commands.sessions_show import render_show

from pty_session import quit_demo, say, type_text
from test_turns_pty import World, ready, world  # noqa: F401 - fixture

from platform_modes import platform_mode  # noqa: F401 - autouse: Linux and macOS paths

SEND = "[send]\nenabled = true\n"
WAITING = '[waiting_for_input]\ncommand = "echo fired {{turn}} >> {events}"\nquiet_secs = 2\n'


def send_env(world: World) -> dict[str, str]:
    env = dict(os.environ)
    for var in ("WRAPAGENT_SESSION_ID", "WRAPAGENT_DEPTH", "WRAPAGENT_SESSIONS_ROOT"):
        env.pop(var, None)
    env.update(HOME=str(world.tmp / "home"), XDG_CONFIG_HOME=str(world.config),
               XDG_STATE_HOME=str(world.state), XDG_DATA_HOME=str(world.tmp / "data"))
    return env


def send(world: World, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wrapagent", "send", *args], env=send_env(world),
                          cwd=str(world.project), input=stdin, capture_output=True, text=True,
                          timeout=60)


def send_bg(world: World, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "wrapagent", "send", *args], env=send_env(world),
                            cwd=str(world.project), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def session_dir(world: World) -> Path:
    (path,) = sorted(world.state.glob("wrapagent/projects/*/*/session.json"))
    return path.parent


def socket_of(world: World, timeout: float = 30.0) -> Path:
    """The session's socket, once it exists (it is made in a thread beside the tool's start)."""
    end = time.monotonic() + timeout
    while True:
        found = list(world.state.glob("wrapagent/projects/*/*/send.sock"))
        if found:
            return found[0]
        assert time.monotonic() < end, "the session never made its send socket"
        time.sleep(0.05)


def wait_log(world: World, text: str, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    log = session_dir(world) / "session.log"
    while not (log.exists() and text in log.read_text()):
        assert time.monotonic() < end, f"{text!r} never logged"
        time.sleep(0.05)


def agent_events(world: World) -> list[str]:
    """The agent's own events (waiting_for_input runs in a thread: its lines may come in between)."""
    return [line for line in world.event_lines() if not line.startswith("fired")]


def submit(child: pexpect.spawn, text: str) -> None:
    """Type a message and submit it; does not wait for the reply."""
    type_text(child, text)
    time.sleep(0.2)
    child.send("\r")


def test_a_send_while_the_agent_thinks_is_the_next_message_after_the_reply(world: World) -> None:
    world.hooks(SEND + WAITING.format(events=world.events))
    child = world.spawn()
    ready(child)
    sock = socket_of(world)
    assert stat.S_ISSOCK(sock.stat().st_mode)
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    submit(child, "first")
    world.wait_event("message 1")                 # the agent thinks now
    done = send(world, "CI is green: 12 passed, \"0\" failed")
    assert done.returncode == 0, done.stderr
    assert "queued for session" in done.stdout
    child.expect("MOCK-REPLY-2")
    world.wait_event("fired 2")
    assert quit_demo(child) == 0
    assert world.messages() == ["first", 'CI is green: 12 passed, "0" failed']
    assert agent_events(world)[:4] == ["message 1", "reply 1", "message 2", "reply 2"]
    assert not sock.exists()                      # removed at the session's end
    assert not list(sock.parent.glob(".send-*"))
    rec = world.record()
    (sent,) = rec["sent"]
    assert sent["text"] == 'CI is green: 12 passed, "0" failed'
    assert sent["status"] == "delivered" and sent["delivered_at"] and sent["turn"] == 2
    assert [t.get("by") for t in rec["turns"]][:2] == [None, "send"]
    shown = render_show(rec, None)                # `wrapagent sessions show` lists it
    assert "Sent (wrapagent send): 1" in shown
    assert " as turn 2:\n" in shown
    assert '    CI is green: 12 passed, "0" failed\n' in shown


def test_two_sends_arrive_in_order_one_per_stop(world: World) -> None:
    world.hooks(SEND + WAITING.format(events=world.events))
    child = world.spawn()
    ready(child)
    socket_of(world)
    submit(child, "first")
    world.wait_event("message 1")
    assert send(world, "one").returncode == 0
    assert send(world, "--guard", "ci", stdin="two\n").returncode == 0
    child.expect("MOCK-REPLY-3")
    world.wait_event("fired 3")
    assert quit_demo(child) == 0
    two = '<prompt-guard name="ci">\ntwo\n</prompt-guard>'
    assert world.messages() == ["first", "one", two]
    assert agent_events(world)[:6] == ["message 1", "reply 1", "message 2", "reply 2",
                                       "message 3", "reply 3"]
    assert [s["turn"] for s in world.record()["sent"]] == [2, 3]


def test_a_key_typed_while_a_send_is_pending_defers_it_to_the_next_stop(world: World) -> None:
    world.hooks(SEND + WAITING.format(events=world.events))
    child = world.spawn()
    ready(child)
    socket_of(world)
    submit(child, "first")
    child.expect("MOCK-REPLY-1")
    world.wait_event("fired 1")                   # the agent waits
    type_text(child, "ab")                        # the user starts a message
    child.expect_exact("ab")
    done = send_bg(world, "--wait", "later")      # queued while the user types
    wait_log(world, "send: deferred to the next stop")
    type_text(child, "c")
    time.sleep(0.2)
    child.send("\r")
    out, err = done.communicate(timeout=60)      # delivered after the user's turn
    assert done.returncode == 0, err
    assert "delivered to session" in out
    child.expect("MOCK-REPLY-3")
    assert quit_demo(child) == 0
    assert world.messages() == ["first", "abc", "later"]
    (sent,) = world.record()["sent"]
    assert sent["status"] == "delivered" and sent["turn"] == 3


def test_no_running_session_is_refused(world: World) -> None:
    done = send(world, "hello")
    assert done.returncode == 1
    assert "no running wrapagent session (top-level) in" in done.stderr
    assert send(world, "--session", "last", "hello").returncode == 1
    empty = send(world, stdin="\n")
    assert empty.returncode == 1 and "empty message" in empty.stderr


def test_the_session_ending_while_a_send_is_queued_says_so(world: World) -> None:
    world.hooks(SEND)  # and no guards: the demo's starter guards stay off
    child = world.spawn("--think-secs", "4")
    ready(child)
    socket_of(world)
    submit(child, "first")
    world.wait_event("message 1")
    done = send_bg(world, "--wait", "too late")
    wait_log(world, "send: message 1 queued")
    child.send("/quit\r")                          # read right after the reply: before any stop
    child.expect(pexpect.EOF)
    child.close()
    out, err = done.communicate(timeout=60)
    assert done.returncode == 3, (out, err)
    assert "not delivered: the session ended" in err
    assert world.messages() == ["first"]
    (sent,) = world.record()["sent"]
    assert sent["status"] == "not delivered" and sent["reason"] == "the session ended"
    assert "not delivered: the session ended" in render_show(world.record(), None)


def test_wait_timeout_leaves_the_message_queued(world: World) -> None:
    world.hooks(SEND)  # and no guards: the demo's starter guards stay off
    child = world.spawn("--think-secs", "8")
    ready(child)
    socket_of(world)
    submit(child, "first")
    world.wait_event("message 1")
    done = send(world, "--wait", "--timeout", "0.5", "after the timeout")
    assert done.returncode == 4, done.stderr
    assert "timeout" in done.stderr and "stays queued" in done.stderr
    child.expect("MOCK-REPLY-2")                  # still delivered at the stop
    assert quit_demo(child) == 0
    assert world.messages() == ["first", "after the timeout"]


def test_a_waiting_for_input_hook_sends_to_its_own_session(world: World) -> None:
    """The README's example: the hook (here: at the first stop only) wakes the agent."""
    command = (f'if [ {{turn}} = 1 ]; then {sys.executable} -m wrapagent send "CI is green"; fi; '
               f"echo fired {{turn}} >> {world.events}")
    world.hooks(SEND + f"[waiting_for_input]\ncommand = '''{command}'''\nquiet_secs = 2\n")
    child = world.spawn()
    ready(child)
    socket_of(world)
    submit(child, "watch CI")
    child.expect("MOCK-REPLY-2")
    world.wait_event("fired 2")
    assert quit_demo(child) == 0
    assert world.messages() == ["watch CI", "CI is green"]
    assert agent_events(world)[:4] == ["message 1", "reply 1", "message 2", "reply 2"]


def test_a_send_before_the_first_message_waits_for_the_first_stop(world: World) -> None:
    """The first message is the user's, with the blocks; the sent one follows it."""
    world.hooks(SEND + '[[prompt_guard]]\nname = "g"\ncommand = "echo guard says hi"\n')
    child = world.spawn()
    ready(child)
    socket_of(world)
    assert send(world, "from outside").returncode == 0
    wait_log(world, "send: message 1 queued")
    submit(child, "mine")
    child.expect("MOCK-REPLY-2")
    assert quit_demo(child) == 0
    assert world.messages() == ['<prompt-guard name="g">\nguard says hi\n</prompt-guard>\n\nmine',
                                "from outside"]


def test_with_a_stop_check_the_send_waits_until_the_check_lets_the_agent_stop(world: World) -> None:
    from test_stop_check_pty import FAIL_ONCE, block, toml_check

    counter = world.tmp / "counter"
    world.hooks(SEND + WAITING.format(events=world.events)
                + toml_check(world.events, FAIL_ONCE.format(counter=counter)))
    child = world.spawn()
    ready(child)
    socket_of(world)
    submit(child, "fix the tests")
    world.wait_event("message 1")
    assert send(world, "CI is green").returncode == 0
    child.expect("MOCK-REPLY-3")
    world.wait_event("fired 3")
    assert quit_demo(child) == 0
    assert world.messages() == ["fix the tests", block("tests fail: fix them"), "CI is green"]
    rec = world.record()
    assert [t.get("by") for t in rec["turns"]][:3] == [None, "stop_check", "send"]


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


def test_a_session_without_send_enabled_is_refused_and_has_no_socket(world: World) -> None:
    world.hooks(WAITING.format(events=world.events))  # interactive, but [send] not enabled
    child = world.spawn()
    ready(child)
    say(child, "first", 1)
    refused = send(world, "hello")
    assert refused.returncode == 1 and "[send]" in refused.stderr
    assert not list(world.state.glob("wrapagent/projects/*/*/send.sock"))
    assert quit_demo(child) == 0


def test_a_session_that_is_not_interactive_is_refused(world: World) -> None:
    world.hooks(SEND)
    proc = subprocess.Popen([sys.executable, "-m", "wrapagent", "sleep", "60"], cwd=str(world.project),
                            env=send_env(world), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
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


def log_lines(world: World) -> list[str]:
    return (session_dir(world) / "session.log").read_text(errors="replace").splitlines()


def test_a_send_after_an_answered_prompt_waits_for_the_resumed_turns_stop(world: World) -> None:
    """The user allows the agent's tool with Enter: it works again in the same turn, so a send
    that comes now is typed only after that turn's stop, never into the working agent."""
    world.hooks(SEND + WAITING.format(events=world.events))
    child = world.spawn("--think-secs", "4")
    ready(child)
    socket_of(world)
    submit(child, "(ask) run the tests")
    child.expect("press Enter to allow")
    wait_log(world, "turns: turn 1: the agent waits")   # stopped at its permission prompt
    child.send("\r")                              # allowed: it thinks, then replies
    child.expect("thinking")
    done = send(world, "from outside")
    assert done.returncode == 0, done.stderr
    child.expect("MOCK-REPLY-2")
    assert quit_demo(child) == 0
    assert world.messages() == ["(ask) run the tests", "from outside"]
    assert agent_events(world)[:4] == ["message 1", "reply 1", "message 2", "reply 2"]
    lines = log_lines(world)
    waits = [i for i, line in enumerate(lines) if "turns: turn 1: the agent waits" in line]
    (submitted,) = [i for i, line in enumerate(lines) if "send: message submitted" in line]
    assert len(waits) == 2 and waits[1] < submitted, "\n".join(lines)
    assert not any("outgoing:" in line for line in lines[:waits[1]]), "\n".join(lines)
    (sent,) = world.record()["sent"]
    assert sent["status"] == "delivered" and sent["turn"] == 2
