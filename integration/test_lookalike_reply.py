"""After a reply full of dialog look-alikes, wrapagent's own messages still go, on each real CLI.

The mock model's reply to a message containing `(lookalike)` holds numbered Yes/No choices,
`›`/`❯`/`●` lines, "Do you want to proceed?", a y/n question and key hints. On the screen
they sit in the transcript, above the empty composer: no dialog. Before the screen model the
stop check's continuation was cancelled ("a dialog?") and a `wrapagent send` deferred to a
next stop that never came.

One CLI start per tool: the stop check fails once after the first reply (its continuation
reaches the model verbatim); after the reply to that, a `wrapagent send` is delivered.
"""

from __future__ import annotations

import re

import pytest

from .clienv import SPECS, tool_params
from .test_send import send as wrapagent_send
from .test_send import socket_ready
from .test_session_turns import send

pytestmark = pytest.mark.integration

TIMEOUT = {"codex": 240, "claude": 240, "gemini": 320, "opencode": 420}
FIRST = "(lookalike) which one should I pick"
CONTINUATION = '<prompt-guard name="stop_check">\nthe tests fail: fix them first\n</prompt-guard>'
SENT = "a message from outside"


@pytest.mark.parametrize("tool", tool_params(TIMEOUT))
def test_continuation_and_send_after_a_lookalike_reply(cli_env, tool):
    spec = SPECS[tool]
    fail = cli_env.root / "fail-once"
    fail.touch()
    # Fails once, at a stop after the model was asked for the turn: a stop wrapagent sees before
    # that (a tool stalled by a loaded machine before its turn began) is no stop of the agent's,
    # and the turn then goes on (turns.py); the agent's real stop is the one that gets the check.
    asked = f"grep -q '\"kind\": \"turn\"' {cli_env.mock.log_path}"
    check = (f"cat >/dev/null; if [ -e {fail} ] && {asked}; then rm -f {fail}; "
             "echo 'the tests fail: fix them first'; exit 2; fi")
    cli_env.write_wrapagent_config(hooks_toml=f"[stop_check]\ncommand = '''{check}'''\n\n[send]\nenabled = true\n")
    term = cli_env.spawn(cli_env.interactive_args())
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    term.wait_quiet(spec.settle, timeout=10)
    socket_ready(cli_env, term)
    mock = cli_env.mock
    mark = mock.mark()

    send(term, FIRST)
    texts = mock.wait_for_turns(2, api=spec.api, timeout=spec.reply_timeout + 60, since=mark)
    assert texts == [FIRST, CONTINUATION], mock.summary()
    term.wait_for("MOCK-REPLY-2", timeout=spec.reply_timeout)
    term.wait_quiet(1.0, timeout=30)

    done = wrapagent_send(cli_env, "--wait", SENT)
    assert done.returncode == 0, done.stderr + done.stdout
    texts = mock.wait_for_turns(3, api=spec.api, timeout=spec.reply_timeout + 60, since=mark)
    assert texts[2] == SENT, mock.summary()
    term.wait_for("MOCK-REPLY-3", timeout=spec.reply_timeout)
    term.wait_quiet(1.0, timeout=30)
    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)
