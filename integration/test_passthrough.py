"""wrapagent with no hooks configured must be invisible: each real CLI behaves as if run directly.

Per CLI, two tests (each starts the CLI as few times as possible; opencode alone takes 9-24 s
to become ready on a loaded 2-core box):

- test_interactive: one PTY session under wrapagent covers start-up to the ready screen, a
  message typed key by key reaching the mock verbatim, the mock's reply on screen, a resize
  redrawn at the new size, the tool's own quit keys, exit status 0, no process left behind,
  and the committed session record.
- test_oneshot_piped: the non-interactive form with stdout piped, once directly and once
  under wrapagent (same env, same mock): stdout byte-identical, same exit code, same
  message at the mock, no process left behind, and the session record.
"""

from __future__ import annotations

import re
import time

import pytest

from .clienv import SPECS, send_message, tool_params

pytestmark = pytest.mark.integration

# Generous per-test limits: readiness is slow and noisy on a shared 2-core machine.
INTERACTIVE_TIMEOUT = {"codex": 120, "claude": 120, "gemini": 180, "opencode": 300}
ONESHOT_TIMEOUT = {"codex": 120, "claude": 120, "gemini": 150, "opencode": 240}

# What the person types: plain printable ASCII, no leading `/`, `!`, `@` or `?` (those open
# command, shell, file or help modes in some of the CLIs).
TYPED = "hello from the wrapagent harness, 7 x 6 = 42 (passthrough)"
PROMPT = "say hello to the wrapagent harness"


@pytest.mark.parametrize("tool", tool_params(INTERACTIVE_TIMEOUT))
def test_interactive(cli_env, tool):
    spec = SPECS[tool]
    args = cli_env.interactive_args()
    timings = {}
    t0 = time.monotonic()
    term = cli_env.spawn(args)

    # 1. the ready screen
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    timings["ready"] = time.monotonic() - t0
    term.wait_quiet(spec.settle, timeout=10)

    # 2. typed like a person, Enter as its own keystroke; arrives verbatim at the mock
    send_message(term, TYPED, tail=TYPED)
    texts = cli_env.mock.wait_for_turns(1, api=spec.api, timeout=spec.reply_timeout)
    timings["turn"] = time.monotonic() - t0
    assert texts == [TYPED], f"the mock got {texts!r}, expected exactly [{TYPED!r}]\n{cli_env.mock.summary()}"

    # 3. the mock's reply is shown
    term.wait_for("MOCK-REPLY-1", timeout=30)
    timings["reply"] = time.monotonic() - t0

    # 4. resize: the tool redraws transcript and prompt on the (blanked) screen at the new size
    term.wait_quiet(0.5, timeout=10)
    offset = term.resize(100, 30, blank=True)
    term.wait_output(offset, timeout=15)
    term.wait_for(re.compile(spec.redrawn), timeout=20)
    lines = term.screen_lines()
    assert len(lines) == 30 and all(len(line) <= 100 for line in lines)
    timings["resize"] = time.monotonic() - t0

    # 5. the tool's own quit keys; wrapagent exits with the tool's status
    term.wait_quiet(0.3, timeout=10)
    status = term.quit(spec.quit_keys, gap=spec.quit_gap, timeout=30)
    timings["exit"] = time.monotonic() - t0
    assert status == 0, term.dump(f"wrapagent exited with {status}, expected 0")
    cli_env.assert_run_clean(term.run)

    # 6. exactly one turn reached the model (nothing injected, nothing duplicated)
    assert cli_env.mock.user_texts(api=spec.api) == [TYPED], cli_env.mock.summary()

    # 7. the session record
    record = cli_env.assert_session_record(args, exit_code=0, mode="pty")
    assert record.get("injection", {}).get("status") in (None, "none"), record.get("injection")
    print(f"{tool} interactive timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))


@pytest.mark.parametrize("tool", tool_params(ONESHOT_TIMEOUT))
def test_oneshot_piped(cli_env, tool):
    spec = SPECS[tool]
    args = cli_env.oneshot_args(PROMPT)

    mark = cli_env.mock.mark()
    direct = cli_env.run_piped(args, wrapped=False, timeout=ONESHOT_TIMEOUT[tool] / 2 - 5)
    direct_texts = cli_env.mock.user_texts(api=spec.api, since=mark)
    assert direct.returncode == 0 and b"MOCK-REPLY-1" in direct.stdout, (
        "the CLI itself (no wrapagent) did not answer from the mock:\n" + direct.describe() + "\n" + cli_env.mock.summary()
    )
    cli_env.assert_run_clean(direct.run)

    mark = cli_env.mock.mark()
    wrapped = cli_env.run_piped(args, wrapped=True, timeout=ONESHOT_TIMEOUT[tool] / 2 - 5)
    wrapped_texts = cli_env.mock.user_texts(api=spec.api, since=mark)
    cli_env.assert_run_clean(wrapped.run)

    assert wrapped.stdout == direct.stdout, (
        f"stdout differs under wrapagent\n--- direct:\n{direct.describe()}\n--- wrapped:\n{wrapped.describe()}"
    )
    assert wrapped.returncode == direct.returncode, f"direct:\n{direct.describe()}\nwrapped:\n{wrapped.describe()}"
    assert wrapped_texts == direct_texts and len(direct_texts) == 1, (
        f"the mock got {wrapped_texts!r} under wrapagent, {direct_texts!r} directly\n{cli_env.mock.summary()}"
    )
    cli_env.assert_session_record(args, exit_code=direct.returncode, mode="pipe")
    print(f"{tool} one-shot: direct {direct.duration:.1f} s, wrapped {wrapped.duration:.1f} s")
