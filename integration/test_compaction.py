"""Compaction on the four real CLIs: by hand (`/compact`, gemini `/compress`) and by the tool itself.
The user's next message gets the blocks again, verbatim, from guards that ran again knowing it
(`{compaction}`); the one after it none; the record lists each compaction, how it came.

One session per CLI covers, in order (the checks do not interfere, and a CLI start is the
costly part: opencode's alone is ~9 s of CPU): messages that only quote every tool's notice
(no compaction), a compaction by hand, then an automatic one: users compact more than once.

The mock reports a nearly full context for a turn whose text holds `(full)` (mock_server.py,
`usage_tokens`). What each tool does with that, measured on the pinned releases:

| tool | threshold | when it compacts | what its screen says |
|---|---|---|---|
| claude 2.1.330 | its model's window (claude-opus-5-5) | at the next submission, before sending it | `✢ Compacting conversation… (0s)` while it works, no notice after |
| codex 0.169 | `model_auto_compact_token_limit` (set here) | at the next submission, before sending it | `• Context compacted · 0s` |
| gemini 0.61 | `model.compressionThreshold` (default 0.5 of the model's limit) | at the next submission, before sending it | `ℹ Context compressed from 94% to 0%. Change threshold in /settings.` |
| opencode 1.18.33 | the model's `limit.context` (set here) | right after the turn, then it continues by itself | `──── Compaction ────` |

So the message the user submitted at that moment is already in the tool's hands, without the
blocks; the message after it gets them (`AFTER`).

In the middle of a turn (`test_compaction_in_the_middle_of_a_turn`): the mock answers
`(full-call) (write PATH TEXT)` with a tool call whose usage says the context is nearly full
(`FULL_CALL_MARKER`), then a plain text reply. codex, claude and gemini run the tool, compact
before they send its result back, and go on from the summary; the user's next message gets the
blocks. opencode is left out: its summary request quotes the directive, and the mock answers
that with the tool call again, so its compaction never ends.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from .clienv import composer_shown_empty, send_message, submit_command, tool_params
from .mock_server import FULL_CALL_MARKER, FULL_MARKER
from .test_turn_undo import NO_APPROVAL

pytestmark = pytest.mark.integration

TIMEOUT = {"codex": 300, "claude": 300, "gemini": 400, "opencode": 500}
HOOKS = '[[prompt_guard]]\nname = "g"\ncommand = "echo compaction={compaction}"\n'
MESSAGES = (f"a message that fills the context {FULL_MARKER}", "second message", "third message", "fourth message")
AFTER = {"codex": 2, "claude": 2, "gemini": 2, "opencode": 1}
"""The message (index in MESSAGES) that gets the blocks again: the one after the compaction."""
COMMAND = {"codex": "/compact", "claude": "/compact", "gemini": "/compress", "opencode": "/compact"}
QUOTING = ("Context compacted · 0s, Conversation compacted (compacted)", "and then")
"""Messages quoting every tool's notice, and the mock's reply to `(compacted)` quoting them too."""
BY_HAND = ("after the compaction", "and one more")
#: The kind of request (mock_server.classify) each tool asks for its summary with: codex,
#: claude and opencode with an ordinary turn request, gemini with a non-streaming
#: `generateContent`, which the mock classifies as `summary`.
SUMMARY_KIND = {"codex": "turn", "claude": "turn", "gemini": "summary", "opencode": "turn"}
COMPACTED = {"opencode": "Compaction"}
"""Tools that compact right after the `(full)` turn: the test waits for their notice (`──── Compaction
────`) in what the tool wrote after that turn began (the one of the compaction by hand may still be
on the screen)."""


def block(value: str) -> str:
    return f'<prompt-guard name="g">\ncompaction={value}\n</prompt-guard>\n\n'


def summary_requests(mock, tool: str, api: str, since: int) -> list[dict]:
    """The tool's requests for a summary after `since`."""
    return [r for r in mock.requests if r["seq"] > since and r["api"] == api and r["kind"] == SUMMARY_KIND[tool]]


def ours(texts: list[str], wanted: tuple[str, ...]) -> list[str]:
    """The user messages the test typed (the tool's summary and continue requests left out)."""
    return [t for t in texts if t.endswith(wanted)]


def configure(cli_env, tool: str) -> None:
    """A small compaction threshold where the tool's default is not reached by the mock's usage."""
    if tool == "codex":
        config = cli_env.home / ".codex" / "config.toml"
        config.write_text("model_auto_compact_token_limit = 100000\n" + config.read_text())
    if tool == "opencode":
        path = Path(cli_env.env["XDG_CONFIG_HOME"]) / "opencode" / "opencode.json"
        config = json.loads(path.read_text())
        config["provider"]["mock"]["models"]["mock-model"]["limit"] = {"context": 200000, "output": 8000}
        path.write_text(json.dumps(config, indent=2))


def converse(cli_env, term, messages: tuple[str, ...], done: list[str], wait_for=None) -> None:
    """Send each message after the one before reached the mock and the screen went quiet.

    `done`: the messages sent before, in order (extended here). `wait_for`: a pattern the
    screen must show after the first of `messages` (a tool's own compaction notice)."""
    spec, mock = cli_env.spec, cli_env.mock
    since = term.output_len
    for n, text in enumerate(messages):
        send_message(term, text)
        done.append(text)
        end = time.monotonic() + spec.reply_timeout
        while len(ours(mock.user_texts(api=spec.api), tuple(done))) < len(done):
            assert time.monotonic() < end, mock.summary()
            time.sleep(0.2)
        if n == 0 and wait_for is not None:
            term.wait_for(wait_for, timeout=spec.reply_timeout, raw=True, since=since)
        term.wait_quiet(3.0, timeout=90)


@pytest.mark.parametrize("tool", tool_params(TIMEOUT))
def test_quoted_by_hand_and_automatic_compactions_in_one_session(cli_env, tool):
    """Quoted notices (no blocks follow), `/compact` by hand, then the tool compacting by itself."""
    cli_env.write_wrapagent_config(hooks_toml=HOOKS)
    configure(cli_env, tool)
    spec, mock = cli_env.spec, cli_env.mock
    term = cli_env.spawn()
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    term.wait_quiet(spec.settle, timeout=10)
    sent: list[str] = []

    # 1. a message and a reply quoting every tool's notice: no compaction
    converse(cli_env, term, QUOTING, sent)
    texts = ours(mock.user_texts(api=spec.api), QUOTING)
    assert texts[0] == block("false") + QUOTING[0], mock.summary()
    # (The second message may carry the first one's blocks again when the delivery receipt
    # missed them on a loaded machine: that is no compaction.)
    assert texts[1] in (QUOTING[1], block("false") + QUOTING[1]), mock.summary()
    first_messages = 1 if texts[1] == QUOTING[1] else 2

    # 2. by hand: the tool's summary request, then the next message gets fresh blocks
    mark = mock.mark()
    submit_command(term, tool, COMMAND[tool], after=0.3)
    end = time.monotonic() + spec.reply_timeout
    while not summary_requests(mock, tool, spec.api, mark):
        assert time.monotonic() < end, "the tool sent no summary request\n" + mock.summary()
        time.sleep(0.2)
    term.wait_quiet(3.0, timeout=60)
    term.wait_until(composer_shown_empty(tool), f"{tool}'s composer empty after {COMMAND[tool]}", timeout=60)
    converse(cli_env, term, BY_HAND, sent)

    # 3. by itself: a turn fills the context, the tool compacts, the message after gets the blocks
    converse(cli_env, term, MESSAGES, sent, wait_for=COMPACTED.get(tool))

    texts = ours(mock.user_texts(api=spec.api), tuple(sent))
    after = AFTER[tool]
    automatic = list(MESSAGES)
    automatic[after] = block("true") + MESSAGES[after]
    assert texts[2:] == [block("true") + BY_HAND[0], BY_HAND[1], *automatic], mock.summary()
    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)
    record = cli_env.sessions()[-1]
    assert [(c["conversation"], c["how"]) for c in record["compactions"]] == [(1, COMMAND[tool]), (1, "automatic")]
    by_hand, automatic_at = len(QUOTING) + 1, len(QUOTING) + len(BY_HAND) + after + 1
    assert [(i["message"], i["compaction"], i["status"]) for i in record["injections"]] == [
        *((n, False, "submitted") for n in range(1, first_messages + 1)),
        (by_hand, True, "submitted"), (automatic_at, True, "submitted")]


MID_TURN = {"codex": 300, "claude": 300, "gemini": 400}


@pytest.mark.parametrize("tool", [pytest.param(t, marks=pytest.mark.timeout(s), id=t) for t, s in MID_TURN.items()])
def test_compaction_in_the_middle_of_a_turn(cli_env, tool):
    """The tool compacts between its tool call and its reply: the user's next message gets the
    blocks, the one after none."""
    cli_env.write_wrapagent_config(hooks_toml=HOOKS)
    configure(cli_env, tool)
    spec, mock = cli_env.spec, cli_env.mock
    target = cli_env.cwd / "a.txt"
    messages = ("first message", f"{FULL_CALL_MARKER} (write {target} one) write it", "third message",
                "fourth message")
    term = cli_env.spawn(cli_env.interactive_args(NO_APPROVAL[tool]))
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    term.wait_quiet(spec.settle, timeout=10)
    for n, text in enumerate(messages, 1):
        send_message(term, text)
        end = time.monotonic() + spec.reply_timeout
        while len(ours(mock.user_texts(api=spec.api), messages[:n])) < n:
            assert time.monotonic() < end, mock.summary()
            time.sleep(0.2)
        term.wait_quiet(3.0, timeout=90)
    assert target.read_text() == "one\n"
    texts = ours(mock.user_texts(api=spec.api), messages)
    assert texts == [block("false") + messages[0], messages[1], block("true") + messages[2], messages[3]], \
        mock.summary()
    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)
    record = cli_env.sessions()[-1]
    assert [(c["conversation"], c["how"]) for c in record["compactions"]] == [(1, "automatic")]
