"""A whole session on each real CLI: a reset re-injects, waiting_for_input fires once per turn,
and the key that switches the agent's mode never makes wrapagent miss a reset.

One CLI start per tool covers (in this order):

1. the first message, a "thinking" one (the mock opens the stream and sends the text 6 s
   later, while the CLI animates its spinner): it reaches the model with the blocks;
   waiting_for_input must not fire while the model thinks, and fires once, with turn 1,
   after the reply was sent (order of wall times: reply sent < hook fired);
2. the mode key twice (so the mode comes back), then the tool's reset command (`/new` or
   `/clear`): the next message, a thinking one, reaches the model in a fresh conversation
   with freshly computed blocks (the guard counts its runs), verbatim; while the agent
   thinks about it the mode key twice again; waiting_for_input fires with turn 2 after it;
3. the message after it is untouched; turn 3 fires;
4. the reset again after that turn, then a message with fresh blocks; turn 4 fires;
5. nothing fired at start-up or for the resets themselves, the record holds the three
   injections, the turns and one aggregated waiting_for_input entry.

The mode key (shift+tab in codex, claude and gemini: permission or approval modes; Tab in
opencode: build/plan) leaves the composer empty, but its bytes say nothing wrapagent can
read. Before the screen model, wrapagent took it for text, the reset typed after it was not
"typed in full on an empty composer", and the next message reached the model without the
blocks, on all four CLIs. (opencode's plan agent may add its own reminder after the text of
a message sent in plan mode: after the mode keys only the start is compared.)

quiet_secs is left to the per-tool default (3 s): the measured longest output gap while a
model thinks is 1.15-1.40 s.
"""

from __future__ import annotations

import re

import pytest

from .clienv import SPECS, composer_shown_empty, send_message, submit_command, tool_params

pytestmark = pytest.mark.integration

RESET = {"codex": "/new", "claude": "/clear", "gemini": "/clear", "opencode": "/new"}
# codex asks where a new chat runs when the project is a git repository: Enter keeps it here.
# Keys typed before the composer shows again pass untouched (they may answer such a dialog).
RESET_DIALOG = {"codex": "Where should the new conversation run?"}
TIMEOUT = {"codex": 300, "claude": 300, "gemini": 400, "opencode": 500}

FIRST = "(think) first message of the session"
SECOND = "(think) first message after the reset"
THIRD = "and one more, untouched"
FOURTH = "first message after the second reset"
MODE_KEY = {"codex": b"\x1b[Z", "claude": b"\x1b[Z", "gemini": b"\x1b[Z", "opencode": b"\t"}


def block(n: int) -> str:
    """The counting guard's block on its n-th run (a fresh block per conversation)."""
    return f'<prompt-guard name="counter">\nguard run {n}\n</prompt-guard>\n\n'


def counting_guard(cli_env) -> str:
    """hooks.toml text of a guard that counts its runs: `guard run N`."""
    counter = cli_env.root / "guard-runs"
    return f"""
[[prompt_guard]]
name = "counter"
command = "n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {counter}; echo guard run $n"
"""


def configure(cli_env) -> None:
    waits = cli_env.root / "waits.log"
    hooks = counting_guard(cli_env) + f"""
[waiting_for_input]
command = "echo $(date +%s.%N) {{turn}} $WRAPAGENT_TURN >> {waits}"
"""
    cli_env.write_wrapagent_config(hooks_toml=hooks)


def waits(cli_env) -> list[tuple[float, str]]:
    """(wall time, turn) per waiting_for_input run; checks {turn} and WRAPAGENT_TURN agree."""
    path = cli_env.root / "waits.log"
    out = []
    for line in (path.read_text().splitlines() if path.exists() else []):
        when, turn, env_turn = line.split()
        assert turn == env_turn, line
        out.append((float(when), turn))
    return out


def wait_fired(cli_env, term, count: int, timeout: float = 60.0) -> list[tuple[float, str]]:
    import time

    end = time.monotonic() + timeout
    while len(waits(cli_env)) < count:
        if time.monotonic() > end:
            raise AssertionError(f"waiting_for_input ran {len(waits(cli_env))} times, expected {count}\n"
                                 + term.dump("screen"))
        time.sleep(0.1)
    return waits(cli_env)


def test_mock_thinking_reply_opens_the_stream_before_the_text(tmp_path):
    """The mock's thinking turn: the stream is open (headers, message_start) long before the text."""
    import http.client
    import json

    from .mock_server import MockServer

    with MockServer() as mock:
        mock.think_secs = 60.0          # the text cannot have been sent while this test runs
        conn = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=30)
        body = {"model": "m", "stream": True, "max_tokens": 10,
                "messages": [{"role": "user", "content": "(think) hello"}]}
        conn.request("POST", "/v1/messages", body=json.dumps(body),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200
        first = resp.fp.readline() + resp.fp.readline()   # chunk size + the first event line
        assert b"message_start" in first or b"event" in first
        assert mock.reply_times() == []                   # stream open, text not sent yet
        conn.close()
        plain = MockServer()
        with plain:
            conn = http.client.HTTPConnection("127.0.0.1", plain.port, timeout=30)
            body["messages"][0]["content"] = "hello"
            conn.request("POST", "/v1/messages", body=json.dumps(body),
                         headers={"Content-Type": "application/json"})
            data = conn.getresponse().read()
            assert b"".join(re.findall(rb'"text": "([^"]*)"', data)) == b"MOCK-REPLY-1"
            assert len(plain.reply_times()) == 1           # a plain turn: sent at once, time kept


def mode_key_twice(term, tool: str) -> None:
    for _ in range(2):
        term.key(MODE_KEY[tool])
        term.wait_quiet(0.5, timeout=15)


def reset(term, tool: str) -> None:
    """The tool's reset command, and Enter in codex's "where should it run?" dialog."""
    term.wait_quiet(0.5, timeout=15)
    submit_command(term, tool, RESET[tool])
    if tool in RESET_DIALOG:
        term.wait_for(RESET_DIALOG[tool], timeout=15)
        term.wait_quiet(0.5, timeout=10)
        term.enter(after=0.3)
        term.wait_gone(RESET_DIALOG[tool], timeout=15)
    term.wait_quiet(1.0, timeout=30)
    # (under load opencode drew `/new` in its composer for a second after its Enter, quiet)
    term.wait_until(composer_shown_empty(tool), f"{tool}'s composer empty after {RESET[tool]}", timeout=30)


@pytest.mark.parametrize("tool", tool_params(TIMEOUT))
def test_reset_and_waiting_for_input(cli_env, tool):
    spec = SPECS[tool]
    configure(cli_env)
    mock = cli_env.mock
    term = cli_env.spawn(cli_env.interactive_args())
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    term.wait_quiet(spec.settle, timeout=10)
    mark = mock.mark()

    # 1. a thinking turn: blocks on the first message; the hook waits for the reply
    send_message(term, FIRST)
    texts = mock.wait_for_turns(1, api=spec.api, timeout=spec.reply_timeout, since=mark)
    assert texts == [block(1) + FIRST], mock.summary()
    term.wait_for("MOCK-REPLY-1", timeout=spec.reply_timeout + mock.think_secs)
    fired = wait_fired(cli_env, term, 1)
    (reply_sent,) = mock.reply_times(since=mark)
    assert fired[0][1] == "1"
    assert fired[0][0] > reply_sent, "waiting_for_input fired while the model was still thinking"

    # 2. the mode key twice, the reset: a fresh conversation, fresh blocks, verbatim
    term.wait_quiet(1.0, timeout=30)
    mode_key_twice(term, tool)
    reset(term, tool)
    send_message(term, SECOND)
    # the mode key twice while the agent thinks about it
    term.wait_for(re.compile(r"(?i)\besc\b[^\n]{0,12}\b(interrupt|cancel)"), timeout=spec.reply_timeout)
    mode_key_twice(term, tool)
    texts = mock.wait_for_turns(2, api=spec.api, timeout=spec.reply_timeout, since=mark)
    assert texts[0] == block(1) + FIRST and texts[1].startswith(block(2) + SECOND), mock.summary()
    second = mock.turn_requests(api=spec.api, since=mark)[1]
    assert second["turn"] == 1, "the reset did not start a new conversation"
    term.wait_for("MOCK-REPLY-1", timeout=spec.reply_timeout + mock.think_secs)
    fired = wait_fired(cli_env, term, 2)
    assert [t for _, t in fired] == ["1", "2"]          # the reset itself is not a turn

    # 3. the message after it: untouched
    term.wait_quiet(1.0, timeout=30)
    send_message(term, THIRD)
    texts = mock.wait_for_turns(3, api=spec.api, timeout=spec.reply_timeout, since=mark)
    assert texts[2] == THIRD, mock.summary()
    fired = wait_fired(cli_env, term, 3)
    assert [t for _, t in fired] == ["1", "2", "3"]

    # 4. after a turn with mode keys in it, the reset again: fresh blocks
    term.wait_for("MOCK-REPLY-2", timeout=spec.reply_timeout)
    reset(term, tool)
    send_message(term, FOURTH)
    texts = mock.wait_for_turns(4, api=spec.api, timeout=spec.reply_timeout, since=mark)
    assert texts[3].startswith(block(3) + FOURTH), mock.summary()
    fired = wait_fired(cli_env, term, 4)
    assert [t for _, t in fired] == ["1", "2", "3", "4"]

    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)

    record = cli_env.sessions()[-1]
    assert [(i["conversation"], i["status"]) for i in record["injections"]] == [
        (1, "submitted"), (2, "submitted"), (3, "submitted")]
    assert [i["text"] for i in record["injections"]] == [block(1), block(2), block(3)]
    assert record["injection"]["text"] == block(1)
    assert [t["n"] for t in record["turns"]][:4] == [1, 2, 3, 4]
    assert all(t["quiet_at"] for t in record["turns"][:4])
    (entry,) = [h for h in record["hooks"] if h["name"] == "waiting_for_input"]
    assert entry["runs"] == 4 and entry["failed"] == 0 and entry["turn"] == 4
    assert len(waits(cli_env)) == 4                     # never twice for the same wait
