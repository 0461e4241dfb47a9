"""Automatic compaction on the real CLIs: the tool compacts by itself, and the user's next message
gets the blocks again, verbatim, from guards that ran again knowing it (`{compaction}`); the one
after it none; the record lists the compaction as `automatic`.

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

from .clienv import tool_params
from .mock_server import FULL_CALL_MARKER, FULL_MARKER
from .test_turn_undo import NO_APPROVAL

pytestmark = pytest.mark.integration

TIMEOUT = {"codex": 300, "claude": 300, "gemini": 400, "opencode": 500}
HOOKS = '[[prompt_guard]]\nname = "g"\ncommand = "echo compaction={compaction}"\n'
MESSAGES = (f"first message {FULL_MARKER}", "second message", "third message", "fourth message")
AFTER = {"codex": 2, "claude": 2, "gemini": 2, "opencode": 1}
"""The message (index in MESSAGES) that gets the blocks again: the one after the compaction."""
COMPACTED = {"opencode": re.compile(r"─{3,} Compaction ─{3,}")}
"""Tools that compact right after the `(full)` turn: the test waits for their notice."""


def block(value: str) -> str:
    return f'<prompt-guard name="g">\ncompaction={value}\n</prompt-guard>\n\n'


def send(term, text: str) -> None:
    """Type a message, wait until its end shows (the tool may wrap it anywhere), submit it."""
    term.type(text)
    tail = text[-12:].replace(" ", "")
    term.wait_for(re.compile(r"\s*".join(map(re.escape, tail))), timeout=20)
    term.enter(after=0.3)


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


@pytest.mark.parametrize("tool", tool_params(TIMEOUT))
def test_automatic_compaction_gives_the_next_message_the_blocks(cli_env, tool):
    cli_env.write_wrapagent_config(hooks_toml=HOOKS)
    configure(cli_env, tool)
    spec, mock = cli_env.spec, cli_env.mock
    term = cli_env.spawn()
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    term.wait_quiet(spec.settle, timeout=10)
    for n, text in enumerate(MESSAGES, 1):
        send(term, text)
        end = time.monotonic() + spec.reply_timeout
        while len(ours(mock.user_texts(api=spec.api), MESSAGES[:n])) < n:
            assert time.monotonic() < end, mock.summary()
            time.sleep(0.2)
        if n == 1 and tool in COMPACTED:
            term.wait_for(COMPACTED[tool], timeout=spec.reply_timeout)
        term.wait_quiet(3.0, timeout=90)
    texts = ours(mock.user_texts(api=spec.api), MESSAGES)
    after = AFTER[tool]
    expected = [block("false") + MESSAGES[0], *MESSAGES[1:]]
    expected[after] = block("true") + MESSAGES[after]
    assert texts == expected, mock.summary()
    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)
    record = cli_env.sessions()[-1]
    assert [(c["conversation"], c["how"]) for c in record["compactions"]] == [(1, "automatic")]
    assert [(i["message"], i["compaction"], i["status"]) for i in record["injections"]] == [
        (1, False, "submitted"), (after + 1, True, "submitted")]


@pytest.mark.parametrize("tool", tool_params(TIMEOUT))
def test_messages_quoting_the_notices_are_no_compaction(cli_env, tool):
    """A user's message and the agent's reply holding every tool's notice text: no blocks follow."""
    cli_env.write_wrapagent_config(hooks_toml=HOOKS)
    spec, mock = cli_env.spec, cli_env.mock
    term = cli_env.spawn()
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    term.wait_quiet(spec.settle, timeout=10)
    messages = ("Context compacted · 0s, Conversation compacted (compacted)", "and then")
    for n, text in enumerate(messages, 1):
        send(term, text)
        end = time.monotonic() + spec.reply_timeout
        while len(ours(mock.user_texts(api=spec.api), messages[:n])) < n:
            assert time.monotonic() < end, mock.summary()
            time.sleep(0.2)
        term.wait_quiet(3.0, timeout=90)
    texts = ours(mock.user_texts(api=spec.api), messages)
    assert texts[0] == block("false") + messages[0], mock.summary()
    # No compaction blocks, ever. (The second message may carry the first one's blocks again
    # when the delivery receipt missed them on a loaded machine: that is no compaction.)
    assert texts[1] in (messages[1], block("false") + messages[1]), mock.summary()
    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)
    record = cli_env.sessions()[-1]
    assert not record.get("compactions"), record.get("compactions")
    assert not any(i.get("compaction") for i in record["injections"]), record["injections"]


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
        send(term, text)
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
