"""A mode key before the reset must not make wrapagent miss it, on each real CLI.

The key that switches the agent's mode (shift+tab in codex, claude and gemini: permission
or approval modes; Tab in opencode: build/plan) leaves the composer empty, but its bytes
say nothing wrapagent can read. Before the screen model, wrapagent took it for text, the
reset typed after it (`/new`, `/clear`) was not "typed in full on an empty composer", and
the next message reached the model without the blocks, on all four CLIs.

One CLI start per tool:

1. a first message (blocks); after its reply the mode key twice (so the mode comes back);
   the reset; the next message gets fresh blocks, verbatim (opencode's plan agent may add
   its own reminder after the text: only the start is compared);
2. that message is a thinking one: the mode key twice while the agent works; after the
   reply, the reset again; the next message gets fresh blocks.
"""

from __future__ import annotations

import re

import pytest

from .clienv import SPECS, submit_command, tool_params
from .test_session_turns import RESET, RESET_DIALOG, block, counting_guard, send

pytestmark = pytest.mark.integration

MODE_KEY = {"codex": b"\x1b[Z", "claude": b"\x1b[Z", "gemini": b"\x1b[Z", "opencode": b"\t"}
TIMEOUT = {"codex": 240, "claude": 240, "gemini": 320, "opencode": 420}

FIRST = "first message of the session"
SECOND = "(think) first message after the reset"
THIRD = "first message after the second reset"


def mode_key_twice(term, tool: str) -> None:
    for _ in range(2):
        term.key(MODE_KEY[tool])
        term.wait_quiet(0.5, timeout=15)


def reset(term, tool: str) -> None:
    term.wait_quiet(0.5, timeout=15)
    submit_command(term, tool, RESET[tool])
    if tool in RESET_DIALOG:
        term.wait_for(RESET_DIALOG[tool], timeout=15)
        term.wait_quiet(0.5, timeout=10)
        term.enter(after=0.3)
        term.wait_gone(RESET_DIALOG[tool], timeout=15)
    term.wait_quiet(1.0, timeout=30)


@pytest.mark.parametrize("tool", tool_params(TIMEOUT))
def test_mode_key_before_the_reset(cli_env, tool):
    spec = SPECS[tool]
    cli_env.write_wrapagent_config(hooks_toml=counting_guard(cli_env))
    mock = cli_env.mock
    term = cli_env.spawn(cli_env.interactive_args())
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    term.wait_quiet(spec.settle, timeout=10)
    mark = mock.mark()

    # 1. after the first reply: the mode key twice, the reset, a message with fresh blocks
    send(term, FIRST)
    texts = mock.wait_for_turns(1, api=spec.api, timeout=spec.reply_timeout, since=mark)
    assert texts == [block(1) + FIRST], mock.summary()
    term.wait_for("MOCK-REPLY-1", timeout=spec.reply_timeout)
    term.wait_quiet(1.0, timeout=30)
    mode_key_twice(term, tool)
    reset(term, tool)
    send(term, SECOND)

    # 2. the mode key twice while the agent thinks about it, then the reset again
    term.wait_for(re.compile(r"(?i)\besc\b[^\n]{0,12}\b(interrupt|cancel)"), timeout=spec.reply_timeout)
    mode_key_twice(term, tool)
    texts = mock.wait_for_turns(2, api=spec.api, timeout=spec.reply_timeout, since=mark)
    assert texts[1].startswith(block(2) + SECOND), mock.summary()
    assert mock.turn_requests(api=spec.api, since=mark)[1]["turn"] == 1, "the reset did not start a new conversation"
    term.wait_for("MOCK-REPLY-1", timeout=spec.reply_timeout + mock.think_secs)
    term.wait_quiet(1.0, timeout=30)
    reset(term, tool)
    send(term, THIRD)
    texts = mock.wait_for_turns(3, api=spec.api, timeout=spec.reply_timeout, since=mark)
    assert texts[2].startswith(block(3) + THIRD), mock.summary()

    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)
    record = cli_env.sessions()[-1]
    assert [(i["conversation"], i["status"]) for i in record["injections"]] == [
        (1, "submitted"), (2, "submitted"), (3, "submitted")]
