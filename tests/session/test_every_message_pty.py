"""`every_message` guards through a real PTY with the demo agent.

The first message of a conversation gets every block; each later message gets
only the every_message guards' blocks, run afresh for it; a command passes
untouched and the message after it gets them. Asserted on what the demo agent
received, byte for byte, and on the record.
"""

from __future__ import annotations

import json
import time

from wrapagent.commands.sessions_show import render_show

from pty_session import quit_demo, say
from test_turns_pty import World, command, ready, world  # noqa: F401 - fixture

from platform_modes import platform_mode  # noqa: F401 - autouse: Linux and macOS paths

HOOKS = (
    '[[prompt_guard]]\nname = "static"\ncommand = "echo static"\n'
    '[[prompt_guard]]\nname = "clock"\nevery_message = true\n'
    'command = "n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {counter}; '
    'echo run $n turn {{turn}} $WRAPAGENT_TURN; cat"\n'
)


def clock(n: int, turn: int, message: int, conversation: int, cwd: str, session: str) -> str:
    stdin = json.dumps({"project_root": cwd, "session_id": session, "tool": "demo",
                        "is_resume": False, "compaction": False, "cwd": cwd, "message": message,
                        "conversation": conversation})
    return f'<prompt-guard name="clock">\nrun {n} turn {turn} {turn}\n{stdin}\n</prompt-guard>'


STATIC = '<prompt-guard name="static">\nstatic\n</prompt-guard>'


def test_later_messages_get_only_the_every_message_blocks_fresh(world: World) -> None:
    counter = world.tmp / "counter"
    world.hooks(HOOKS.format(counter=counter))
    child = world.spawn()
    ready(child)
    say(child, "first", 1)
    say(child, "second", 2)
    say(child, "third", 3)
    assert quit_demo(child) == 0
    rec = world.record()
    cwd, sid = str(world.project), rec["id"]
    assert world.messages() == [
        f"{STATIC}\n{clock(1, 1, 1, 1, cwd, sid)}\n\nfirst",
        f"{clock(2, 2, 2, 1, cwd, sid)}\n\nsecond",
        f"{clock(3, 3, 3, 1, cwd, sid)}\n\nthird",
    ]
    deliveries = [(i["conversation"], i["message"], i["status"]) for i in rec["injections"]]
    assert deliveries == [(1, 1, "submitted"), (1, 2, "submitted"), (1, 3, "submitted")]
    assert rec["injections"][2]["text"] == f"{clock(3, 3, 3, 1, cwd, sid)}\n\n"
    assert "Injection for message 3 of conversation 1: submitted" in render_show(rec, None)
    assert all(i["first_key_delay_ms"] is not None for i in rec["injections"])
    # static ran once, clock once per message
    assert [h["name"] for h in rec["hooks"] if h["kind"] == "guard"] == ["static", "clock", "clock", "clock"]


def test_a_command_passes_untouched_and_the_next_message_gets_the_blocks(world: World) -> None:
    counter = world.tmp / "counter"
    world.hooks(HOOKS.format(counter=counter))
    child = world.spawn()
    ready(child)
    say(child, "first", 1)
    command(child, "/status", "(command /status ignored by the demo agent)")
    time.sleep(0.1)
    say(child, "second", 2)
    assert quit_demo(child) == 0
    rec = world.record()
    cwd, sid = str(world.project), rec["id"]
    first, second = world.messages()
    assert first.endswith("\n\nfirst") and first.startswith(STATIC)
    # /status is a turn (a submission) but not a message: message 2 is turn 3, run 2
    assert second == f"{clock(2, 3, 2, 1, cwd, sid)}\n\nsecond"
    assert counter.read_text().strip() == "2"


def test_a_reset_starts_over_with_every_block(world: World) -> None:
    counter = world.tmp / "counter"
    world.hooks(HOOKS.format(counter=counter))
    child = world.spawn()
    ready(child)
    say(child, "first", 1)
    say(child, "second", 2)
    command(child, "/clear", "(new conversation 2)")
    time.sleep(0.1)
    say(child, "third", 3)
    say(child, "fourth", 4)
    assert quit_demo(child) == 0
    rec = world.record()
    cwd, sid = str(world.project), rec["id"]
    assert world.messages() == [
        f"{STATIC}\n{clock(1, 1, 1, 1, cwd, sid)}\n\nfirst",
        f"{clock(2, 2, 2, 1, cwd, sid)}\n\nsecond",
        f"{STATIC}\n{clock(3, 3, 1, 2, cwd, sid)}\n\nthird",
        f"{clock(4, 4, 2, 2, cwd, sid)}\n\nfourth",
    ]
    deliveries = [(i["conversation"], i["message"], i["status"]) for i in rec["injections"]]
    assert deliveries == [(1, 1, "submitted"), (1, 2, "submitted"), (2, 1, "submitted"),
                          (2, 2, "submitted")]


def test_without_every_message_later_messages_stay_untouched(world: World) -> None:
    """The default is unchanged: only the first message of a conversation gets blocks."""
    world.hooks('[[prompt_guard]]\nname = "static"\ncommand = "echo static"\n')
    child = world.spawn()
    ready(child)
    say(child, "first", 1)
    say(child, "second", 2)
    assert quit_demo(child) == 0
    assert world.messages() == [f"{STATIC}\n\nfirst", "second"]
    assert len(world.record()["injections"]) == 1


def test_after_a_prompt_on_the_command_line_later_messages_get_the_blocks(world: World) -> None:
    counter = world.tmp / "counter"
    world.hooks(HOOKS.format(counter=counter))
    child = world.spawn("start here")            # the first message, submitted by the tool itself
    child.expect("MOCK-REPLY-1")
    ready(child)
    say(child, "second", 2)
    say(child, "third", 3)
    assert quit_demo(child) == 0
    rec = world.record()
    cwd, sid = str(world.project), rec["id"]
    first, second, third = world.messages()
    assert first.startswith(STATIC) and first.endswith("</prompt-guard>\n\nstart here")
    assert "run 1 turn" in first
    # the command line's prompt is turn 1 and message 1: each typed message gets a fresh run
    assert second == f"{clock(2, 2, 2, 1, cwd, sid)}\n\nsecond"
    assert third == f"{clock(3, 3, 3, 1, cwd, sid)}\n\nthird"
    deliveries = [(i["conversation"], i["message"], i["status"]) for i in rec["injections"]]
    assert deliveries == [(1, 1, "delivered"), (1, 2, "submitted"), (1, 3, "submitted")]  # argv: delivered
    assert rec["injection"]["path"] == "argv"
    assert [t["n"] for t in rec["turns"]] == [1, 2, 3, 4]   # the prompt, two messages, /quit
