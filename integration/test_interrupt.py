"""The user's interrupt wins, on each real CLI: no stop-check continuation after the user stops the agent.

One CLI start per tool, with a `[stop_check]` that always fails once armed (its continuation
says `(think)`, so the mock holds its reply back while the CLI animates) and `max_continues = 2`:

0. a first exchange before the check is armed (the tool is up and answering);
1. the user's next message is answered; the check sends the first continuation, whose
   reply the mock holds back; while the agent works on it the user presses the tool's
   interrupt key (Esc; opencode asks for a second Esc);
2. waiting_for_input fires for that turn (the stop was handled), and for at least 10 s
   after it the mock gets no further turn: no continuation;
3. the user's next message restarts the count: exactly two continuations follow it (had
   the count gone on from the interrupted one, the limit would allow only one), then
   waiting_for_input;
4. the record marks the interrupted turn and the check's entry says it did not run there.
"""

from __future__ import annotations

import re
import time

import pytest

from .clienv import SPECS, send_message, tool_params

pytestmark = pytest.mark.integration

TIMEOUT = {"codex": 300, "claude": 300, "gemini": 400, "opencode": 500}
WORKING = re.compile(r"esc (to )?(interrupt|cancel)")
"""The working agent's hint: codex and claude `esc to interrupt`, gemini `esc to cancel`, opencode `esc interrupt`."""
NO_CONTINUATION_SECS = 10.0
CONTINUATION = "(think) the tests still fail: keep working"


def lines(path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def wait_lines(path, count: int, term, timeout: float = 120.0) -> list[str]:
    end = time.monotonic() + timeout
    while len(lines(path)) < count:
        if time.monotonic() > end:
            raise AssertionError(f"{path.name}: {lines(path)}, expected {count} lines\n" + term.dump("screen"))
        time.sleep(0.1)
    return lines(path)


def block(text: str) -> str:
    return f'<prompt-guard name="stop_check">\n{text}\n</prompt-guard>'


def interrupt(term, tool: str) -> None:
    """The tool's own interrupt key, as a person presses it while the agent works."""
    term.wait_for(WORKING, timeout=60)
    term.key(b"\x1b")
    if tool == "opencode":
        term.wait_for("esc again to interrupt", timeout=15)
        term.key(b"\x1b")


def submit_first(term, mock, spec, text: str) -> None:
    """The session's first message; on a loaded box opencode sometimes drops the first Enter after
    its start (the text stays in the composer): pressed once more only when the model got nothing."""
    send_message(term, text)
    try:
        mock.wait_for_turns(1, api=spec.api, timeout=20)
    except TimeoutError:
        assert text in term.screen_text(), term.dump("screen")
        term.enter(after=0.3)
        mock.wait_for_turns(1, api=spec.api, timeout=spec.reply_timeout)


@pytest.mark.parametrize("tool", tool_params(TIMEOUT))
def test_interrupt_stops_the_stop_check(cli_env, tool):
    spec = SPECS[tool]
    waits, armed = cli_env.root / "waits.log", cli_env.root / "armed"
    hooks = f"""
[stop_check]
command = "cat >/dev/null; [ -e {armed} ] || exit 0; echo '{CONTINUATION}'; exit 2"
max_continues = 2

[waiting_for_input]
command = "echo {{turn}} >> {waits}"
"""
    cli_env.write_wrapagent_config(hooks_toml=hooks)
    mock = cli_env.mock
    mock.think_secs = 60.0                       # the continuation's reply is held back: the agent works
    term = cli_env.spawn(cli_env.interactive_args())
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    term.wait_quiet(spec.settle, timeout=10)

    # 0. a first exchange, the check passing (not armed yet): the tool is up and answering
    submit_first(term, mock, spec, "hello there")
    term.wait_for("MOCK-REPLY-1", timeout=spec.reply_timeout)
    base = len(wait_lines(waits, 1, term))
    armed.touch()
    term.wait_quiet(0.5, timeout=10)
    mark = mock.mark()

    # 1. a message, its continuation, and the user's interrupt while the agent works on it
    send_message(term, "first task")
    texts = mock.wait_for_turns(2, api=spec.api, timeout=spec.reply_timeout + 30, since=mark)
    assert texts == ["first task", block(CONTINUATION)], mock.summary()
    interrupt(term, tool)

    # 2. the stop was handled (waiting_for_input fired for it), and no continuation follows it
    stopped = int(wait_lines(waits, base + 1, term)[-1])
    handled = time.monotonic()
    while time.monotonic() - handled < NO_CONTINUATION_SECS:
        assert len(mock.user_texts(api=spec.api, since=mark)) == 2, mock.summary()
        time.sleep(0.2)

    # 3. the next message restarts the count: two continuations, then the agent may stop
    mock.think_secs = 1.0
    term.wait_quiet(0.5, timeout=10)
    if tool == "claude":
        # claude put the interrupted message back into the composer: Ctrl-C empties it
        term.wait_for("keep working", timeout=15)
        term.key(b"\x03")
        term.wait_gone("keep working", timeout=15)  # (it left the transcript: nothing had come back)
        term.wait_quiet(0.5, timeout=10)
    send_message(term, "second task")
    assert int(wait_lines(waits, base + 2, term, timeout=240)[-1]) == stopped + 3
    texts = mock.user_texts(api=spec.api, since=mark)
    assert texts == ["first task", block(CONTINUATION), "second task", block(CONTINUATION),
                     block(CONTINUATION)], mock.summary()

    term.wait_quiet(1.0, timeout=30)
    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)
    record = cli_env.sessions()[-1]
    assert [t["n"] for t in record["turns"] if t.get("interrupted")] == [stopped]
    entry = record["stop_check"]
    assert entry["interrupted"] == [stopped]
    assert [c["turn"] for c in entry["continuations"]] == [stopped, stopped + 2, stopped + 3]
    assert entry["still_failing"] == {"turn": stopped + 3, "after_continues": 2}
