"""Compaction on the four real CLIs: the message after `/compact` (`/compress` in gemini) gets the
blocks again, verbatim, from guards that ran again knowing it (`{compaction}`); the one after it
none; the record lists the compaction.

The tools summarise the conversation with a request of their own (the mock answers it like any
turn); what matters is the next user message.
"""

from __future__ import annotations

import re
import time

import pytest

from .clienv import tool_params

pytestmark = pytest.mark.integration

TIMEOUT = {"codex": 300, "claude": 300, "gemini": 400, "opencode": 500}
COMMAND = {"codex": "/compact", "claude": "/compact", "gemini": "/compress", "opencode": "/compact"}
HOOKS = '[[prompt_guard]]\nname = "g"\ncommand = "echo compaction={compaction}"\n'


def block(value: str) -> str:
    return f'<prompt-guard name="g">\ncompaction={value}\n</prompt-guard>\n\n'


def send(term, text: str) -> None:
    term.type(text)
    term.wait_for(text[-12:], timeout=20)
    term.enter(after=0.3)


def ours(texts: list[str], wanted: tuple[str, ...]) -> list[str]:
    """The user messages the test typed (the tool's own summary request is left out)."""
    return [t for t in texts if t.endswith(wanted)]


#: The kind of request (mock_server.classify) each tool asks for its summary with: codex,
#: claude and opencode with an ordinary turn request, gemini with a non-streaming
#: `generateContent`, which the mock classifies as `summary`.
SUMMARY_KIND = {"codex": "turn", "claude": "turn", "gemini": "summary", "opencode": "turn"}


def summary_requests(mock, tool: str, api: str, since: int) -> list[dict]:
    """The tool's requests for a summary after `since`."""
    return [r for r in mock.requests if r["seq"] > since and r["api"] == api and r["kind"] == SUMMARY_KIND[tool]]


@pytest.mark.parametrize("tool", tool_params(TIMEOUT))
def test_compact_gives_the_next_message_the_blocks(cli_env, tool):
    cli_env.write_wrapagent_config(hooks_toml=HOOKS)
    spec, mock = cli_env.spec, cli_env.mock
    term = cli_env.spawn()
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    term.wait_quiet(spec.settle, timeout=10)
    messages = ("first message", "after the compaction", "and one more")
    send(term, messages[0])
    mock.wait_for_turns(1, api=spec.api, timeout=spec.reply_timeout)
    term.wait_for("MOCK-REPLY-1", timeout=spec.reply_timeout)
    term.wait_quiet(1.5, timeout=30)
    mark = mock.mark()
    send(term, COMMAND[tool])
    end = time.monotonic() + spec.reply_timeout
    while not summary_requests(mock, tool, spec.api, mark):
        assert time.monotonic() < end, "the tool sent no summary request\n" + mock.summary()
        time.sleep(0.2)
    term.wait_quiet(3.0, timeout=60)
    for n, text in enumerate(messages[1:], 2):
        send(term, text)
        end = time.monotonic() + spec.reply_timeout
        while len(ours(mock.user_texts(api=spec.api), messages[:n])) < n:
            assert time.monotonic() < end, mock.summary()
            time.sleep(0.2)
        term.wait_quiet(3.0, timeout=60)
    texts = ours(mock.user_texts(api=spec.api), messages)
    assert texts == [block("false") + messages[0], block("true") + messages[1], messages[2]], mock.summary()
    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)
    record = cli_env.sessions()[-1]
    assert [(c["conversation"], c["how"]) for c in record["compactions"]] == [(1, COMMAND[tool])]
    assert [(i["message"], i["compaction"], i["status"]) for i in record["injections"]] == [
        (1, False, "submitted"), (2, True, "submitted")]
