"""Permission and approval modes: the blocks reach each CLI whatever mode it starts in.

claude 2.1.330, `~/.claude/settings.json` `permissions.defaultMode` in manual (`default`),
`acceptEdits`, `plan` and `auto`:

- `test_claude_mode[mode]`: a profile that has answered claude's one-time "Make auto mode your
  default permission mode?" question: the first message and the one after `/clear` carry the
  blocks verbatim; the record says each was ready by claude's own markers.
- `test_claude_mode_fresh_profile[mode]`: a fresh profile (that question comes after claude's
  first frame, which already shows the composer and the mode) and a user who types as soon as
  the composer shows. Before the fix the markers matched that first frame, the blocks were
  typed into the question and the model got the user's text alone while the record said
  `submitted`. Now: either a message carries the blocks verbatim, or the record does not
  claim it; and the message after the first one gets them when the first did not.

- `test_claude_mode_switch_mid_session`: shift+tab switches modes during the session (manual,
  then accept edits; after `/clear`, plan): the next message gets the blocks verbatim, a stop
  check's continuation in plan mode reaches the model verbatim (its receipt held), and a message
  after one more switch gets none.

gemini in `--approval-mode auto_edit` and opencode's plan agent (`--agent plan`): one run each,
the first message carries the blocks first, verbatim (opencode's plan agent may add its own
reminder after the user's text).
"""

from __future__ import annotations

import json
import re
import time

import pytest

from .clienv import SPECS, composer_shown_empty, send_message

pytestmark = pytest.mark.integration

HOOKS = '[[prompt_guard]]\nname = "g"\ncommand = "echo guard says hi"\n'
CONFIG = '[hooks.pre_session]\ncommand = "echo ctx line"\n'
BLOCKS = ('<system-reminder>\nctx line\n</system-reminder>\n'
          '<prompt-guard name="g">\nguard says hi\n</prompt-guard>\n\n')
CLAUDE_MODES = ("default", "acceptEdits", "plan", "auto")
FOOTER = {"default": "manual mode on", "acceptEdits": "accept edits on", "plan": "plan mode on",
          "auto": "auto mode on"}
NUDGE = "Make auto mode your default permission mode?"


def claude_profile(cli_env, mode: str, *, nudge_answered: bool) -> None:
    settings = cli_env.home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"permissions": {"defaultMode": mode}}))
    if nudge_answered:
        path = cli_env.home / ".claude.json"
        data = json.loads(path.read_text())
        data["hasSeenAutoDefaultNudge"] = True
        path.write_text(json.dumps(data))


def answer_nudge(term, timeout: float) -> bool:
    """claude's one-time question, if it shows within `timeout`: "No, keep … mode". True if answered."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if NUDGE in term.screen_text():
            term.wait_quiet(0.3, timeout=10)
            term.key(b"\x1b[B", after=0.3)
            term.key(b"\r", after=0.3)
            term.wait_gone(NUDGE, timeout=20)
            return True
        time.sleep(0.1)
    return False


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", CLAUDE_MODES)
@pytest.mark.parametrize("tool", ["claude"])
def test_claude_mode(cli_env, tool, mode):
    claude_profile(cli_env, mode, nudge_answered=True)
    cli_env.write_wrapagent_config(hooks_toml=HOOKS, config_toml=CONFIG)
    spec, mock = cli_env.spec, cli_env.mock
    term = cli_env.spawn()
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    assert FOOTER[mode] in term.screen_text()
    term.wait_quiet(spec.settle, timeout=10)
    send_message(term, "first in this mode")
    assert mock.wait_for_turns(1, api=spec.api, timeout=spec.reply_timeout) == [BLOCKS + "first in this mode"]
    term.wait_for("MOCK-REPLY-1", timeout=spec.reply_timeout)
    term.wait_quiet(1.0, timeout=20)
    send_message(term, "/clear")
    term.wait_quiet(1.0, timeout=20)
    # a person types once they see `/clear` gone (under load claude drew it for a while, quiet)
    term.wait_until(composer_shown_empty(tool), "claude's composer empty after /clear", timeout=30)
    send_message(term, "after the reset")
    texts = mock.wait_for_turns(2, api=spec.api, timeout=spec.reply_timeout)
    assert texts[1] == BLOCKS + "after the reset", mock.summary()
    # (the new conversation's first reply; claude takes Ctrl-C for its interrupt while it streams)
    term.wait_for("MOCK-REPLY-1", timeout=spec.reply_timeout)
    term.wait_quiet(1.0, timeout=20)
    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)
    record = cli_env.sessions()[-1]
    assert [(i["conversation"], i["status"], i["ready_by"]) for i in record["injections"]] == [
        (1, "submitted", "marker"), (2, "submitted", "quiet")]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["default", "acceptEdits", "plan"])
@pytest.mark.parametrize("tool", ["claude"])
def test_claude_mode_fresh_profile(cli_env, tool, mode):
    claude_profile(cli_env, mode, nudge_answered=False)
    cli_env.write_wrapagent_config(hooks_toml=HOOKS, config_toml=CONFIG)
    spec, mock = cli_env.spec, cli_env.mock
    term = cli_env.spawn()
    # claude's first frame: the composer and the mode, nothing else yet. A user types.
    term.wait_for(re.compile(r"❯[\s\S]*" + re.escape(FOOTER[mode])), timeout=spec.ready_timeout)
    term.type("typed at once")
    term.enter(after=0.3)
    answer_nudge(term, timeout=5)
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    try:  # the early message, unless the question took it (a loaded machine may take long to send it)
        mock.wait_for_turns(1, api=spec.api, timeout=30)
        term.wait_for("MOCK-REPLY-1", timeout=spec.reply_timeout)
    except (AssertionError, TimeoutError):
        pass
    term.wait_quiet(1.0, timeout=20)
    texts = mock.user_texts(api=spec.api)
    send_message(term, "the next message")
    texts = mock.wait_for_turns(len(texts) + 1, api=spec.api, timeout=spec.reply_timeout)
    term.wait_for(f"MOCK-REPLY-{len(texts)}", timeout=spec.reply_timeout)
    term.wait_quiet(1.0, timeout=20)
    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)
    record = cli_env.sessions()[-1]
    with_blocks = [t for t in texts if t.startswith(BLOCKS)]
    assert len(with_blocks) == 1, mock.summary()           # the blocks reached the model, once
    said = [(i["message"], i["status"]) for i in record["injections"]]
    assert [s for _, s in said].count("submitted") == 1, said   # and the record claims no more
    if texts[0] != with_blocks[0]:                          # the early message went without them:
        assert texts[-1] == BLOCKS + "the next message"     # the next one got them,
        notes = [n for i in record["injections"] for n in i["notes"]]
        assert any("not delivered" in n or "before the tool's ready screen" in n
                   or "before the composer was ready" in n for n in notes), said


@pytest.mark.timeout(300)
@pytest.mark.parametrize("tool, args", [("gemini", ["--approval-mode", "auto_edit"]),
                                        ("opencode", ["--agent", "plan"])])
def test_other_modes(cli_env, tool, args):
    cli_env.write_wrapagent_config(hooks_toml=HOOKS, config_toml=CONFIG)
    spec, mock = SPECS[tool], cli_env.mock
    term = cli_env.spawn(cli_env.interactive_args(args))
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    term.wait_quiet(spec.settle, timeout=10)
    send_message(term, "first in this mode")
    text = mock.wait_for_turns(1, api=spec.api, timeout=spec.reply_timeout)[0]
    if tool == "opencode":
        # The plan agent appends its own <system-reminder> as a second text part of the user's
        # message (the mock's user_text is the last part): the first part is the user's.
        parts = [m for m in mock.turn_requests(spec.api)[-1]["body"]["messages"] if m["role"] == "user"][-1]
        assert "Plan Mode" in text, mock.summary()
        text = parts["content"][0]["text"]
    assert text == BLOCKS + "first in this mode", mock.summary()
    term.wait_for("MOCK-REPLY-1", timeout=spec.reply_timeout)
    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)
    record = cli_env.sessions()[-1]
    assert record["injection"]["status"] == "submitted"


SHIFT_TAB = b"\x1b[Z"


def footer_mode(term) -> str | None:
    """The mode claude's footer shows (a key of FOOTER), None if none does."""
    bottom = "\n".join(term.screen_text().rstrip().splitlines()[-3:])
    return next((mode for mode, text in FOOTER.items() if text in bottom), None)


def switch_mode(term) -> str:
    """shift+tab once; the mode the footer shows after it (it must change)."""
    before = footer_mode(term)
    term.key(SHIFT_TAB, after=0.2)
    end = time.monotonic() + 20
    while time.monotonic() < end:
        now = footer_mode(term)
        if now is not None and now != before:
            term.wait_quiet(0.5, timeout=15)
            return now
        time.sleep(0.05)
    raise AssertionError(f"shift+tab did not change the mode from {before}:\n{term.screen_text()}")


def stop_block(text: str) -> str:
    return f'<prompt-guard name="stop_check">\n{text}\n</prompt-guard>'


STOP_CHECK = """
[stop_check]
command = '''cat >/dev/null; if [ -e {fail} ]; then rm -f {fail}; echo 'the tests fail: fix them'; exit 2; fi; exit 0'''
max_continues = 2
"""


@pytest.mark.timeout(400)
@pytest.mark.parametrize("tool", ["claude"])
def test_claude_mode_switch_mid_session(cli_env, tool):
    claude_profile(cli_env, "default", nudge_answered=True)
    fail = cli_env.root / "fail-once"
    cli_env.write_wrapagent_config(hooks_toml=HOOKS + STOP_CHECK.format(fail=fail), config_toml=CONFIG)
    spec, mock = cli_env.spec, cli_env.mock
    term = cli_env.spawn()
    term.wait_for(re.compile(spec.ready), timeout=spec.ready_timeout)
    assert footer_mode(term) == "default"
    term.wait_quiet(spec.settle, timeout=10)
    send_message(term, "first in manual mode")
    assert mock.wait_for_turns(1, api=spec.api, timeout=spec.reply_timeout) == [BLOCKS + "first in manual mode"]
    term.wait_for("MOCK-REPLY-1", timeout=spec.reply_timeout)
    term.wait_quiet(1.0, timeout=20)

    # mid-session: a switch, the reset, another switch on the fresh conversation's empty composer
    assert switch_mode(term) == "acceptEdits"
    send_message(term, "/clear")
    term.wait_quiet(1.0, timeout=20)
    term.wait_until(composer_shown_empty(tool), "claude's composer empty after /clear", timeout=30)
    assert switch_mode(term) == "plan"
    fail.touch()                                   # the stop check fails once after this turn
    send_message(term, "after the switches")
    texts = mock.wait_for_turns(3, api=spec.api, timeout=spec.reply_timeout + 30)
    assert texts[1:] == [BLOCKS + "after the switches", stop_block("the tests fail: fix them")], mock.summary()
    assert mock.turn_requests(api=spec.api)[1]["turn"] == 1, "the reset did not start a new conversation"
    term.wait_for("MOCK-REPLY-2", timeout=spec.reply_timeout)   # the reply to the continuation
    term.wait_quiet(1.0, timeout=20)
    assert footer_mode(term) == "plan"

    # one more switch, a plain message of the same conversation: no blocks
    switch_mode(term)
    send_message(term, "a plain one")
    texts = mock.wait_for_turns(4, api=spec.api, timeout=spec.reply_timeout)
    assert texts[3] == "a plain one", mock.summary()
    term.wait_for("MOCK-REPLY-3", timeout=spec.reply_timeout)
    term.wait_quiet(1.0, timeout=20)

    assert term.quit(spec.quit_keys, gap=spec.quit_gap) == 0
    cli_env.assert_run_clean(term.run)
    record = cli_env.sessions()[-1]
    assert [(i["conversation"], i["status"]) for i in record["injections"]] == [(1, "submitted"), (2, "submitted")]
    entry = record["stop_check"]
    assert [c["text"] for c in entry["continuations"]] == [stop_block("the tests fail: fix them")]
    assert not entry.get("not_sent"), entry
