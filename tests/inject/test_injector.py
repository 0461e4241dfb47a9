"""The input state machine of first-message injection, driven with a fake clock."""

from __future__ import annotations

import pytest

from wrapagent.inject.adapters import adapter_for
from wrapagent.inject.adapters.base import Adapter
from wrapagent.inject.held import HELD_GAP_CAP_SECS
from wrapagent.inject.injector import SessionInjector
from wrapagent.inject.keys import (BACKSPACE, ENTER, ESCAPE, INTERRUPT, KEY, NEWLINE, PASTE_END, PASTE_START,
                                   REPLY, TEXT, tokenize)

PREFIX = '<prompt-guard name="g">\nbody\n</prompt-guard>\n\n'
READY_SCREEN = b"\x1b[?2004hbanner\r\ndemo> "


def kinds(data: bytes) -> list[str]:
    return [t.kind for t in tokenize(data)]


@pytest.mark.parametrize("data, expected", [
    (b"abc", [TEXT]),
    (b"\r", [ENTER]),
    (b"\n", [NEWLINE]),
    (b"\x1b\r", [NEWLINE]),                   # Alt/Esc+Enter inserts a newline
    (b"\x1b[13;2u", [NEWLINE]),               # kitty shift+Enter
    (b"\x1b[13u", [ENTER]),                   # kitty Enter
    (b"\x7f", [BACKSPACE]),
    (b"\x03", [INTERRUPT]),
    (b"\x1b", [ESCAPE]),                      # a lone ESC key: what it does is the tool's
    (b"\x1b[A", [KEY]),
    (b"\x1bOA", [KEY]),
    (b"\x1b[12;40R", [REPLY]),                # cursor position report
    (b"\x1b[?62;22c", [REPLY]),               # DA1 reply
    (b"\x1b[>1;10;0c", [REPLY]),              # DA2 reply
    (b"\x1b[?0u", [REPLY]),                   # kitty flags reply
    (b"\x1b[?2004;1$y", [REPLY]),             # DECRPM
    (b"\x1b]11;rgb:0000/0000/0000\x1b\\", [REPLY]),   # OSC 11 reply, ST
    (b"\x1b]10;rgb:ffff/ffff/ffff\x07", [REPLY]),     # OSC 10 reply, BEL
    (b"\x1bP>|xterm(390)\x1b\\", [REPLY]),    # XTVERSION
    (b"\x1b[I\x1b[O", [REPLY, REPLY]),        # focus reports
    (b"\x1b[<35;10;5M\x1b[<0;10;5m", [REPLY, REPLY]),  # SGR mouse
    (b"\x1b[200~a\rb\x1b[201~", [PASTE_START, TEXT, ENTER, TEXT, PASTE_END]),
    ("héllo".encode(), [TEXT]),
])
def test_tokenize(data: bytes, expected: list[str]) -> None:
    assert kinds(data) == expected
    assert b"".join(t.data for t in tokenize(data)) == data  # nothing lost or invented


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def make(adapter: Adapter | None = None, prefix: str | None = PREFIX):
    clock = Clock()
    box = {"prefix": prefix}
    inj = SessionInjector(adapter or adapter_for("demo"), rows=24, cols=80,
                          get_prefix=lambda: box["prefix"], wake_fd=None, clock=clock)
    inj._t0 = clock.t
    return inj, clock, box


def become_ready(inj: SessionInjector, clock: Clock) -> None:
    inj.on_output(READY_SCREEN, clock.t)
    clock.t += 0.2
    assert inj.poll(clock.t) == b""
    assert inj.state == "armed"


def echo(inj: SessionInjector, clock: Clock) -> None:
    """The tool draws the text just written into its composer (what the receipt reads), a moment
    after it was written."""
    inj.on_output((inj.report.text or "").replace("\n", "\r\n").encode(), clock.t + 0.01)


def first_key_through(inj: SessionInjector, clock: Clock, key: bytes = b"a") -> bytes:
    """Type the first key of a message on a ready injector; return what it finally releases.

    The composer shows the blocks (the delivery's receipt), then nothing more happens.
    """
    assert inj.on_input(key, clock.t) == b""
    inj.poll(clock.t)
    echo(inj, clock)
    clock.t += 2
    out = inj.poll(clock.t)
    clock.t += HELD_GAP_CAP_SECS  # the next key comes well after: not kept apart from this one
    inj.poll(clock.t)
    return out


def test_keys_before_ready_pass_through() -> None:
    inj, clock, _ = make()
    assert inj.on_input(b"y\r", clock.t) == b"y\r"   # a startup dialog's answer
    assert inj.state == "starting"


def test_not_ready_without_bracketed_paste() -> None:
    inj, clock, _ = make()
    inj.on_output(b"banner\r\ndemo> ", clock.t)
    clock.t += 0.2
    inj.poll(clock.t)
    assert inj.state == "starting"


def test_first_key_held_blocks_delivered_then_released() -> None:
    inj, clock, _ = make()
    become_ready(inj, clock)
    assert inj.on_input(b"h", clock.t) == b""
    sent = inj.poll(clock.t)
    assert sent == b"\x1b[200~" + PREFIX.encode() + b"\x1b[201~"
    assert inj.on_input(b"ello", clock.t + 0.01) == b""      # still held, order kept
    inj.on_output(b"[Pasted text #1 +3 lines]", clock.t + 0.02)  # the composer redraws
    clock.t += 0.03
    assert inj.poll(clock.t) == b""                           # not quiet long enough yet
    clock.t += 0.05
    assert inj.poll(clock.t) == b"h"                          # the first read now...
    assert inj.report.status == "delivered"
    assert inj.deadline() == pytest.approx(clock.t + 0.01)    # ...the next one as far behind it as typed
    clock.t += 0.01
    assert inj.poll(clock.t) == b"ello"
    # Enter typed 0.08 s after "ello", arriving just after "ello" went (the hold made the replay
    # late): it keeps its 0.08 s, never goes in the letters' wake (gemini loses the last letter)
    assert inj.on_input(b"\r", clock.t) == b""
    assert inj.deadline() == pytest.approx(clock.t + 0.08)
    assert inj.poll(clock.t + 0.07) == b""
    clock.t += 0.08
    assert inj.poll(clock.t) == b"\r"
    assert inj.report.status == "submitted"
    assert inj.report.first_key_delay_ms == pytest.approx(80, abs=1)
    clock.t += 1.0
    assert inj.poll(clock.t) == b"" and inj.done


def test_held_paste_then_enter_keep_their_gap() -> None:
    """A pasted first message, Enter 0.8 s later, both held: released apart, the Enter with the
    user's own pause, never as one burst or sooner (gemini then takes the Enter as part of the
    paste and never submits)."""
    from wrapagent.inject.held import HELD_GAP_CAP_SECS

    inj, clock, _ = make()
    become_ready(inj, clock)
    paste = b"\x1b[200~line one\rline two\x1b[201~"
    assert inj.on_input(paste, clock.t) == b""
    inj.poll(clock.t)                                         # the blocks go
    inj.on_output(b"[Pasted text #1 +3 lines]", clock.t + 0.01)
    assert inj.on_input(b"\r", clock.t + 0.8) == b""         # Enter typed while still held
    clock.t += 0.85
    assert inj.poll(clock.t) == paste                         # released without the Enter
    assert not inj.done
    assert inj.deadline() == pytest.approx(clock.t + 0.8)
    assert inj.poll(clock.t + HELD_GAP_CAP_SECS) == b""
    clock.t += 0.8
    assert inj.poll(clock.t) == b"\r"
    assert inj.report.status == "submitted"
    assert not inj.done                                       # a key typed now still keeps its gap...
    clock.t += HELD_GAP_CAP_SECS
    assert inj.poll(clock.t) == b"" and inj.done              # ...then the injector is done


def test_keys_typed_during_the_replay_go_behind_it() -> None:
    inj, clock, _ = make()
    become_ready(inj, clock)
    assert inj.on_input(b"a", clock.t) == b""
    inj.poll(clock.t)
    inj.on_output(b"[Pasted text #1 +3 lines]", clock.t + 0.01)
    assert inj.on_input(b"b", clock.t + 0.05) == b""
    clock.t += 0.1
    assert inj.poll(clock.t) == b"a"
    assert inj.on_input(b"c", clock.t + 0.001) == b""         # b is still to go: c waits behind it
    out = bytearray()
    for _ in range(10):
        deadline = inj.deadline()
        if deadline is None:
            break
        clock.t = max(clock.t, deadline)
        out += inj.poll(clock.t)
    assert out == b"bc"


def test_terminal_replies_do_not_trigger() -> None:
    inj, clock, _ = make()
    become_ready(inj, clock)
    noise = b"\x1b[12;40R\x1b]11;rgb:0/0/0\x1b\\\x1b[I\x1b[<35;1;1M\x1b[?62c"
    assert inj.on_input(noise, clock.t) == noise
    assert inj.state == "armed"


def test_command_first_then_message_gets_blocks() -> None:
    inj, clock, _ = make()
    become_ready(inj, clock)
    assert inj.on_input(b"/model", clock.t) == b"/model"
    assert inj.state == "command"
    assert inj.on_input(b"\r", clock.t) == b"\r"
    assert inj.state == "armed"
    assert inj.on_input(b"x", clock.t) == b""
    assert PREFIX.encode() in inj.poll(clock.t)


def test_command_erased_rearms() -> None:
    inj, clock, _ = make()
    become_ready(inj, clock)
    inj.on_input(b"/", clock.t)
    inj.on_input(b"\x7f", clock.t)
    assert inj.state == "armed"


def test_keys_in_same_read_after_trigger_are_held_in_order() -> None:
    inj, clock, _ = make()
    become_ready(inj, clock)
    assert inj.on_input(b"\x7fab", clock.t) == b"\x7f"   # a Backspace passes, text is held
    inj.poll(clock.t)
    echo(inj, clock)
    clock.t += 2
    assert inj.poll(clock.t) == b"ab"


def test_a_key_the_composer_model_cannot_read_means_no_blocks_without_a_screen() -> None:
    """Fail safe: after a cursor key, with no screen model to say the composer is empty,
    nothing is typed in front of the text (a guess could paste into a recalled message)."""
    inj, clock, _ = make()
    become_ready(inj, clock)
    assert inj.on_input(b"\x1b[Dab", clock.t) == b"\x1b[Dab"
    assert inj.on_input(b"\r", clock.t) == b"\r"
    assert inj.state == "armed"                              # the next message gets them
    assert inj.on_input(b"n", clock.t) == b""


def test_paste_start_triggers() -> None:
    inj, clock, _ = make()
    become_ready(inj, clock)
    assert inj.on_input(b"\x1b[200~/not a command\x1b[201~", clock.t) == b""


def test_history_recall_submission_is_noted_and_next_message_injected() -> None:
    inj, clock, _ = make()
    become_ready(inj, clock)
    assert inj.on_input(b"\x1b[A", clock.t) == b"\x1b[A"
    assert inj.on_input(b"\r", clock.t) == b"\r"
    assert any("history" in n for n in inj.report.notes)
    assert inj.on_input(b"n", clock.t) == b""
    assert PREFIX.encode() in inj.poll(clock.t)


def test_ctrl_c_after_delivery_rearms() -> None:
    inj, clock, _ = make()
    become_ready(inj, clock)
    assert first_key_through(inj, clock) == b"a"
    clock.t += HELD_GAP_CAP_SECS                                # typed well after the "a" went
    assert inj.on_input(b"\x03", clock.t) == b"\x03"
    assert inj.state == "armed"
    inj.on_input(b"b", clock.t)
    assert PREFIX.encode() in inj.poll(clock.t)
    assert inj.report.attempts == 2


def test_enter_inside_paste_is_not_a_submit() -> None:
    inj, clock, _ = make()
    become_ready(inj, clock)
    assert first_key_through(inj, clock) == b"a"
    inj.on_input(b"\x1b[200~x\ry\x1b[201~", clock.t)
    assert not inj.done
    inj.on_input(b"\n", clock.t)      # newline key: still not a submit
    assert not inj.done
    inj.on_input(b"\r", clock.t)
    assert inj.done


def test_waits_for_guards_then_delivers() -> None:
    inj, clock, box = make(prefix=None)
    become_ready(inj, clock)
    assert inj.on_input(b"q", clock.t) == b""
    assert inj.poll(clock.t) == b""        # guards still running: keep holding
    assert inj.state == "holding"
    box["prefix"] = PREFIX
    assert PREFIX.encode() in inj.poll(clock.t)


def test_empty_prefix_releases_at_once() -> None:
    inj, clock, _ = make(prefix="")
    become_ready(inj, clock)
    assert inj.on_input(b"q", clock.t) == b""
    assert inj.poll(clock.t) == b"q"
    assert inj.done and inj.report.status == "none"


def test_typed_delivery_for_claude_chunks_without_paste_markers() -> None:
    claude = adapter_for("claude")
    inj, clock, _ = make(adapter=claude, prefix="x" * 600 + "\n\n")
    inj.on_output(b"\x1b[?2004h\xe2\x94\x80\xe2\x94\x80\r\n\xe2\x9d\xaf \r\n? for shortcuts", clock.t)
    clock.t += 0.5
    inj.poll(clock.t)
    assert inj.state == "armed"
    inj.on_input(b"h", clock.t)
    chunks = [inj.poll(clock.t)]
    for _ in range(5):
        clock.t += claude.typed_gap_secs
        chunks.append(inj.poll(clock.t))
    chunks = [c for c in chunks if c]
    assert b"".join(chunks) == b"x" * 600 + b"\n\n"
    assert all(len(c) <= claude.typed_chunk_bytes for c in chunks)
    assert len(chunks) == 3
    assert b"\x1b[200~" not in b"".join(chunks)


def test_never_ready_and_no_message_is_unused_not_lost() -> None:
    """Quit at once, or a program that is no agent: no message needed the blocks, nothing to say."""
    inj, clock, _ = make()
    report = inj.finalize()
    assert report.status == "unused"
    assert "the tool never showed its ready screen" in report.notes


def test_never_ready_but_a_message_submitted_is_lost_and_logged() -> None:
    lines: list[str] = []
    inj, clock, _ = make()
    inj.log = lines.append
    assert inj.on_input(b"hello\r", clock.t) == b"hello\r"   # the ready screen was never seen
    report = inj.finalize()
    assert report.status == "lost"
    assert "a message was submitted before the tool's ready screen was seen" in report.notes
    assert any("without the blocks" in line and "ready screen" in line for line in lines)


def test_commands_only_after_ready_is_unused() -> None:
    inj, clock, _ = make()
    become_ready(inj, clock)
    assert inj.on_input(b"/status\r", clock.t) == b"/status\r"
    assert inj.finalize().status == "unused"


def test_history_recall_submitted_without_blocks_is_lost() -> None:
    inj, clock, _ = make()
    become_ready(inj, clock)
    assert inj.on_input(b"\x1b[A", clock.t) == b"\x1b[A"      # Up: the previous message
    assert inj.on_input(b"\r", clock.t) == b"\r"
    report = inj.finalize()
    assert report.status == "lost" and any("history recall" in n for n in report.notes)


def test_internal_error_releases_held_keys_and_switches_off() -> None:
    inj, clock, box = make(prefix=None)
    become_ready(inj, clock)
    assert inj.on_input(b"abc", clock.t) == b""

    def boom() -> str:
        raise RuntimeError("guard thread exploded")

    inj.delivery.get_prefix = boom
    assert inj.poll(clock.t) == b"abc"
    assert inj.done and inj.report.status == "lost"
    assert inj.finalize().status == "lost"


def test_emulator_surprise_does_not_break_readiness() -> None:
    inj, clock, _ = make()
    inj.on_output(b"\x1b[>4;?m\x1b[>4;1m" + READY_SCREEN, clock.t)  # gemini's modifyOtherKeys query
    clock.t += 0.2
    inj.poll(clock.t)
    assert inj.state == "armed"


def test_backslash_enter_is_a_newline_not_a_submit() -> None:
    inj, clock, _ = make()
    become_ready(inj, clock)
    assert first_key_through(inj, clock) == b"a"
    inj.on_input(b"line\\", clock.t)
    inj.on_input(b"\r", clock.t)
    assert not inj.done
    inj.on_input(b"more\r", clock.t)
    assert inj.done and inj.report.status == "submitted"


def test_claude_question_mark_is_a_command() -> None:
    inj, clock, _ = make(adapter=adapter_for("claude"))
    inj.on_output(b"\x1b[?2004h\xe2\x9d\xaf \r\n? for shortcuts", clock.t)
    clock.t += 0.5
    inj.poll(clock.t)
    assert inj.on_input(b"?", clock.t) == b"?"
    assert inj.state == "command"


def test_gemini_at_file_message_gets_blocks() -> None:
    inj, clock, _ = make(adapter=adapter_for("gemini"))
    inj.on_output(b"\x1b[?2004h> Type your message or @path/to/file", clock.t)
    clock.t += 0.5
    inj.poll(clock.t)
    assert inj.on_input(b"@", clock.t) == b""
    assert inj.state == "holding"


def test_typed_delivery_expands_tabs_paste_keeps_them() -> None:
    """A Makefile quoted in a block: typed into claude, a tab is a Tab key (completion)."""
    from wrapagent.inject.delivery import delivery_chunks

    prefix = "<prompt-guard name=\"make\">\nall:\n\tcc -o x x.c\n</prompt-guard>\n\n"
    typed = b"".join(c for _, c in delivery_chunks(adapter_for("claude"), prefix, 0.0))
    assert b"\t" not in typed and b"\n    cc -o x x.c\n" in typed
    pasted = b"".join(c for _, c in delivery_chunks(adapter_for("codex"), prefix, 0.0))
    assert b"\n\tcc -o x x.c\n" in pasted
    inj, clock, box = make(adapter=adapter_for("claude"))
    box["prefix"] = prefix
    inj.on_output(b"\x1b[?2004h" + b"x" * 10, clock.t)  # any screen: readiness is not tested here
    inj._became_ready(clock.t, "marker")
    inj.on_input(b"a", clock.t)
    inj.poll(clock.t)
    assert inj.report.text == prefix.expandtabs(4)  # the record says what the model got
