"""A message of wrapagent's own that is due while its screen emulator lags behind the tool's output.

Before typing a `wrapagent send` (or a stop check's continuation) into the
tool, wrapagent reads the tool's screen from a terminal emulator that runs in
a thread of its own (`followed_screen.FollowedScreen`): the empty composer must be
there. After a burst of output (a long reply, a large paste's echo, a loaded
machine) that emulator runs seconds behind the output, and the screen cannot
be read when the delivery is due. Such a delivery is tried again until the
screen has caught up and shows the composer; it must never be cancelled as
"a dialog?" and left behind with the agent idle (no later stop comes to try
it again: `send --wait` then never returns, or says not delivered).

The burst is the demo agent's `(long N)` reply. The emulator costs about 2 µs
of CPU per byte of output (pyte); 100,000 short lines (1.3 MB, under the
4 MB after which the emulator starts over) keep it busy for ~2.5 s of CPU
after the output ended, several times the 0.5 s quiet stop plus the 0.5 s the
proxy waits for the screen to catch up; on a loaded machine far longer.
Whether it lagged is read from the session's log, never from a duration.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pexpect
import pytest

from pty_session import quit_demo, type_text
from test_send_channel_pty import SEND, log_lines, send_env, socket_of
from test_turns_pty import World, ready, world  # noqa: F401 - fixture

from platform_modes import platform_mode  # noqa: F401 - autouse: Linux and macOS paths

LINES = 100_000
"""Lines of the burst (see the module docstring)."""
QUIET = '[waiting_for_input]\ncommand = "echo fired {{turn}} >> {events}"\nquiet_secs = 0.5\n'
"""The agent waits once its output was quiet 0.5 s: a stop comes while the emulator still lags."""
DEADLINE = 600.0
"""Generous: on a loaded 2-core machine the emulator needs minutes for the burst."""
LAGGED = "outgoing: the empty composer is not on the screen yet; trying again"


def sent_or_dropped(child: pexpect.spawn, world: World) -> tuple[list[str], bool]:
    """The session's log once the send was submitted or given up (`outgoing: not sent`), and
    whether its reply showed meanwhile; the tool's output is read all along."""
    end = time.monotonic() + DEADLINE
    replied = False
    while True:
        lines = log_lines(world)
        if any("send: message submitted" in line or "outgoing: not sent" in line for line in lines):
            return lines, replied
        assert time.monotonic() < end, "the send was neither submitted nor given up:\n" + "\n".join(lines)
        if not replied:
            try:
                child.expect_exact("MOCK-REPLY-2", timeout=0.5)
                replied = True
            except pexpect.TIMEOUT:
                pass
        else:
            time.sleep(0.05)


@pytest.mark.timeout(3 * DEADLINE)
def test_a_send_due_while_the_screen_lags_goes_once_it_caught_up(world: World) -> None:
    world.hooks(SEND + QUIET.format(events=world.events))
    child = world.spawn()
    child.timeout = DEADLINE
    ready(child)
    socket_of(world)
    message = f"(long {LINES}) print the test log"
    type_text(child, message)
    time.sleep(0.2)
    child.send("\r")
    # The test reads the burst as the user's terminal does: a PTY nobody reads blocks the tool.
    child.expect_exact(f"output line 1 of {LINES}")    # submitted: the agent prints its burst
    done = subprocess.Popen([sys.executable, "-m", "wrapagent", "send", "--wait", "--timeout", str(DEADLINE),
                             "after the long reply"], env=send_env(world), cwd=str(world.project),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        child.expect_exact("MOCK-REPLY-1", searchwindowsize=64)
        lines, replied = sent_or_dropped(child, world)
        assert not any("outgoing: not sent" in line for line in lines), "\n".join(lines)
        if not replied:
            child.expect_exact("MOCK-REPLY-2")
        out, err = done.communicate(timeout=DEADLINE)
    finally:
        if done.poll() is None:  # (the send was dropped: its --wait would wait for nothing)
            done.kill()
            done.communicate()
    assert quit_demo(child) == 0
    lines = log_lines(world)
    assert done.returncode == 0 and "delivered to session" in out, (out, err, "\n".join(lines))
    assert world.messages() == [message, "after the long reply"]
    lagged = [i for i, line in enumerate(lines) if LAGGED in line]
    (submitted,) = [i for i, line in enumerate(lines) if "send: message submitted" in line]
    assert lagged and lagged[0] < submitted, "the screen never lagged at the delivery:\n" + "\n".join(lines)
    (sent,) = world.record()["sent"]
    assert sent["status"] == "delivered" and sent["turn"] == 2
