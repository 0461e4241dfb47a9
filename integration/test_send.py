"""`wrapagent send` on each real CLI (issue 24), checked at the mock model.

One CLI start, three phases:
(a) while the model still thinks about the first message (the mock holds its text back),
    another process sends a message: it arrives as the next user turn, exactly the text,
    and is typed only after the reply was sent;
(b) two sends while the agent waits: they arrive in order, one per stop;
(c) a send while the user is typing waits: the user's message goes first, as typed, and the
    sent one follows at the next stop.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from datetime import datetime

import pytest

from .clienv import SPECS, send_message, tool_params

pytestmark = pytest.mark.integration

TIMEOUT = {"codex": 300, "claude": 300, "gemini": 400, "opencode": 500}
FIRST = "(think) first message of the session"
SENT = 'CI is green: 12 passed, "0" failed'


def send(cli_env, *args: str) -> subprocess.CompletedProcess:
    """`wrapagent send` from another process, in the project, as the same user."""
    return subprocess.run([sys.executable, "-m", "wrapagent", "send", *args], env=cli_env.env,
                          cwd=str(cli_env.cwd), capture_output=True, text=True, timeout=60)


def socket_ready(cli_env, term, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not list(cli_env.sessions_root().glob("*/send.sock")):
        if time.monotonic() > end:
            raise AssertionError("the session never made its send socket\n" + term.dump("screen"))
        time.sleep(0.1)


def wait_logged(cli_env, text: str, term, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while True:
        logs = list(cli_env.sessions_root().glob("*/session.log"))
        if logs and text in logs[0].read_text(errors="replace"):
            return
        if time.monotonic() > end:
            raise AssertionError(f"{text!r} never logged\n" + term.dump("screen"))
        time.sleep(0.1)


@pytest.mark.parametrize("tool", tool_params(TIMEOUT))
def test_send(cli_env, tool):
    spec = SPECS[cli_env.tool]
    cli_env.write_wrapagent_config(hooks_toml="[send]\nenabled = true\n")
    term = cli_env.spawn(cli_env.interactive_args())
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    term.wait_quiet(spec.settle, timeout=10)
    socket_ready(cli_env, term)
    mock = cli_env.mock
    mark = mock.mark()

    # (a) a send while the model thinks
    send_message(term, FIRST)
    mock.wait_for_turns(1, api=spec.api, timeout=spec.reply_timeout, since=mark)
    done = send(cli_env, SENT)
    assert done.returncode == 0, done.stderr
    assert mock.reply_times(since=mark) == [], "the model had already replied: not a send while it thinks"
    texts = mock.wait_for_turns(2, api=spec.api, timeout=spec.reply_timeout + mock.think_secs + 30, since=mark)
    assert texts == [FIRST, SENT], mock.summary()
    term.wait_for("MOCK-REPLY-2", timeout=spec.reply_timeout)

    # (b) two sends, in order, one per stop
    assert send(cli_env, "first from outside").returncode == 0
    assert send(cli_env, "--guard", "ci", "second from outside").returncode == 0
    texts = mock.wait_for_turns(4, api=spec.api, timeout=spec.reply_timeout + 60, since=mark)
    assert texts[2:] == ["first from outside", '<prompt-guard name="ci">\nsecond from outside\n</prompt-guard>'], \
        mock.summary()
    term.wait_for("MOCK-REPLY-4", timeout=spec.reply_timeout)
    term.wait_quiet(spec.settle, timeout=30)

    # (c) a send while the user types waits for the next stop
    term.type("the user says")
    term.wait_for("the user says", timeout=15)
    assert send(cli_env, "sent while typing").returncode == 0
    wait_logged(cli_env, "send: deferred to the next stop", term)
    send_message(term, " this", tail="says this")
    texts = mock.wait_for_turns(6, api=spec.api, timeout=spec.reply_timeout + 60, since=mark)
    assert texts[4:] == ["the user says this", "sent while typing"], mock.summary()
    term.wait_for("MOCK-REPLY-6", timeout=spec.reply_timeout)
    term.wait_quiet(1.0, timeout=30)             # a quit key during the turn's end interrupts it instead
    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)
    record = cli_env.sessions()[-1]
    sent = record["sent"]
    assert [s["text"] for s in sent] == [SENT, "first from outside",
                                         '<prompt-guard name="ci">\nsecond from outside\n</prompt-guard>',
                                         "sent while typing"]
    assert all(s["delivered_at"] for s in sent)
    assert [s["turn"] for s in sent] == [2, 3, 4, 6]
    first_reply = mock.reply_times(since=mark)[0]
    assert datetime.fromisoformat(sent[0]["delivered_at"]).timestamp() > first_reply, \
        "typed before the first reply was sent"
    assert not list(cli_env.sessions_root().glob("*/send.sock"))
