"""The injector for a whole session: resets re-arm injection, submissions are reported as turns.

Driven with a fake clock, like test_injector.py; the PTY versions are in test_turns_pty.py.
"""

from __future__ import annotations

import pytest

from wrapagent.inject.adapters import adapter_for
from wrapagent.inject.adapters.base import Adapter
from wrapagent.inject.composer import Composer
from wrapagent.inject.injector import SessionInjector
from wrapagent.inject.keys import tokenize

PREFIX = '<prompt-guard name="g">\nbody\n</prompt-guard>\n\n'
PREFIX2 = '<prompt-guard name="g">\nsecond\n</prompt-guard>\n\n'
READY_SCREEN = b"\x1b[?2004hbanner\r\ndemo> "
PASTED = b"\x1b[200~" + PREFIX.encode() + b"\x1b[201~"


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class Turns:
    """Records what the injector tells a TurnListener."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.texts: list[str] = []

    def submitted(self, now: float, text: str = "") -> None:
        self.events.append("submitted")
        self.texts.append(text)  # the message's text: a recording's turn marker

    def resumed(self, now: float) -> None:
        self.events.append("resumed")

    def deadline(self, last_output: float) -> float | None:
        return None

    def poll(self, now: float, last_output: float) -> None:
        pass


class World:
    def __init__(self, adapter: str | Adapter = "demo", *, inject: bool = True, resets: bool = True) -> None:
        self.clock = Clock()
        self.prefix: str | None = PREFIX
        self.resets = 0
        self.turns = Turns()
        self.inj = SessionInjector(
            adapter_for(adapter) if isinstance(adapter, str) else adapter, rows=24, cols=80,
            get_prefix=lambda: self.prefix, wake_fd=None, clock=self.clock, inject=inject, turns=self.turns,
            on_reset=self.on_reset if resets else None)

    def on_reset(self) -> None:
        self.resets += 1
        self.prefix = None  # the guards run again

    def ready(self) -> None:
        self.inj.on_output(READY_SCREEN, self.clock.t)
        self.clock.t += 0.2
        assert self.inj.poll(self.clock.t) == b""
        # steady state: the screen is followed (a tool with a screen shape: the composer's content
        # when the keys cannot tell), else the proxy only stores last_output
        assert self.inj.watch_output is (self.inj.view is not None)

    def redraw(self) -> None:
        """The tool draws its composer again after a reset."""
        assert self.inj.state == "wait-ready" and self.inj.watch_output
        self.inj.on_output(b"\r\n(new conversation)\r\ndemo> ", self.clock.t)
        self.clock.t += 0.2
        assert self.inj.poll(self.clock.t) == b""
        assert self.inj.state == "armed" and self.inj.watch_output is (self.inj.view is not None)

    def send(self, data: bytes) -> bytes:
        """Type `data`; return everything that reached the child, blocks included."""
        out = self.inj.on_input(data, self.clock.t) + self.inj.poll(self.clock.t)
        for _ in range(100):
            if self.inj.state in ("holding", "delivering", "settling"):
                self.clock.t += 0.05
                # the composer shows what was written (the delivery's receipt)
                self.inj.on_output((self.inj.report.text or "").replace("\n", "\r\n").encode(),
                                   self.clock.t - 0.04)
            elif self.inj.keys.held.next_due() is not None:  # released keys going out with their original gaps
                self.clock.t = max(self.clock.t, self.inj.keys.held.next_due())
            else:
                break
            out += self.inj.poll(self.clock.t)
        return out

    def message(self, text: bytes) -> bytes:
        return self.send(text) + self.send(b"\r")


def test_reset_rearms_and_next_message_gets_fresh_blocks() -> None:
    w = World()
    w.ready()
    assert w.message(b"hello") == PASTED + b"hello\r"
    assert w.inj.state == "chatting" and not w.inj.done
    assert w.message(b"plain") == b"plain\r"          # an ordinary second message: untouched
    assert w.send(b"/clear\r") == b"/clear\r"         # the reset goes through as typed
    assert w.resets == 1 and w.inj.state == "wait-ready"
    assert w.send(b"\r") == b"\r"                     # a dialog the tool shows first (codex): passes
    w.redraw()
    assert w.inj.on_input(b"n", w.clock.t) == b""    # first key held: guards still running
    assert w.inj.poll(w.clock.t) == b""
    w.prefix = PREFIX2
    out = w.send(b"ext") + w.send(b"\r")
    assert out == b"\x1b[200~" + PREFIX2.encode() + b"\x1b[201~" + b"next\r"
    assert w.message(b"after") == b"after\r"          # the message after it is untouched
    assert [r.conversation for r in w.inj.reports] == [1, 2]
    assert [r.status for r in w.inj.reports] == ["submitted", "submitted"]
    assert w.inj.reports[1].text == PREFIX2


@pytest.mark.parametrize("keys", [
    b"/clear\x03",            # Ctrl-C clears the composer
    b"/clear\x7f\x7f\x7f\x7f\x7f\x7f",  # erased
    b"/cle",                   # not finished
])
def test_reset_not_submitted_does_not_rearm(keys: bytes) -> None:
    w = World()
    w.ready()
    w.message(b"hello")
    assert w.send(keys) == keys
    assert w.inj.state == "chatting" and w.resets == 0


def test_erased_then_other_text_is_not_a_reset() -> None:
    w = World()
    w.ready()
    w.message(b"hello")
    w.send(b"/clear\x7f\x7f\x7f\x7f\x7f\x7fwhat is /clear?\r")
    assert w.resets == 0


def test_reset_while_blocks_pending_changes_nothing() -> None:
    w = World()
    w.ready()
    assert w.send(b"/clear\r") == b"/clear\r"       # first conversation: blocks not delivered yet
    assert w.resets == 0 and w.inj.state == "armed"
    assert w.message(b"hi") == PASTED + b"hi\r"
    assert len(w.inj.reports) == 1


def test_reset_after_reset_before_message_keeps_one_pending_conversation() -> None:
    w = World()
    w.ready()
    w.message(b"hi")
    w.send(b"/clear\r")
    w.redraw()
    w.prefix = PREFIX2
    w.send(b"/new\r")                                  # blocks of conversation 2 still pending
    assert w.resets == 1 and len(w.inj.reports) == 2


def test_other_tools_reset_commands() -> None:
    w = World("codex")
    w.inj.on_output("\x1b[?2004h› Ask Codex to do anything".encode(), w.clock.t)
    w.clock.t += 0.2
    w.inj.poll(w.clock.t)
    w.message(b"hi")
    w.send(b"/clear\r")                                # not a reset in codex
    assert w.resets == 0
    w.send(b"/new\r")
    assert w.resets == 1


def test_history_recall_is_never_taken_for_a_reset() -> None:
    w = World()
    w.ready()
    w.message(b"hi")
    w.send(b"\x1b[A\r")                               # recalls who knows what
    w.send(b"/cl\t\r")                                # Tab completion: content unknown
    assert w.resets == 0


def test_turns_reported_but_not_resets_or_startup_keys() -> None:
    w = World()
    assert w.inj.on_input(b"y\r", w.clock.t) == b"y\r"   # a start-up dialog: not a turn
    w.ready()
    w.message(b"one")
    w.send(b"\r")                                        # Enter on an empty composer
    w.send(b"/clear\r")
    w.redraw()
    w.prefix = PREFIX2
    w.message(b"two")
    w.send(b"\x1b[200~pasted\rlines\x1b[201~\r")
    assert w.turns.events == ["submitted", "resumed", "submitted", "submitted"]
    assert w.turns.texts[0] == "one" and w.turns.texts[1] == "two"  # what a turn marker is labelled with


def test_passive_mode_never_holds_a_key() -> None:
    w = World(inject=False, resets=False)
    w.ready()
    assert w.inj.state == "chatting"
    assert w.inj.on_input(b"hello", w.clock.t) == b"hello"
    assert w.inj.on_input(b"\r", w.clock.t) == b"\r"
    assert w.turns.events == ["submitted"]
    assert w.inj.finalize().status == "none"            # nothing was to be injected


def test_argv_injected_first_conversation_still_rearms_on_reset() -> None:
    w = World(inject=False)
    w.ready()
    assert w.message(b"two") == b"two\r"
    w.send(b"/clear\r")
    assert w.resets == 1
    w.redraw()
    w.prefix = PREFIX2
    assert w.message(b"x").startswith(b"\x1b[200~" + PREFIX2.encode())


def test_keys_before_the_composer_is_back_pass_untouched() -> None:
    """A message typed before the tool redrew its composer after a reset is not injected
    (the keys may be answering a dialog); the next one is."""
    w = World()
    w.ready()
    w.message(b"hi")
    assert w.send(b"/clear\r2") == b"/clear\r2"       # "2" picks a dialog option: must pass
    w.redraw()
    w.prefix = PREFIX2                                   # the guards of conversation 2 are done
    assert w.message(b"next").startswith(b"\x1b[200~" + PREFIX2.encode())


def test_fast_typing_submit_then_reset_in_held_keys() -> None:
    """Keys held during delivery are read after release: an Enter then a reset among them count."""
    w = World()
    w.ready()
    assert w.inj.on_input(b"h", w.clock.t) == b""
    w.inj.poll(w.clock.t)
    w.inj.on_input(b"i\r/clear\r", w.clock.t)
    w.inj.on_output(PREFIX.replace("\n", "\r\n").encode(), w.clock.t + 0.01)  # the composer shows the blocks
    w.clock.t += 2
    assert w.inj.poll(w.clock.t) == b"hi\r/clear\r"
    assert w.resets == 1 and w.inj.state == "wait-ready"
    assert w.inj.reports[0].status == "submitted"


def test_unused_conversation_after_reset_is_none_not_lost() -> None:
    w = World()
    w.ready()
    w.message(b"hi")
    w.send(b"/clear\r")
    first = w.inj.finalize()
    assert first.status == "submitted"
    assert w.inj.reports[1].status == "none"


def test_first_message_mode_is_unchanged() -> None:
    clock = Clock()
    inj = SessionInjector(adapter_for("demo"), rows=24, cols=80, get_prefix=lambda: PREFIX,
                          wake_fd=None, clock=clock)
    inj.on_output(READY_SCREEN, clock.t)
    clock.t += 0.2
    inj.poll(clock.t)
    inj.on_input(b"a", clock.t)
    inj.poll(clock.t)
    inj.on_output(PREFIX.replace("\n", "\r\n").encode(), clock.t + 0.01)  # the composer shows the blocks
    clock.t += 2
    assert inj.poll(clock.t) == b"a"
    assert inj.on_input(b"\r", clock.t) == b""     # typed 2 s after the "a" that just went: kept apart
    for _ in range(3):
        clock.t += 0.3
        inj.poll(clock.t)
    assert inj.done and inj.state == "done"


@pytest.mark.parametrize("keys, text, unknown", [
    (b"/clear", "/clear", False),
    ("h\u00e9\x7f\x7fi".encode(), "i", False),
    (b"a\x1b[Db", "ab", True),
    (b"x" * 600, "", True),
])
def test_composer_follows_the_line(keys: bytes, text: str, unknown: bool) -> None:
    c = Composer()
    for tok in tokenize(keys):
        assert c.feed(tok) is None
    (sub,) = [s for tok in tokenize(b"\r") if (s := c.feed(tok)) is not None]
    assert sub.unknown is unknown
    if not unknown:
        assert sub.text == text


def test_composer_backslash_enter_and_paste_do_not_submit() -> None:
    c = Composer()
    subs = [c.feed(tok) for tok in tokenize(b"a\\\rb\x1b[200~x\ry\x1b[201~")]
    assert all(s is None for s in subs)
    (sub,) = [s for tok in tokenize(b"\r") if (s := c.feed(tok)) is not None]
    assert sub.pasted and not sub.is_command(("/clear",))


def test_reset_without_markers_arms_once_output_is_quiet() -> None:
    """claude redraws only what changed after /clear: no marker shows again, quiet output arms."""
    w = World("claude")
    w.inj.on_output(b"\x1b[?2004h\xe2\x9d\xaf \r\n? for shortcuts", w.clock.t)
    w.clock.t += 0.5
    w.inj.poll(w.clock.t)
    w.message(b"hi")
    w.send(b"/clear\r")
    assert w.inj.state == "wait-ready"
    assert w.inj.watch_output is (w.inj.view is not None)  # only the followed screen needs output
    reset_at = w.clock.t
    w.clock.t += 0.1
    w.inj.last_output = w.clock.t                        # the tool erases the old transcript
    assert w.inj.deadline() == pytest.approx(w.clock.t + 0.3)
    w.clock.t += 0.2
    w.inj.poll(w.clock.t)
    assert w.inj.state == "wait-ready"                   # not quiet long enough yet
    w.clock.t = reset_at + 0.1 + 0.31
    w.inj.poll(w.clock.t)
    assert w.inj.state == "armed" and w.inj.deadline() is None


def test_a_lone_esc_does_not_make_what_follows_a_reset() -> None:
    """`foo`, Esc, `/new`, Enter: a tool that keeps text on Esc submits `foo/new`, not a reset.

    Esc is unknown unless the adapter says it clears: the guess may miss a reset, never
    invent one (before, Esc counted as a clear for every tool and this re-armed injection).
    """
    w = World()
    w.ready()
    assert w.message(b"hello") == PASTED + b"hello\r"
    assert w.send(b"foo") == b"foo"
    assert w.send(b"\x1b") == b"\x1b"
    assert w.send(b"/new\r") == b"/new\r"
    assert w.resets == 0 and w.inj.state == "chatting"
    assert w.turns.events == ["submitted", "submitted"]


def test_esc_clears_when_the_adapter_says_so() -> None:
    from wrapagent.inject.adapters import base, demo
    from wrapagent.values import replace

    w = World(replace(demo.ADAPTER, esc_clears_composer=True))
    w.ready()
    assert w.message(b"hello") == PASTED + b"hello\r"
    assert w.send(b"foo") + w.send(b"\x1b") + w.send(b"/new\r") == b"foo\x1b/new\r"
    assert w.resets == 1 and w.inj.state == "wait-ready"
    assert isinstance(w.inj.adapter, base.Adapter)


def test_compact_gives_the_next_message_fresh_blocks_in_the_same_conversation() -> None:
    compacted: list[tuple[int, int]] = []
    w = World()
    w.inj.conversations.on_compaction = lambda c, m: (compacted.append((c, m)), setattr(w, "prefix", None))
    w.ready()
    assert w.message(b"hello") == PASTED + b"hello\r"
    assert w.send(b"/compact keep the tests\r") == b"/compact keep the tests\r"
    assert compacted == [(1, 2)] and w.inj.state == "wait-ready"
    w.redraw()
    w.prefix = PREFIX2
    assert w.message(b"next") == b"\x1b[200~" + PREFIX2.encode() + b"\x1b[201~next\r"
    assert w.message(b"after") == b"after\r"
    assert [(r.conversation, r.message, r.compaction, r.status) for r in w.inj.reports] == [
        (1, 1, False, "submitted"), (1, 2, True, "submitted")]
    assert [(c["conversation"], c["how"]) for c in w.inj.compactions] == [(1, "/compact")]


def auto_world() -> tuple[World, list[tuple[int, int]]]:
    compacted: list[tuple[int, int]] = []
    w = World()
    w.inj = SessionInjector(
        adapter_for("demo"), rows=24, cols=80, get_prefix=lambda: w.prefix, wake_fd=None,
        clock=w.clock, turns=w.turns, on_reset=w.on_reset,
        on_compaction=lambda c, m: (compacted.append((c, m)), setattr(w, "prefix", None)))
    return w, compacted


def tool_draws(w: World, data: bytes) -> None:
    """The tool's output, then the followed screen caught up (its thread told the watch)."""
    w.inj.on_output(data, w.clock.t)
    assert w.inj.view is not None and w.inj.view.read(timeout=5.0) is not None
    w.clock.t += 0.2
    w.inj.poll(w.clock.t)


def test_an_automatic_compaction_gives_the_next_message_fresh_blocks() -> None:
    w, compacted = auto_world()
    w.ready()
    assert w.message(b"hello") == PASTED + b"hello\r"
    tool_draws(w, b"\r\nreply: MOCK-REPLY-1\r\ndemo> ")
    assert w.message(b"second") == b"second\r"
    tool_draws(w, b"\r\n(conversation compacted automatically)\r\nreply: MOCK-REPLY-2\r\ndemo> ")
    assert compacted == [(1, 2)] and w.inj.state == "armed"
    w.prefix = PREFIX2
    assert w.message(b"next") == b"\x1b[200~" + PREFIX2.encode() + b"\x1b[201~next\r"
    tool_draws(w, b"\r\nreply: MOCK-REPLY-3\r\ndemo> ")
    assert w.message(b"after") == b"after\r"
    assert [(r.conversation, r.message, r.compaction, r.status) for r in w.inj.reports] == [
        (1, 1, False, "submitted"), (1, 2, True, "submitted")]
    assert [(c["conversation"], c["how"]) for c in w.inj.compactions] == [(1, "automatic")]


def test_a_notice_outside_a_turn_or_after_a_typed_compact_is_no_automatic_one() -> None:
    w, compacted = auto_world()
    w.ready()
    tool_draws(w, b"\r\n(conversation compacted automatically)\r\ndemo> ")  # no turn yet
    assert w.message(b"hello") == PASTED + b"hello\r"
    assert w.send(b"/compact\r") == b"/compact\r"
    tool_draws(w, b"\r\n(conversation compacted automatically)\r\ndemo> ")
    assert [c["how"] for c in w.inj.compactions] == ["/compact"] and compacted == [(1, 2)]


def test_compact_typed_after_other_text_is_no_compaction() -> None:
    w = World()
    w.inj.conversations.on_compaction = lambda c, m: pytest.fail("not a compaction")
    w.ready()
    w.message(b"hello")
    assert w.send(b"x/compact\r") == b"x/compact\r"
    assert w.inj.state == "chatting" and not w.inj.compactions


def test_the_interrupt_watch_sees_keys_that_reach_the_tool_and_the_notice_after_them() -> None:
    """Esc while the agent works, then codex's notice: the stop is marked interrupted, and the
    output is watched only between the key and the stop."""
    from wrapagent.inject.interrupts import InterruptWatch, rule_for
    from wrapagent.session.turns import TurnTracker

    clock = Clock()
    fired: list[int] = []
    tracker = TurnTracker(3.0, fired.append, to_wall=str)
    watch = InterruptWatch(rule_for("codex"), tracker.working)
    tracker.interrupted = watch.take
    inj = SessionInjector(adapter_for("demo"), rows=24, cols=80, get_prefix=lambda: "", wake_fd=None,
                          clock=clock, inject=False, turns=tracker, interrupts=watch)
    inj.on_output(READY_SCREEN, clock.t)
    clock.t += 0.2
    inj.poll(clock.t)
    steady = inj.view is not None  # a tool with a screen shape: its screen is followed all along
    assert inj.state == "chatting" and inj.watch_output is steady
    assert inj.on_input(b"\x1b", clock.t) == b"\x1b"   # the agent waits: no interrupt
    assert not watch.wants_output
    assert inj.on_input(b"fix it", clock.t) + inj.on_input(b"\r", clock.t) == b"fix it\r"
    clock.t += 1.0
    assert inj.on_input(b"\x1b", clock.t) == b"\x1b"   # while it works: the key passes, and counts
    assert watch.wants_output and inj.watch_output      # the notice is looked for in the output
    inj.on_output(b"\x1b[31m\xe2\x96\xa0\x1b[0m Conversation interrupted", clock.t)
    clock.t += 3.5
    inj.poll(clock.t)
    assert fired == [1] and tracker.interrupted_turn == 1 and tracker.turns[0]["interrupted"] is True
    assert not watch.wants_output and inj.watch_output is steady  # back to the steady state
