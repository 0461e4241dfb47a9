"""`[stop_check]` through a real PTY with the demo agent.

The check and waiting_for_input append to the demo agent's events file, so
the order of "the agent replied", "the check ran", "the continuation arrived"
and "waiting_for_input fired" is asserted as it happened, never a duration.
"""

from __future__ import annotations

import time

from wrapagent.commands.sessions_show import render_show

from pty_session import quit_demo, say, type_text
from test_turns_pty import World, ready, world  # noqa: F401 - fixture

from platform_modes import platform_mode  # noqa: F401 - autouse: Linux and macOS paths

WAITING = '[waiting_for_input]\ncommand = "echo fired {{turn}} >> {events}"\nquiet_secs = 2\n'

# The check logs `check <turn> <continues>` (from {turn} and its stdin JSON), then decides.
LOG_CHECK = """c=$(sed -n 's/.*"continues": \\([0-9]*\\).*/\\1/p'); echo check {{turn}} $c >> {events}; """


def toml_check(events, decide: str, max_continues: int = 3) -> str:
    """A [stop_check] table; the command as a TOML literal string (no escapes to get wrong)."""
    command = LOG_CHECK.format(events=events) + decide
    assert "'''" not in command
    return f"[stop_check]\ncommand = '''{command}'''\nmax_continues = {max_continues}\n"


def block(text: str) -> str:
    return f'<prompt-guard name="stop_check">\n{text}\n</prompt-guard>'


FAIL_ONCE = ("n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {counter}; "
             "if [ $n -eq 1 ]; then echo 'tests fail: fix them'; exit 2; fi")
ALWAYS_FAIL = "echo 'still failing'; exit 2"


def test_a_check_failing_once_sends_one_continuation_then_waits(world: World) -> None:
    counter = world.tmp / "counter"
    world.hooks(WAITING.format(events=world.events)
                + toml_check(world.events, FAIL_ONCE.format(counter=counter)))
    child = world.spawn()
    ready(child)
    say(child, "fix the tests", 1)
    child.expect("MOCK-REPLY-2")                 # the continuation, answered
    world.wait_event("fired 2")
    assert quit_demo(child) == 0
    assert world.messages() == ["fix the tests", block("tests fail: fix them")]
    assert world.event_lines() == ["message 1", "reply 1", "check 1 0", "message 2", "reply 2",
                                   "check 2 1", "fired 2"]
    rec = world.record()
    (cont,) = rec["stop_check"]["continuations"]
    assert cont["turn"] == 2 and cont["after_turn"] == 1 and cont["text"] == block("tests fail: fix them")
    assert [r["exit_code"] for r in rec["stop_check"]["runs"]] == [2, 0]
    assert "still_failing" not in rec["stop_check"]
    assert [t.get("by") for t in rec["turns"]] == [None, "stop_check", None]  # /quit is turn 3
    shown = render_show(rec, None)                # `wrapagent sessions show` lists it
    assert "Stop check: 2 run(s), 1 continuation(s) (max 3 in a row)" in shown
    assert "  continuation as turn 2 (after turn 1) at " in shown
    assert "    tests fail: fix them\n" in shown
    assert "  #2  submitted by stop_check " in shown


def test_an_always_failing_check_continues_max_times_then_waits(world: World) -> None:
    world.hooks(WAITING.format(events=world.events)
                + toml_check(world.events, ALWAYS_FAIL, max_continues=2))
    child = world.spawn()
    ready(child)
    say(child, "fix the tests", 1)
    child.expect("MOCK-REPLY-3")
    world.wait_event("fired 3")
    assert quit_demo(child) == 0
    assert world.messages() == ["fix the tests", block("still failing"), block("still failing")]
    assert world.event_lines() == ["message 1", "reply 1", "check 1 0", "message 2", "reply 2",
                                   "check 2 1", "message 3", "reply 3", "check 3 2", "fired 3"]
    rec = world.record()
    assert len(rec["stop_check"]["continuations"]) == 2
    assert rec["stop_check"]["still_failing"] == {"turn": 3, "after_continues": 2}


def test_the_count_restarts_when_the_user_submits(world: World) -> None:
    world.hooks(WAITING.format(events=world.events)
                + toml_check(world.events, ALWAYS_FAIL, max_continues=1))
    child = world.spawn()
    ready(child)
    say(child, "one", 1)
    child.expect("MOCK-REPLY-2")
    world.wait_event("fired 2")
    say(child, "two", 3)
    child.expect("MOCK-REPLY-4")
    world.wait_event("fired 4")
    assert quit_demo(child) == 0
    assert world.messages() == ["one", block("still failing"), "two", block("still failing")]
    checks = [line for line in world.event_lines() if line.startswith("check")]
    assert checks == ["check 1 0", "check 2 1", "check 3 0", "check 4 1"]


def test_a_key_while_the_check_runs_cancels_the_continuation(world: World) -> None:
    go = world.tmp / "go"
    decide = (f"while [ ! -e {go} ]; do sleep 0.05; done; echo 'go on'; exit 2")
    world.hooks(WAITING.format(events=world.events) + toml_check(world.events, decide))
    child = world.spawn()
    ready(child)
    say(child, "first", 1)
    world.wait_event("check 1 0")                  # the check runs (and waits for `go`)
    child.send("x")                              # the user takes over
    child.expect_exact("x")
    go.touch()
    world.wait_event("fired 1")                  # the agent may stop: a stop like any other
    type_text(child, "yz")
    time.sleep(0.2)
    child.send("\r")
    child.expect("MOCK-REPLY-2")
    assert quit_demo(child) == 0
    assert world.messages() == ["first", "xyz"]   # no continuation, the user's text intact
    rec = world.record()
    assert rec["stop_check"]["continuations"] == []
    (not_sent,) = rec["stop_check"]["not_sent"]
    assert not_sent["status"] == "cancelled" and "typed" in not_sent["reason"]


def test_a_continuation_the_users_command_overtook_lets_the_agent_stop_at_once(world: World) -> None:
    """With `every_message` guards the next message is armed after a stop; a command typed
    while the check runs (not submitted) puts the injector in another state. The continuation
    is cancelled at once, so waiting_for_input fires while the command is still in the
    composer (before: it sat in the queue until the composer was free, and every later stop
    was skipped meanwhile)."""
    go = world.tmp / "go"
    decide = (f"while [ ! -e {go} ]; do sleep 0.05; done; echo 'go on'; exit 2")
    world.hooks(WAITING.format(events=world.events) + toml_check(world.events, decide)
                + '[[prompt_guard]]\nname = "each"\nevery_message = true\ncommand = "echo each"\n')
    child = world.spawn()
    ready(child)
    type_text(child, "first")
    time.sleep(0.2)
    child.send("\r")
    child.expect("MOCK-REPLY-1")
    world.wait_event("check 1 0")                  # the check runs (and waits for `go`)
    type_text(child, "/mo")                        # a command, left in the composer
    child.expect_exact("/mo")
    go.touch()
    world.wait_event("fired 1")                    # at once, the command still unsubmitted
    for _ in range(3):
        child.send("\x7f")
    type_text(child, "second")
    time.sleep(0.2)
    child.send("\r")
    child.expect("MOCK-REPLY-2")
    assert quit_demo(child) == 0
    assert world.messages()[1].endswith("\nsecond")   # the user's message, with its block
    rec = world.record()
    assert rec["stop_check"]["continuations"] == []
    (not_sent,) = rec["stop_check"]["not_sent"]
    assert not_sent["status"] == "cancelled" and "typed" in not_sent["reason"]


def test_text_left_in_the_composer_is_never_submitted(world: World) -> None:
    """Typed before the stop (the echo is the last output): the composer is not empty."""
    world.hooks(WAITING.format(events=world.events) + toml_check(world.events, ALWAYS_FAIL))
    child = world.spawn()
    ready(child)
    type_text(child, "first")
    time.sleep(0.2)
    child.send("\r")
    child.expect("MOCK-REPLY-1")
    child.expect("demo> ")
    type_text(child, "half a tho")               # typed, not submitted
    world.wait_event("fired 1")
    child.send("\r")
    child.expect("MOCK-REPLY-2")
    assert quit_demo(child) == 0
    assert world.messages() == ["first", "half a tho"]
    (not_sent,) = world.record()["stop_check"]["not_sent"]
    assert not_sent["reason"] == "the composer holds your text"


def test_a_check_that_times_out_or_fails_otherwise_lets_the_agent_stop(world: World) -> None:
    world.hooks(WAITING.format(events=world.events) + toml_check(world.events, "echo boom; exit 1"))
    child = world.spawn()
    ready(child)
    say(child, "first", 1)
    world.wait_event("fired 1")
    assert quit_demo(child) == 0
    assert world.messages() == ["first"]
    rec = world.record()
    assert rec["stop_check"]["continuations"] == []
    assert any("stop_check" in w for w in rec["warnings"])


def test_an_untrusted_project_stop_check_is_not_used(world: World) -> None:
    """The global check runs; the project's (always failing) one is not trusted, so never runs."""
    (world.project / ".wrapagent").mkdir()
    (world.project / ".wrapagent" / "hooks.toml").write_text(
        toml_check(world.events, "echo project >> " + str(world.events) + "; " + ALWAYS_FAIL))
    world.hooks(WAITING.format(events=world.events) + toml_check(world.events, "exit 0"))
    child = world.spawn()
    ready(child)
    say(child, "first", 1)
    world.wait_event("fired 1")
    assert quit_demo(child) == 0
    assert world.messages() == ["first"]
    assert world.event_lines() == ["message 1", "reply 1", "check 1 0", "fired 1"]
