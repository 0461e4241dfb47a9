"""No key is ever lost, doubled or reordered: the injector's invariant, checked with hypothesis.

The injector sits between the user's keyboard and the agent. Whatever the
user does, what the tool receives must be the user's bytes, in order, with
the blocks inserted at most once per conversation, each time right before
the first key of a message:

1. the tool's input with every block delivery removed == the user's bytes;
2. the insertions that reached a submitted message are at most
   1 + the reset commands (`/clear`, `/new`, `/reset`) the user submitted;
3. each insertion sits where a message starts: after the tool became ready,
   on an empty composer, outside a paste, right before a typed character
   (not a command prefix) or the start of a paste;
4. once the guards have finished and time has passed, nothing is held;
5. and the first message the user submits (not a command) carries the blocks.

The injector is driven through its contract only (see the `Interceptor`
protocol in proxy/to_child.py): `on_input`, `on_output` (or the plain
`last_output` store when it does not watch output), `poll`, `deadline`,
`done`, with a fake clock. Its screen is the real terminal emulator, fed
each adapter's ready screen. The oracle below does not use the injector's
tokenizer: the generator knows what every key is.

Counterexamples hypothesis found (shrunk) are regular tests at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wrapagent.inject.adapters import adapter_for
from wrapagent.inject.delivery import delivery_chunks
from wrapagent.inject.injector import SessionInjector

# The blocks: long enough for claude's typed delivery to take several chunks,
# with multi-byte characters at chunk edges. It holds "<", which the user's
# keys never do, so a delivery can be found in the tool's input unambiguously.
PREFIX = ("<system-reminder>\nmémoire ✓ " + "ü" * 140 + "\n</system-reminder>\n"
          '<prompt-guard name="g">\nbranch main ' + "x" * 120 + "\n</prompt-guard>\n\n")

BP_ON = b"\x1b[?2004h"
READY_SCREENS = {
    "codex": BP_ON + "\x1b[2J\x1b[H╭──╮\r\n› Ask Codex to do anything\r\n".encode(),
    "claude": BP_ON + "────\r\n❯ \r\n────\r\n? for shortcuts".encode(),
    "gemini": BP_ON + b"> Type your message or @path/to/file\r\n",
    "opencode": BP_ON + b"\x1b[2J\x1b[3;5HAsk anything\r\n",
    "demo": BP_ON + b"banner\r\ndemo> ",
    "aider": BP_ON + b"aider v0\r\n> ",  # an unknown tool: the generic adapter
}
ADAPTERS = sorted(READY_SCREENS)
NOISE = [b"thinking\xe2\x80\xa6\r\n", b"\x1b[2K\r\x1b[1;32mok\x1b[0m", b"\x1b[?25l\x1b[5;1H \x1b[?25h"]
RESETS = ("/clear", "/new", "/reset")
REACTION_SECS = 1.0  # > every adapter's ready_quiet_secs
PAUSE_AFTER_CLEAR = 3.0  # > settle_max_secs + claude's typed delivery: no hold spans a clear
WORDS = ("hello", "fix it", "/model", "/clear", "/new", "/reset", "!ls", "#note", "?", "a/b")

# --------------------------------------------------------------------------- the user's keys


@dataclass(frozen=True)
class Key:
    """One key (or terminal event) as the user's terminal writes it, and what it means."""

    kind: str  # text | enter | newline | backspace | clear | cursor | reply | paste
    data: bytes
    char: str = ""  # text: the character typed


@dataclass(frozen=True)
class Paste:
    """A bracketed paste; `cuts` are byte offsets inside the content where a read ends."""

    content: bytes
    cuts: tuple[int, ...] = ()


KEY_BYTES = {
    "enter": [b"\r"],
    "newline": [b"\n"],
    "backspace": [b"\x7f", b"\x08"],
    "clear": [b"\x03"],  # Ctrl-C: the tools clear the composer
    "esc": [b"\x1b"],    # a lone Esc: cleared or not, per tool; no adapter claims it clears
    "cursor": [b"\x1b[A", b"\x1b[D", b"\x1bOB", b"\x1b[1;5C"],
    "reply": [b"\x1b[12;40R", b"\x1b[?62;22c", b"\x1b[>1;10;0c", b"\x1b]11;rgb:0000/0000/0000\x1b\\",
              b"\x1b]10;rgb:ffff/ffff/ffff\x07", b"\x1b[I", b"\x1b[O", b"\x1b[<35;10;5M",
              b"\x1b[<0;10;5m", b"\x1b[?2004;1$y"],
}

text_chars = st.characters(min_codepoint=0x20, max_codepoint=0x2FFF,
                           blacklist_categories=("Cc", "Cs", "Co", "Cn"),
                           blacklist_characters="<\x7f")


def _text_key(ch: str) -> Key:
    return Key("text", ch.encode(), ch)


special_keys = st.sampled_from([(kind, data) for kind, options in KEY_BYTES.items() for data in options]) \
    .map(lambda kd: Key(kd[0], kd[1]))
typed_word = st.sampled_from(WORDS).map(lambda w: [_text_key(c) for c in w])
paste_content = st.lists(st.one_of(text_chars, st.sampled_from(["\r", "\n", "\t", "/clear\r"])),
                         max_size=12).map(lambda cs: "".join(cs).encode())


@st.composite
def pastes(draw) -> Paste:
    content = draw(paste_content)
    cuts = draw(st.lists(st.integers(0, len(content)), max_size=3, unique=True)) if content else []
    return Paste(content, tuple(sorted(cuts)))


user_actions = st.lists(st.one_of(
    text_chars.map(lambda c: [_text_key(c)]),
    typed_word,
    special_keys.map(lambda k: [k]),
    pastes().map(lambda p: [p]),
), max_size=25).map(lambda groups: [k for g in groups for k in g])


# --------------------------------------------------------------------------- reads


@dataclass
class Read:
    data: bytes


@dataclass
class Output:
    data: bytes


@dataclass
class Advance:
    seconds: float


@dataclass
class GuardsDone:
    pass


@dataclass
class Scenario:
    adapter: str
    steps: list
    user: bytes = b""
    keys: list = field(default_factory=list)  # (offset in user bytes, Key | Paste)
    ready_offset: int | None = None  # user bytes written before the ready screen was drawn


def _atoms(key: Key | Paste) -> list[tuple[bytes, bool]]:
    """(bytes, a read may end right after them). A paste may be cut inside its content only;
    a lone Esc always ends its read (otherwise it would be Alt + the next key)."""
    if isinstance(key, Key):
        return [(key.data, True)]
    content = key.content
    edges = [0, *key.cuts, len(content)]
    pieces = [content[a:b] for a, b in zip(edges, edges[1:])]
    out = [(b"\x1b[200~" + pieces[0], True)]
    out += [(p, True) for p in pieces[1:]]
    out[-1] = (out[-1][0] + b"\x1b[201~", True)
    return out


@st.composite
def scenarios(draw, adapter: str | None = None) -> Scenario:
    """Keys in reads, interleaved with the tool's output, the clock, and the guards finishing."""
    name = adapter or draw(st.sampled_from(ADAPTERS))
    keys = draw(user_actions)
    sc = Scenario(name, [])
    reads: list[bytes] = []
    mid_paste: set[int] = set()  # indexes of reads that continue a paste
    clear_reads: set[int] = set()  # indexes of reads that end with Ctrl-C or Esc
    current = b""
    offset = 0
    for key in keys:
        sc.keys.append((offset, key))
        for k, (data, _) in enumerate(_atoms(key)):
            if current and draw(st.booleans()):
                reads.append(current)
                current = b""
                if k > 0:
                    mid_paste.add(len(reads))
            current += data
            offset += len(data)
        if isinstance(key, Key) and key.kind in ("clear", "esc"):
            # A lone Esc must end its read (else it is Alt + the next key); a clear
            # ends its read in any case (see test_keys_after_a_held_clear).
            reads.append(current)
            current = b""
            if key.kind == "clear":
                clear_reads.add(len(reads) - 1)
    if current:
        reads.append(current)
    sc.user = b"".join(reads)

    # The ready screen comes between any two reads, inside a split paste too
    # (test_ready_screen_in_the_middle_of_a_split_paste).
    ready_at = draw(st.integers(0, len(reads)))
    guards_at = draw(st.integers(0, len(reads) + 1))  # len + 1: only when the session ends
    written = 0
    guards_done = False
    for i in range(len(reads) + 1):
        if i == ready_at:
            sc.ready_offset = written
            sc.steps.append(Output(READY_SCREENS[name]))
            # The user reacts to the ready screen, or types within its quiet period
            # (test_key_typed_while_readiness_is_confirmed).
            sc.steps.append(Advance(draw(st.sampled_from([0.0, 0.01, REACTION_SECS]))))
        if i == guards_at and not guards_done:
            sc.steps.append(GuardsDone())
            guards_done = True
        for _ in range(draw(st.integers(0, 2))):
            if draw(st.booleans()):
                sc.steps.append(Advance(draw(st.sampled_from([0.001, 0.01, 0.03, 0.06, 0.2, 0.5, 2.0]))))
            else:
                sc.steps.append(Output(draw(st.sampled_from(NOISE))))
        if i in clear_reads and not guards_done:
            sc.steps.append(GuardsDone())  # a clear is not pressed while the first key waits for the guards
            guards_done = True
        if i < len(reads):
            sc.steps.append(Read(reads[i]))
            written += len(reads[i])
        if i in clear_reads:
            # ... and the user lets the tool redraw, or types on (test_keys_after_a_held_clear)
            sc.steps.append(Advance(draw(st.sampled_from([0.0, PAUSE_AFTER_CLEAR]))))
    return sc


# --------------------------------------------------------------------------- the fake loop


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Loop:
    """What the proxy (proxy/to_child.py) does with an interceptor, with a fake clock and no fds."""

    MAX_POLLS = 10_000
    TICK = 1e-6  # real time moves on between two polls; a fake clock must too, or a float edge spins
    MAX_SPINS = 10

    def __init__(self, adapter: str) -> None:
        self.clock = Clock()
        self.prefix: str | None = None
        self.inj: SessionInjector | None = SessionInjector(
            adapter_for(adapter), rows=24, cols=80, get_prefix=lambda: self.prefix,
            wake_fd=None, clock=self.clock)
        self.to_tool = bytearray()
        self.injector = self.inj

    def _after_call(self) -> None:
        inj = self.inj
        assert inj is not None
        out = inj.poll(self.clock.t)
        self.to_tool += out
        if inj.done:
            self.inj = None
        elif out and inj.watch_output and PREFIX.splitlines()[0].encode() in out:
            # The tool's composer shows the blocks just written (what the delivery's receipt reads).
            inj.on_output(PREFIX.replace("\n", "\r\n").encode(), self.clock.t)
            self.to_tool += inj.poll(self.clock.t)
            if inj.done:
                self.inj = None

    def read(self, data: bytes) -> None:
        if self.inj is None:
            self.to_tool += data
            return
        self.to_tool += self.inj.on_input(data, self.clock.t)
        self._after_call()

    def output(self, data: bytes) -> None:
        inj = self.inj
        if inj is None:
            return
        if getattr(inj, "watch_output", True):
            inj.on_output(data, self.clock.t)
            self._after_call()
        else:
            inj.last_output = self.clock.t

    def guards_done(self) -> None:
        """The guards thread finished: its wake fd becomes readable, the loop polls."""
        self.prefix = PREFIX
        if self.inj is not None:
            self._after_call()

    def advance(self, seconds: float) -> None:
        """Sleep until `seconds` later, waking at every deadline on the way (never busy-looping)."""
        target = self.clock.t + seconds
        spins = 0
        for _ in range(self.MAX_POLLS):
            if self.inj is None:
                break
            due = self.inj.deadline()
            if due is None or due > target:
                break
            self.clock.t = max(self.clock.t, due)
            before = (self.inj.deadline(), len(self.to_tool))
            self._after_call()
            if self.inj is not None and (self.inj.deadline(), len(self.to_tool)) == before:
                # Woken, nothing happened, the deadline did not move: the loop polls again
                # at once. Harmless a few times (float rounding), a busy loop if it goes on.
                spins += 1
                assert spins <= self.MAX_SPINS, f"deadline {due} stays in the past after poll()"
                self.clock.t += self.TICK
        else:
            raise AssertionError("more than MAX_POLLS wake-ups in one sleep")
        self.clock.t = max(self.clock.t, target)

    def run(self, sc: Scenario) -> bytes:
        for step in sc.steps:
            if isinstance(step, Read):
                self.read(step.data)
            elif isinstance(step, Output):
                self.output(step.data)
            elif isinstance(step, Advance):
                self.advance(step.seconds)
            else:
                self.guards_done()
        # The session goes on: the guards finish (if they had not), time passes.
        if self.prefix is None:
            self.guards_done()
        self.advance(10.0)
        # Every change of state the injector made is one its table lists (states.TRANSITIONS).
        assert self.injector.unexpected_transitions == []
        return bytes(self.to_tool)


# --------------------------------------------------------------------------- the oracle


def split_deliveries(to_tool: bytes, user: bytes, delivery: bytes) -> list[int]:
    """Offsets in `user` where `delivery` was inserted; fails unless to_tool == user + insertions."""
    positions = []
    i = j = 0
    while i < len(to_tool):
        if to_tool.startswith(delivery, i):
            positions.append(j)
            i += len(delivery)
        elif j < len(user) and to_tool[i] == user[j]:
            i += 1
            j += 1
        else:
            raise AssertionError(f"byte {i} of the tool's input is not the user's byte {j}: "
                                 f"tool {to_tool[i:i + 20]!r}, user {user[j:j + 20]!r}")
    assert j == len(user), f"user bytes lost or still held: {user[j:]!r}"
    return positions


@dataclass
class MessageStarts:
    """Where a message may start (and get the blocks), and how many blocks the user's resets allow."""

    starts: set[int]
    submits: list[int]  # offsets of submitting Enters
    clears: list[int]   # offsets of Ctrl-C / Esc
    resets: list[int]   # offsets of the Enter that submitted a reset command
    first_message: tuple[int, int] | None = None
    """The first submitted message that is not a command: (after the previous submit or clear, its Enter)."""


def quiet_offset(sc: Scenario) -> int | None:
    """User bytes written when an unknown TUI's ready screen had been quiet `ready_quiet_secs`.

    A tool without ready markers is ready only then: a key on its drawn screen never skips the
    quiet check (a start-up question drawn 50 ms ago looks the same). The clock is replayed as
    the loop's (the same float sums).
    """
    if adapter_for(sc.adapter).ready_patterns or sc.ready_offset is None:
        return sc.ready_offset
    quiet = adapter_for(sc.adapter).ready_quiet_secs
    t, last_out, drawn, written = 1000.0, 1000.0, False, 0
    for step in sc.steps:
        if isinstance(step, Output):
            last_out = t
            drawn = drawn or BP_ON in step.data
        elif isinstance(step, Advance):
            t = max(t, t + step.seconds)
            if drawn and t - last_out >= quiet:
                return written  # the timer: ready while nobody typed
        elif isinstance(step, Read):
            if drawn and t - last_out >= quiet:
                return written
            written += len(step.data)
    return len(sc.user) + 1


def message_starts(sc: Scenario, prefixes: tuple[str, ...]) -> MessageStarts:
    """Replays the keys on a model composer (whitespace-only counts as empty)."""
    out = MessageStarts(set(), [], [], [])
    composer = ""
    started: int | None = None  # where the composer's message started, if it is one
    # An unknown TUI is ready once its screen was quiet: keys before that, which this fake tool
    # never echoes, went to whatever it had drawn (a start-up question), not to its composer.
    ready = quiet_offset(sc)
    ready = ready if ready is not None else len(sc.user) + 1
    span = ready  # where the current composer's life began
    unknown = False  # an Esc since `span`: the tool may or may not have emptied the composer
    for offset, key in sc.keys:
        if offset >= ready and composer.strip() == "":
            started = None
            if isinstance(key, Paste) or (key.kind == "text" and not key.char.startswith(prefixes)):
                out.starts.add(offset)
                started = offset
        if offset < ready:
            # Before the ready screen the keys went to start-up dialogs, not the composer;
            # except a paste still going on when it came: it lands in the composer, and by
            # design its message goes without the blocks (README: "A paste you started
            # before the tool was ready"), so that composer's message need not carry them.
            if isinstance(key, Paste) and offset + len(key.content) + 12 > ready:
                composer = key.content.decode("utf-8", "replace")
                unknown = True
            continue
        if isinstance(key, Paste):
            composer += key.content.decode("utf-8", "replace")
        elif key.kind == "text":
            composer += key.char
        elif key.kind == "newline":
            composer += "\n"
        elif key.kind == "backspace":
            composer = composer[:-1]
        elif key.kind == "clear":
            composer = ""
            out.clears.append(offset)
            span = offset + 1
            unknown = False
        elif key.kind in ("esc", "cursor"):
            # Modelled as keeping the composer (the worse case for a second insertion); a
            # message after it need not carry the blocks (a guess may miss, never invent).
            # A cursor key (↑ recalls a message) makes the composer unknown too: with no
            # screen to say it is empty again, nothing is typed next to it.
            unknown = True
        elif key.kind == "enter":
            if composer.strip() in RESETS and not unknown:
                out.resets.append(offset)
            if (started is not None and composer.strip() and out.first_message is None
                    and not unknown):
                out.first_message = (span, offset)
            out.submits.append(offset)
            composer = ""
            started = None
            span = offset + 1
            unknown = False
    return out


def check_invariant(sc: Scenario, to_tool: bytes) -> None:
    adapter = adapter_for(sc.adapter)
    delivery = b"".join(chunk for _, chunk in delivery_chunks(adapter, PREFIX, 0.0))
    positions = split_deliveries(to_tool, sc.user, delivery)
    model = message_starts(sc, tuple(adapter.command_prefixes))
    for pos in positions:
        assert pos in model.starts, f"blocks inserted at user byte {pos}, not where a message starts"
    # An insertion the user cleared before submitting never reached the model.
    kept = []
    for pos in positions:
        nxt_submit = min((s for s in model.submits if s >= pos), default=None)
        cleared = any(c >= pos and (nxt_submit is None or c < nxt_submit) for c in model.clears)
        if not cleared:
            kept.append(pos)
    for k, pos in enumerate(kept):
        resets_before = sum(1 for r in model.resets if r < pos)
        assert k <= resets_before, f"insertion {k + 1} at {pos} with only {resets_before} reset(s) before it"
    if model.first_message is not None:
        # Not only safe but useful: the first message the user submits carries the blocks.
        begin, enter = model.first_message
        assert any(begin <= pos <= enter for pos in kept), (
            f"the first message (user bytes {begin}..{enter}) was submitted without the blocks; "
            f"insertions at {positions}")


# --------------------------------------------------------------------------- the properties

PROPERTY_SETTINGS = settings(
    max_examples=150,
    derandomize=True,  # the same examples on every run and machine: CI is reproducible
    database=None,
    deadline=None,  # a loaded machine must not turn slowness into a failure
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("adapter", ADAPTERS)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_keys_are_never_lost_doubled_or_reordered(adapter: str, data) -> None:
    sc = data.draw(scenarios(adapter))
    check_invariant(sc, Loop(adapter).run(sc))


# --------------------------------------------------------------------------- the oracle itself


def test_oracle_rejects_a_lost_a_doubled_and_a_misplaced_key() -> None:
    """The checks above can fail: a broken tool input is caught."""
    sc = Scenario("demo", [], user=b"ab\r", keys=[(0, _text_key("a")), (1, _text_key("b")),
                                                   (2, Key("enter", b"\r"))], ready_offset=0)
    delivery = b"\x1b[200~" + PREFIX.encode() + b"\x1b[201~"
    check_invariant(sc, delivery + b"ab\r")
    with pytest.raises(AssertionError, match="lost"):
        check_invariant(sc, delivery + b"a")
    with pytest.raises(AssertionError, match="not the user's byte"):
        check_invariant(sc, delivery + b"aab\r")
    with pytest.raises(AssertionError, match="not the user's byte"):
        check_invariant(sc, delivery + b"ba\r")
    with pytest.raises(AssertionError, match="not where a message starts"):
        check_invariant(sc, b"a" + delivery + b"b\r")
    two = Scenario("demo", [], user=b"a\rb", keys=[(0, _text_key("a")), (1, Key("enter", b"\r")),
                                                   (2, _text_key("b"))], ready_offset=0)
    with pytest.raises(AssertionError, match="insertion 2"):
        check_invariant(two, delivery + b"a\r" + delivery + b"b")


# --------------------------------------------------------------------------- shrunk counterexamples


def test_key_typed_while_readiness_is_confirmed() -> None:
    """Found by the property (generic adapter, shrunk): `0` typed 0 s after the ready screen, `0` again later.

    The first `0` passes through while the injector still waits for the
    screen to be quiet (for an unknown TUI a key never skips the quiet
    check). If the screen then shows it at the cursor, it began a message: the
    second `0` must not trigger the delivery (the tool would get `0<blocks>0`:
    blocks after typed text of the same message). If not, it answered what
    was drawn, and the second `0` starts the message.
    """
    keys = [_text_key("0"), _text_key("0")]
    sc = Scenario("aider", [Output(READY_SCREENS["aider"]), GuardsDone(), Read(b"0"), Advance(0.5), Read(b"0")],
                  user=b"00", keys=[(0, keys[0]), (1, keys[1])], ready_offset=0)
    check_invariant(sc, Loop("aider").run(sc))
    # The same with the `0` drawn at the cursor, as a composer echoes it: a begun message.
    echoed = Scenario("aider", [Output(READY_SCREENS["aider"]), GuardsDone(), Read(b"0"), Output(b"0"),
                                Advance(0.5), Read(b"0")],
                      user=b"00", keys=[(0, keys[0]), (1, keys[1])], ready_offset=0)
    assert Loop("aider").run(echoed) == b"00"


def test_an_unknown_tuis_start_up_question_gets_no_blocks_from_a_quick_key() -> None:
    """A key 0 s after an unknown TUI drew a screen (its `(Y)es/(N)o` question) is no reason
    to be ready: the quiet check holds, and the message the key began goes without the blocks.
    The model of the composer follows: a message begun on a screen not quiet yet need not
    carry them, and the next one does."""
    keys = [_text_key("y"), Key("enter", b"\r"), _text_key("h"), _text_key("i"), Key("enter", b"\r")]
    sc = Scenario("aider", [Output(READY_SCREENS["aider"]), GuardsDone(), Read(b"y"), Read(b"\r"),
                            Advance(0.5), Read(b"hi"), Read(b"\r")],
                  user=b"y\rhi\r", keys=list(zip([0, 1, 2, 3, 4], keys)), ready_offset=0)
    out = Loop("aider").run(sc)
    check_invariant(sc, out)
    delivery = b"".join(chunk for _, chunk in delivery_chunks(adapter_for("aider"), PREFIX, 0.0))
    assert out == b"y\r" + delivery + b"hi\r"


def test_ready_screen_in_the_middle_of_a_split_paste() -> None:
    """Found by the property (generic adapter, shrunk): a paste split across two reads, ready in between.

    `ESC[200~` passes through while the tool starts; the ready screen comes
    and stays quiet; `0 ESC[201~` then looks like the first key of a message
    and the blocks land inside the user's paste. Needs the two reads of one
    paste to be further apart than ready_quiet_secs: rare, but the key
    invariant says never.
    """
    paste = Paste(b"0", (0, 1))
    sc = Scenario("aider", [GuardsDone(), Read(b"\x1b[200~"), Output(READY_SCREENS["aider"]), Advance(1.0),
                            Read(b"0\x1b[201~")],
                  user=b"\x1b[200~0\x1b[201~", keys=[(0, paste)], ready_offset=6)
    check_invariant(sc, Loop("aider").run(sc))


def test_keys_after_a_held_clear() -> None:
    """Found by the property (shrunk by hand from hypothesis' case): `a`, Ctrl-C, `b` typed while `a` is held.

    `a` triggers the delivery; Ctrl-C and `b` are held with it. On release
    the injector sees the Ctrl-C, re-arms, and stops looking at the rest of
    the batch, so `b` reaches the (cleared) composer unseen and the next key
    `c` gets the blocks: the tool's composer reads `b<blocks>c`.
    """
    keys = [_text_key("a"), Key("clear", b"\x03"), _text_key("b"), _text_key("c")]
    sc = Scenario("demo", [Output(READY_SCREENS["demo"]), Advance(1.0), GuardsDone(), Read(b"a\x03b"),
                           Advance(2.0), Read(b"c")],
                  user=b"a\x03bc", keys=list(zip([0, 1, 2, 3], keys)), ready_offset=0)
    check_invariant(sc, Loop("demo").run(sc))


def test_a_key_re_held_during_a_release_is_delivered_without_another_key() -> None:
    """Found by the property (codex, shrunk): `0` Ctrl-C in one read, `0` read while they are held.

    On release the Ctrl-C re-arms and the second `0` is held again for a new
    delivery; nothing called the injector again until the user's next key, so
    that `0` stayed held. The session ends here: every byte must have reached
    the tool.
    """
    keys = [_text_key("0"), Key("clear", b"\x03"), _text_key("0")]
    sc = Scenario("codex", [Output(READY_SCREENS["codex"]), Advance(0.0), GuardsDone(), Read(b"0\x03"),
                            Advance(0.0), Read(b"0")],
                  user=b"0\x030", keys=list(zip([0, 1, 2], keys)), ready_offset=0)
    check_invariant(sc, Loop("codex").run(sc))


def test_erased_command_with_a_multibyte_character() -> None:
    """Found with the property's oracle (the first submitted message must carry the blocks), one key per read:
    `/`, `é`, Backspace, Backspace (the composer is empty again), `h`, Enter.

    The injector counts `/é` as 3 bytes and each Backspace as 1, so after two
    Backspaces it still believes a command is being typed; `h` passes
    through and the message is submitted without the blocks.
    """
    keys = [_text_key("/"), _text_key("é"), Key("backspace", b"\x7f"), Key("backspace", b"\x7f"),
            _text_key("h"), Key("enter", b"\r")]
    steps: list = [Output(READY_SCREENS["demo"]), Advance(1.0), GuardsDone()]
    offsets, offset = [], 0
    for key in keys:
        offsets.append(offset)
        offset += len(key.data)
        steps += [Read(key.data), Advance(0.1)]
    sc = Scenario("demo", steps, user=b"".join(k.data for k in keys), keys=list(zip(offsets, keys)),
                  ready_offset=0)
    check_invariant(sc, Loop("demo").run(sc))


def test_an_empty_paste_then_enter_is_not_the_first_message() -> None:
    """Found by the property (gemini, shrunk): an empty bracketed paste, Enter, then `0` Enter.

    The empty paste triggered the delivery and its Enter submitted the blocks alone; `0`, the
    first real message, then went without them. An empty paste types nothing: it triggers
    nothing and makes no submission.
    """
    keys = [Paste(b""), Key("enter", b"\r", ""), _text_key("0"), Key("enter", b"\r", "")]
    sc = Scenario("gemini", [Output(READY_SCREENS["gemini"]), Advance(0.0), GuardsDone(),
                             Read(b"\x1b[200~\x1b[201~\r0\r")],
                  user=b"\x1b[200~\x1b[201~\r0\r", keys=list(zip([0, 12, 13, 14], keys)), ready_offset=0)
    check_invariant(sc, Loop("gemini").run(sc))


@pytest.mark.parametrize("user,keys", [
    (b"\x1b[200~\r\x1b[201~\r0\r", [(0, Paste(b"\r")), (13, Key("enter", b"\r", "")),
                                    (14, _text_key("0")), (15, Key("enter", b"\r", ""))]),
    (b" \r0\r", [(0, _text_key(" ")), (1, Key("enter", b"\r", "")), (2, _text_key("0")),
                 (3, Key("enter", b"\r", ""))]),
])
def test_a_blank_paste_or_spaces_then_enter_is_not_the_first_message(user, keys) -> None:
    """Found by the property (gemini, shrunk): a paste of one newline (or a typed space), Enter,
    then `0` Enter. The blank input triggered the delivery, its Enter submitted the blocks alone,
    and `0`, the first real message, went without them. Blank input is no message."""
    sc = Scenario("gemini", [Output(READY_SCREENS["gemini"]), Advance(0.0), GuardsDone(), Read(user)],
                  user=user, keys=keys, ready_offset=0)
    check_invariant(sc, Loop("gemini").run(sc))


def test_a_paste_going_on_when_the_tool_became_ready_goes_without_the_blocks() -> None:
    """Found by the property (gemini, shrunk), a case of the documented rule, not a bug: `0`
    and a paste begun before the ready screen, which ends after it; another paste; Enter. The
    first paste is in the composer, so that message goes as it is (the record says so)."""
    keys = [(0, _text_key("0")), (1, Paste(b"0", cuts=(0, 1))), (14, Paste(b"0", cuts=(0, 1))),
            (27, Key("enter", b"\r", ""))]
    sc = Scenario("gemini", [GuardsDone(), Read(b"0\x1b[200~0"), Output(READY_SCREENS["gemini"]),
                             Advance(0.0), Read(b"\x1b[201~\x1b[200~0\x1b[201~\r")],
                  user=b"0\x1b[200~0\x1b[201~\x1b[200~0\x1b[201~\r", keys=keys, ready_offset=8)
    loop = Loop("gemini")
    check_invariant(sc, loop.run(sc))
    assert loop.injector.report.status == "pending" and any(
        "paste begun before the composer was ready" in n for n in loop.injector.report.notes)
