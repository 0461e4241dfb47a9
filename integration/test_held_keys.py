"""Held keys keep their timing, proven on the real gemini (issue 21 §2).

A pasted first message, a pause, Enter, all while the blocks cannot be delivered
yet (a guard waits for a gate file the test opens only after the Enter). Released
as one burst, paste-end + Enter reach gemini 0.61 in one read, it takes that Enter
as part of the paste and the message is never submitted (the screen keeps
`[Pasted Text: 12 lines]…` in the composer and the model gets nothing). Released
with the pause between them, the model gets blocks + the pasted text.
"""

from __future__ import annotations

import re
import time

import pytest

from .clienv import SPECS

pytestmark = pytest.mark.integration

PASTED = "\n".join(f"pasted first message, line {i}" for i in range(1, 13))


@pytest.mark.parametrize("tool", [pytest.param("gemini", marks=pytest.mark.timeout(240), id="gemini")])
def test_paste_pause_enter_while_held(cli_env, tool):
    spec = SPECS[tool]
    gate = cli_env.root / "gate"
    cli_env.write_wrapagent_config(hooks_toml=(
        '[[prompt_guard]]\nname = "gate"\ntimeout_secs = 180\n'
        f'command = "while [ ! -e {gate} ]; do sleep 0.05; done; echo gate open"\n'))
    term = cli_env.spawn(cli_env.interactive_args())
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    term.wait_quiet(spec.settle, timeout=10)

    mark = cli_env.mock.mark()
    term.paste(PASTED)  # held: the guard has not finished, so the blocks cannot go yet
    term.enter(after=0.8)  # the user's pause, then Enter: held too
    time.sleep(0.3)  # (the user's hands, not a check) the Enter is read before the gate opens
    gate.touch()
    texts = cli_env.mock.wait_for_turns(1, api=spec.api, timeout=spec.reply_timeout, since=mark)
    blocks = '<prompt-guard name="gate">\ngate open\n</prompt-guard>\n\n'
    assert texts == [blocks + PASTED], cli_env.mock.summary()

    term.wait_for("MOCK-REPLY", timeout=spec.reply_timeout)
    term.wait_quiet(1.0, timeout=30)
    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)
    inj = cli_env.sessions()[-1]["injection"]
    assert inj["status"] == "submitted"
