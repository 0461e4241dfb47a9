"""`doctor --probe`'s result as text, from made-up results: what fired, why not, and the last screen inert."""

from __future__ import annotations

from wrapagent.commands.doctor_report import render_probe

BASE = {"tool": "codex", "error": None, "argv": ["codex", "--model", "a b"], "adapter": "codex",
        "tool_version": "0.169.0", "cols": 120, "rows": 40, "queries_answered": 2, "kind": "agent",
        "types_input": True, "ready": True, "ready_after_s": 1.5, "ready_by": "marker",
        "markers": [{"pattern": "›", "on_screen": True}], "bracketed_paste_required": True,
        "bracketed_paste": True, "quit": {"keys": ["\x03", "\x03"], "keys_sent": 1, "exit_code": 0, "seconds": 0.25},
        "screen": "ready screen", "timeout_s": 30}


def test_a_probe_that_fired() -> None:
    text = render_probe(BASE)
    assert text.startswith("Probe: codex\n  command       codex --model 'a b'\n  version       0.169.0\n")
    assert "  readiness     FIRED after 1.50s by its own screen markers (wrapagent would inject" in text
    assert "  marker        '›': on screen\n" in text and "  paste mode    bracketed paste enabled\n" in text
    assert "  quit          sent '\\x03'; exit code 0 after 0.25s\n" in text
    assert "last screen" not in text


def test_a_probe_that_did_not_fire_shows_why_and_the_last_screen_inert() -> None:
    result = dict(BASE, ready=False, bracketed_paste=False, markers=[{"pattern": "›", "on_screen": False}],
                  screen="Update available\x1b]0;pwned\x07\n\n\n",
                  quit={"keys": ["\x03"], "keys_sent": 1, "sigterm": True, "exit_code": 143, "signal": 15})
    text = render_probe(result)
    assert "  readiness     NOT FIRED (within 30s; a first start can be slow: try --timeout 120)" in text
    assert "bracketed paste NEVER enabled (wrapagent waits for ESC[?2004h)" in text
    assert "sent '\\x03'; still running: SIGTERM; exit code 143 (signal 15)" in text
    assert text.endswith("  last screen (120x40):\n  | Update available\\x1b]0;pwned\\x07\n")


def test_a_generic_fallback_on_a_known_tool_gets_a_note_and_an_error_stops_early() -> None:
    text = render_probe(dict(BASE, ready_by="generic"))
    assert "by the generic rule" in text and "\n  note          " in text
    assert render_probe(dict(BASE, error="codex: command not found")) == \
        "Probe: codex\n  error         codex: command not found\n"


def test_a_tool_that_exited_by_itself() -> None:
    text = render_probe(dict(BASE, ready=False, quit={"exited_before_quit": True, "exit_code": 2}, screen=""))
    assert "NOT FIRED (the tool exited first)" in text
    assert "  exit          the tool exited by itself with code 2\n" in text
    assert text.endswith("  | (empty)\n")
