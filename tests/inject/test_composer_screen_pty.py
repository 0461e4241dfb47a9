"""Keys the composer model cannot read, end to end through a PTY with the demo agent.

The demo agent behaves like the real CLIs here: shift+tab switches a mode (the
prompt is redrawn, its text unchanged), ↑ recalls the last message, a `(choose)`
message asks a question answered by one key. wrapagent cannot read what such a
key did from the bytes; the composer is "unknown" until the screen shows it empty
again, and while it is unknown nothing is typed and no reset is inferred.
"""

from __future__ import annotations

import time

import pexpect

from demo_sessions import wait_for_log
from pty_session import quit_demo, type_text
from test_injection_pty import GUARD, GUARD_BLOCK, ready, submit, world  # noqa: F401

SHIFT_TAB = b"\x1b[Z"
UP = b"\x1b[A"
EVERY = '[[prompt_guard]]\nname = "e"\nevery_message = true\ncommand = "echo each time"\n'
EVERY_BLOCK = '<prompt-guard name="e">\neach time\n</prompt-guard>\n'


def key(child: pexpect.spawn, data: bytes, then: str) -> None:
    """A key as its own write, and the demo's redraw that follows it."""
    time.sleep(0.1)
    child.send(data)
    child.expect_exact(then)


def reset(child: pexpect.spawn, world, command: str, conversation: int) -> None:
    type_text(child, command)
    time.sleep(0.2)
    child.send("\r")
    child.expect_exact(f"(new conversation {conversation})")
    child.expect("demo> ")
    wait_for_log(world.state, f"started conversation {conversation}")
    wait_for_log(world.state, f"composer ready again for conversation {conversation}")


def test_a_mode_key_twice_before_the_reset_still_resets(world) -> None:
    world.hooks(GUARD)
    child = world.spawn()
    ready(child, world)
    type_text(child, "first")
    submit(child, 1)
    child.expect("demo> ")
    key(child, SHIFT_TAB, "(mode: plan)")
    key(child, SHIFT_TAB, "(mode: default)")
    reset(child, world, "/clear", 2)
    type_text(child, "after the reset")
    submit(child, 2)
    assert quit_demo(child) == 0
    assert world.messages() == [GUARD_BLOCK + "\nfirst", GUARD_BLOCK + "\nafter the reset"]
    record = world.records()[-1]
    assert [(i["conversation"], i["status"]) for i in record["injections"]] == [(1, "submitted"), (2, "submitted")]


def test_a_mode_key_while_the_agent_works_does_not_hide_the_reset(world) -> None:
    world.hooks(GUARD)
    child = world.spawn(WRAPAGENT_DEMO_THINK_SECS="1.5")
    ready(child, world)
    type_text(child, "(think) first")
    time.sleep(0.2)
    child.send("\r")
    child.expect("thinking")
    child.send(SHIFT_TAB)            # pressed while the spinner runs
    child.expect("end of message 1")
    child.expect_exact("(mode: plan)")
    key(child, SHIFT_TAB, "(mode: default)")
    reset(child, world, "/new", 2)
    type_text(child, "second")
    submit(child, 2)
    assert quit_demo(child) == 0
    assert world.messages() == [GUARD_BLOCK + "\n(think) first", GUARD_BLOCK + "\nsecond"]


def test_a_one_key_answer_then_clear_is_a_reset(world) -> None:
    """`1` answers the demo's question: it is no text of the composer's, so `/clear` after it
    is typed in full on an empty composer (before: wrapagent read `1/clear` and missed it)."""
    world.hooks(GUARD)
    child = world.spawn()
    ready(child, world)
    type_text(child, "(choose) which one")
    time.sleep(0.2)
    child.send("\r")
    child.expect_exact("press 1 or 2")
    time.sleep(0.3)
    child.send("1")
    child.expect("end of message 1")
    child.expect("demo> ")
    reset(child, world, "/clear", 2)
    type_text(child, "fresh")
    submit(child, 2)
    assert quit_demo(child) == 0
    assert world.messages() == [GUARD_BLOCK + "\n(choose) which one", GUARD_BLOCK + "\nfresh"]


def test_history_recall_gets_nothing_typed_into_it(world) -> None:
    """↑ brings the last message back; the next message's blocks (every_message) must not be
    pasted into it: that message goes as recalled, and the one after it gets them."""
    world.hooks(EVERY)
    child = world.spawn()
    ready(child, world)
    type_text(child, "first")
    submit(child, 1)
    child.expect("demo> ")
    wait_for_log(world.state, "first message submitted with the blocks")  # armed for message 2
    key(child, UP, "demo> <prompt-guard")   # the demo recalls the message as it received it
    type_text(child, "again")
    submit(child, 2)
    child.expect("demo> ")
    type_text(child, "third")
    submit(child, 3)
    assert quit_demo(child) == 0
    assert world.messages() == [EVERY_BLOCK + "\nfirst", EVERY_BLOCK + "\nfirstagain", EVERY_BLOCK + "\nthird"]
    record = world.records()[-1]
    # the recalled message was no delivery: message 2's blocks went with the third
    assert [(i["message"], i["status"]) for i in record["injections"]][:2] == [
        (1, "submitted"), (2, "submitted")], record["injections"]
