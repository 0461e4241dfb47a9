"""No blocks for the first message, yet later ones watched: the undo block of a session with no
guard configured (`wrapagent undo` leaves a notice; the next message carries it).

The first message goes through untouched and unheld; each message after it is armed, gets the
block when there is one, and goes through untouched when there is none. Driven with a fake
clock like test_whole_session.py.
"""

from __future__ import annotations

from test_conversations import READY_SCREEN, Clock, Turns

from wrapagent.inject.adapters import adapter_for
from wrapagent.inject.injector import SessionInjector

UNDO = '<prompt-guard name="undo">\nput back:\n- a.txt\n</prompt-guard>\n\n'


class World:
    def __init__(self, *, prompt_given: bool = False) -> None:
        self.clock = Clock()
        self.prefix: str | None = None
        self.armed: list[tuple[int, int]] = []
        self.turns = Turns()
        self.inj = SessionInjector(
            adapter_for("demo"), rows=24, cols=80, get_prefix=lambda: self.prefix, wake_fd=None,
            clock=self.clock, inject=False, turns=self.turns, on_message=self.on_message,
            prompt_given=prompt_given)

    def on_message(self, conversation: int, message: int) -> None:
        self.armed.append((conversation, message))
        self.prefix = None  # computed when its first key comes

    def ready(self) -> None:
        self.inj.on_output(READY_SCREEN, self.clock.t)
        self.clock.t += 0.2
        assert self.inj.poll(self.clock.t) == b""

    def send(self, data: bytes, prefix: str | None = None) -> bytes:
        """Type `data`; the blocks (`prefix`) are ready once the first key is held."""
        out = self.inj.on_input(data, self.clock.t)
        if self.inj.state == "holding":
            assert out == b"" or not data.startswith(out)  # held from the first key
            self.prefix = prefix
        out += self.inj.poll(self.clock.t)
        for _ in range(100):
            if self.inj.state in ("holding", "delivering", "settling"):
                self.clock.t += 0.05
                self.inj.on_output((self.inj.report.text or "").replace("\n", "\r\n").encode(),
                                   self.clock.t - 0.04)
            elif self.inj.keys.held.replay:
                self.clock.t = max(self.clock.t, self.inj.keys.held.replay[0][0])
            else:
                break
            out += self.inj.poll(self.clock.t)
        return out


def test_first_message_untouched_then_each_later_one_watched() -> None:
    w = World()
    w.ready()
    assert w.inj.state == "chatting" and w.armed == []
    assert w.send(b"first") == b"first"                # never held: nothing to add to it
    assert w.send(b"\r") == b"\r"
    assert w.armed == [(1, 2)] and w.inj.state == "armed"
    assert w.send(b"second", prefix="") + w.send(b"\r") == b"second\r"   # no notice: untouched
    assert w.armed == [(1, 2), (1, 3)]
    out = w.send(b"third", prefix=UNDO) + w.send(b"\r")
    assert out == b"\x1b[200~" + UNDO.encode() + b"\x1b[201~" + b"third\r"
    assert w.turns.events == ["submitted", "submitted", "submitted"]
    w.inj.finalize()                                     # message 4, armed, never came: dropped
    assert [(r.message, r.status) for r in w.inj.reports] == [(1, "none"), (2, "none"), (3, "submitted")]


def test_a_command_first_still_arms_the_next_message() -> None:
    w = World()
    w.ready()
    assert w.send(b"/help\r") == b"/help\r"
    assert w.armed == [(1, 2)]
    out = w.send(b"hi", prefix=UNDO) + w.send(b"\r")
    assert out.endswith(b"hi\r") and UNDO.encode() in out


def test_no_arming_without_a_message_callback() -> None:
    w = World()
    w.inj.conversations.on_message = None
    w.ready()
    assert w.send(b"first\r") == b"first\r" and w.send(b"second\r") == b"second\r"
    assert w.inj.state == "chatting" and len(w.inj.reports) == 1


def test_keys_typed_while_a_late_replayed_key_starts_the_next_message_keep_their_order() -> None:
    """The replay of a message's held keys ran late; the next message's first key, queued behind
    it, starts a hold when its turn comes, and keys typed just after it (while the replay's lag
    lasts) must be held behind it: never put in front of the keys held with it."""
    w = World()
    w.ready()
    assert w.send(b"first") + w.send(b"\r") == b"first\r"      # message 2 is armed
    t0 = w.clock.t
    out = w.inj.on_input(b"a", t0) + w.inj.on_input(b"b", t0 + 0.01)
    assert out == b"" and w.inj.state == "holding"
    w.prefix = UNDO
    w.clock.t = t0 + 1.0                                       # the guards took a second
    out = w.inj.poll(w.clock.t)
    w.inj.on_output(UNDO.replace("\n", "\r\n").encode(), w.clock.t + 0.01)
    w.clock.t += 1.0
    out += w.inj.poll(w.clock.t)                               # released: "a" now, "b" 10 ms later
    typed = w.clock.t
    for i, key in enumerate((b"\r", b"c", b"d", b"e")):       # typed while "b" is still to go
        out += w.inj.on_input(key, typed + 0.001 * (i + 1))
    late = b""
    for _ in range(2000):
        if w.inj.state == "holding" and w.prefix is None:
            late += w.inj.on_input(b"f", w.clock.t + 0.001)   # typed in the lag after "c"
            w.prefix = UNDO                                    # message 3's guards are done (the wake fd)
        due = w.inj.deadline()
        if due is None and w.inj.state != "holding":
            break
        w.clock.t = max(w.clock.t + 0.01, due or 0.0)
        late += w.inj.poll(w.clock.t)
        if w.inj.state == "settling":
            w.inj.on_output(UNDO.replace("\n", "\r\n").encode(), w.clock.t + 0.001)
    keys = (out + late).replace(b"\x1b[200~" + UNDO.encode() + b"\x1b[201~", b"")
    assert keys == b"ab\rcdef", keys
