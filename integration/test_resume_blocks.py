"""A resumed conversation gets the blocks on its first typed message, on each real CLI.

Two starts per tool. The first session's reply is full of dialog look-alikes (numbered Yes/No
choices, `›`/`❯`/`●` lines, "Do you want to proceed?"): the resumed transcript shows them
again, above the composer. Before the screen model they were taken for a dialog, the session
never became ready, and the first message went to the model bare; `codex resume` was
"nowhere to inject: subcommand resume". The guard prints the `is_resume` it reads on stdin.
"""

from __future__ import annotations

import re
import time

import pytest

from .clienv import SPECS, tool_params
from .test_session_turns import send

pytestmark = pytest.mark.integration

RESUME = {"codex": ["resume", "--last"], "claude": ["--continue"], "gemini": ["--resume", "latest"],
          "opencode": ["--continue"]}
TIMEOUT = {"codex": 240, "claude": 240, "gemini": 320, "opencode": 420}
GUARD = """
[[prompt_guard]]
name = "resume"
command = "python3 -c 'import json,sys; print(\\"is_resume\\", json.load(sys.stdin)[\\"is_resume\\"])'"
"""


def block(is_resume: bool) -> str:
    return f'<prompt-guard name="resume">\nis_resume {is_resume}\n</prompt-guard>\n\n'


def wait_ready_logged(cli_env, count: int, timeout: float = 120.0) -> None:
    """The session log of the `count`-th session says the composer was found."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        logs = sorted(cli_env.sessions_root().glob("*/session.log"), key=lambda p: p.stat().st_mtime)
        if len(logs) >= count and re.search(r"injection: \w+ ready after", logs[-1].read_text(errors="replace")):
            return
        time.sleep(0.1)
    raise AssertionError(f"session {count} never became ready")


@pytest.mark.parametrize("tool", tool_params(TIMEOUT))
def test_resumed_conversation_gets_the_blocks(cli_env, tool):
    spec = SPECS[tool]
    cli_env.write_wrapagent_config(hooks_toml=GUARD)
    mock = cli_env.mock

    term = cli_env.spawn(cli_env.interactive_args())
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    wait_ready_logged(cli_env, 1)
    term.wait_quiet(spec.settle, timeout=10)
    send(term, "(lookalike) show me the choices")
    texts = mock.wait_for_turns(1, api=spec.api, timeout=spec.reply_timeout)
    assert texts == [block(False) + "(lookalike) show me the choices"], mock.summary()
    term.wait_for("Do you want to proceed", timeout=spec.reply_timeout)
    term.wait_quiet(1.0, timeout=30)
    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)

    mark = mock.mark()
    term = cli_env.spawn(cli_env.interactive_args(RESUME[tool]))
    term.wait_for("Do you want to proceed", timeout=spec.ready_timeout)   # the resumed transcript
    wait_ready_logged(cli_env, 2)
    term.wait_quiet(max(spec.settle, 0.5), timeout=15)
    send(term, "and after the resume")
    texts = mock.wait_for_turns(1, api=spec.api, timeout=spec.reply_timeout, since=mark)
    assert texts == [block(True) + "and after the resume"], mock.summary()
    # the reply drawn and the turn over before the quit keys: during a turn codex takes Ctrl-C
    # for an interrupt and claude its first Ctrl-C, so the tool would not exit
    term.wait_for(re.compile(r"MOCK-REPLY-[2-9]"), timeout=spec.reply_timeout)
    term.wait_quiet(1.0, timeout=30)
    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)
