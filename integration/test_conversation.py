"""The stop check on each real CLI (issue 22), checked at the mock model. (Per-message guards:
`test_argv_every_message.py`, with a first message given on the command line and, after a
reset, a typed one.)

`test_stop_check[tool]`, one CLI start, four phases steered by files the check reads:
(b) fails once, then passes, after a reply full of dialog look-alikes (the mock's answer to
    `(lookalike)`: numbered Yes/No choices, `›`/`❯`/`●` lines, "Do you want to proceed?"):
    the model gets exactly one continuation, equal to the `<prompt-guard name="stop_check">`
    block, then nothing more; waiting_for_input fires once, after the passing run. Before the
    screen model the look-alikes above the composer were taken for a dialog and the
    continuation was cancelled;
(c) always fails with max_continues = 2: exactly two continuations, then waiting_for_input;
(d) the user types while the check runs: no continuation; the user's message arrives as typed;
(e) after another reply full of look-alikes, a `wrapagent send --wait` is delivered (it was
    deferred to a next stop that never came).
"""

from __future__ import annotations

import re
import time

import pytest

from .clienv import SPECS, send_message, tool_params
from .test_send import send as wrapagent_send
from .test_send import socket_ready

pytestmark = pytest.mark.integration

TIMEOUT = {"codex": 360, "claude": 360, "gemini": 480, "opencode": 600}
FIRST = "(lookalike) fix the tests please"
LAST = " then this (lookalike)"
SENT = "a message from outside"


def start(cli_env, hooks: str):
    spec = SPECS[cli_env.tool]
    cli_env.write_wrapagent_config(hooks_toml=hooks)
    term = cli_env.spawn(cli_env.interactive_args())
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    term.wait_quiet(spec.settle, timeout=10)
    return spec, term


def lines(path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def wait_lines(path, count: int, term, timeout: float = 90.0) -> list[str]:
    end = time.monotonic() + timeout
    while len(lines(path)) < count:
        if time.monotonic() > end:
            raise AssertionError(f"{path.name}: {lines(path)}, expected {count} lines\n" + term.dump("screen"))
        time.sleep(0.1)
    return lines(path)


# -- (b)-(d) the stop check ---------------------------------------------------------------

def stop_block(text: str) -> str:
    return f'<prompt-guard name="stop_check">\n{text}\n</prompt-guard>'


@pytest.mark.parametrize("tool", tool_params(TIMEOUT))
def test_stop_check(cli_env, tool):
    root = cli_env.root
    checks, waits = root / "checks.log", root / "waits.log"
    fail, always, hold = root / "fail-once", root / "fail-always", root / "hold"
    # Fails once, at a stop after the model was asked for the turn: a stop wrapagent sees before
    # that (a tool stalled by a loaded machine before its turn began) is no stop of the agent's,
    # and the turn then goes on (turns.py); the agent's real stop is the one that gets the check.
    asked = f"grep -q '\"kind\": \"turn\"' {cli_env.mock.log_path}"
    check = (f"cat >/dev/null; echo $(date +%s.%N) {{turn}} >> {checks}; "
             f"if [ -e {fail} ] && {asked}; then rm -f {fail}; "
             "echo 'make test fails: fix it before you stop.'; exit 2; fi; "
             f"if [ -e {always} ]; then echo 'still failing'; exit 2; fi; "
             f"if [ -e {hold} ]; then while [ -e {hold} ]; do sleep 0.05; done; echo 'go on'; exit 2; fi; "
             "exit 0")
    hooks = f"""
[stop_check]
command = '''{check}'''
max_continues = 2

[waiting_for_input]
command = "echo $(date +%s.%N) {{turn}} >> {waits}"

[send]
enabled = true
"""
    fail.touch()
    spec, term = start(cli_env, hooks)
    socket_ready(cli_env, term)
    mock = cli_env.mock
    mark = mock.mark()

    # (b) fails once, then passes, after a reply full of look-alikes
    send_message(term, FIRST)
    texts = mock.wait_for_turns(2, api=spec.api, timeout=spec.reply_timeout + 30, since=mark)
    assert texts == [FIRST, stop_block("make test fails: fix it before you stop.")], mock.summary()
    fired = wait_lines(waits, 1, term)
    ran = wait_lines(checks, 2, term)
    assert [line.split()[1] for line in fired] == ["2"]
    assert float(fired[0].split()[0]) > float(ran[1].split()[0]), "waiting_for_input before the check passed"
    assert len(mock.user_texts(api=spec.api, since=mark)) == 2

    # (c) always fails, max_continues = 2
    always.touch()
    term.wait_quiet(0.5, timeout=10)
    send_message(term, "now the lint")
    wait_lines(waits, 2, term, timeout=240)
    always.unlink()
    texts = mock.user_texts(api=spec.api, since=mark)
    assert texts[2:] == ["now the lint", stop_block("still failing"), stop_block("still failing")], \
        mock.summary()
    assert [line.split()[1] for line in lines(waits)] == ["2", "5"]

    # (d) the user types while the check runs
    hold.touch()
    term.wait_quiet(0.5, timeout=10)
    send_message(term, "one more thing")
    wait_lines(checks, 6, term)                  # the check runs, and holds
    term.type("and")                             # the user takes over
    term.wait_for("and", timeout=15)
    hold.unlink()
    wait_lines(waits, 3, term)
    send_message(term, LAST)
    texts = mock.wait_for_turns(7, api=spec.api, timeout=spec.reply_timeout, since=mark)
    assert texts[5:] == ["one more thing", "and" + LAST], mock.summary()
    wait_lines(waits, 4, term)

    # (e) a send after a reply full of look-alikes
    term.wait_for("MOCK-REPLY-7", timeout=spec.reply_timeout)
    term.wait_quiet(1.0, timeout=30)
    done = wrapagent_send(cli_env, "--wait", SENT)
    assert done.returncode == 0, done.stderr + done.stdout
    texts = mock.wait_for_turns(8, api=spec.api, timeout=spec.reply_timeout + 60, since=mark)
    assert texts[7:] == [SENT], mock.summary()
    # that turn over (its check passed, the agent waits) before the quit keys: during a turn
    # codex takes Ctrl-C for an interrupt and claude its first Ctrl-C, and neither exits
    wait_lines(waits, 5, term)
    term.wait_for("MOCK-REPLY-8", timeout=spec.reply_timeout)
    term.wait_quiet(1.0, timeout=30)

    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)
    record = cli_env.sessions()[-1]
    entry = record["stop_check"]
    assert [c["text"] for c in entry["continuations"]] == [
        stop_block("make test fails: fix it before you stop."), stop_block("still failing"),
        stop_block("still failing")]
    assert entry["still_failing"]["after_continues"] == 2
    assert [n["status"] for n in entry["not_sent"]] == ["cancelled"]
