"""Turns and recording of a session whose tool went first: stand-ins until the record exists.

When nothing has to come before the tool (`planning.tool_goes_first`: the
default configuration outside a git project), the tool starts before
wrapagent has loaded its session modules, and the record is made while the
tool draws its first screen. The recording still wants a marker at each
turn's start (`recorded.on_turn`), and turns are told by the conversation's
interceptor, which sees the keys and the screen. Making that interceptor
before the tool would cost the start what going first saves (~350 ms
measured), so the proxy gets a `LateInterceptor` instead: a stand-in with
no imports of its own that passes every key through untouched and keeps
what it sees (the tool's output, the keys, resizes), in order, with their
times.

Once the record exists (`after_start`, after the tool's first output) the
conversation's interceptor is made and `attach` hands it everything seen
so far, on the main thread, with the times it happened: it reaches the same
state (the same readiness, the same composer) as if it had watched from the
first byte. The proxy's threads never wait for that catching up: what comes
meanwhile is appended and handed over too, and the stand-in starts
forwarding, under its own lock, only once nothing is left. From then on each
call costs one more Python call.

Its recording has a stand-in of the same kind (`EarlyOutput`): the
recorder's own module loads after the first byte, and the stand-in keeps
the tool's output with its times until then.

A stand-in never attached (the record could not be made) gives up past
MAX_KEPT_BYTES of output, and one whose catching up takes longer than
CATCH_UP_SECS (a tool that floods its terminal from the start: the
interceptor's screen emulator reads ~150 KB/s) gives up too, so the main
thread is soon back to its signals: it says it is done, and the proxy drops
it. The session then has no turn markers, and its log says why.
"""

import _thread
from time import monotonic

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Any, Callable

    from wrapagent.history.recording import Recorder
    from wrapagent.session.live import Live

MAX_KEPT_BYTES = 4 * 1024 * 1024
"""Output kept for the interceptor to catch up on; past it the stand-in gives up (no markers).
A TUI's first screens are tens of KiB, and the record exists well within a second."""
CATCH_UP_SECS = 2.0
"""At most this long on the main thread handing the interceptor what it missed."""


class LateInterceptor:
    """The proxy's interceptor until the real one is `attach`ed; then it forwards (module docstring).

    Every proxy call but the `last_output` store comes under the proxy's own
    lock (`to_child.ToChild.lock`); `attach` comes from the main thread
    outside it, so what the two share (`_kept`, `_real`) has a lock of its own.
    """

    def __init__(self, max_kept: int = MAX_KEPT_BYTES) -> None:
        self._lock = _thread.allocate_lock()
        self._kept: list[tuple[Any, ...]] | None = []
        """("o", data, now), ("i", data, now), ("r", rows, cols), in the order the proxy saw them."""
        self._kept_bytes = 0
        self._max_kept = max_kept
        self._real: Any = None
        self.gave_up: str | None = None
        """Why the stand-in stopped keeping (then it is `done` and the proxy drops it)."""
        self._last_output = 0.0
        self._screen_notice = b""

    # -- the proxy's interceptor contract (proxy/to_child.py) -----------------------

    @property
    def done(self) -> bool:
        real = self._real
        return real.done if real is not None else self.gave_up is not None

    @property
    def watch_output(self) -> bool:
        real = self._real
        return real.watch_output if real is not None else True  # every chunk is kept until then

    @property
    def last_output(self) -> float:
        real = self._real
        return real.last_output if real is not None else self._last_output

    @last_output.setter
    def last_output(self, value: float) -> None:
        real = self._real
        if real is not None:
            real.last_output = value
        else:
            self._last_output = value

    @property
    def screen_notice(self) -> bytes:
        real = self._real
        return getattr(real, "screen_notice", b"") if real is not None else b""

    @screen_notice.setter
    def screen_notice(self, value: bytes) -> None:
        real = self._real
        if real is not None:
            real.screen_notice = value

    def on_input(self, data: bytes, now: float) -> bytes:
        real = self._real
        if real is None and self._keep(("i", data, now), 0):
            return data  # the tool has the key at once: nothing is ever held before the attach
        return real.on_input(data, now) if real is not None else data

    def on_output(self, data: bytes, now: float) -> None:
        real = self._real
        if real is None and self._keep(("o", data, now), len(data)):
            return
        if real is not None:
            real.on_output(data, now)

    def on_resize(self, rows: int, cols: int) -> None:
        real = self._real
        if real is None and self._keep(("r", rows, cols), 0):
            return
        if real is not None and hasattr(real, "on_resize"):
            real.on_resize(rows, cols)

    def poll(self, now: float) -> bytes:
        real = self._real
        return real.poll(now) if real is not None else b""

    def deadline(self) -> "float | None":
        real = self._real
        return real.deadline() if real is not None else None

    def wake_fd(self) -> "int | None":
        real = self._real
        return real.wake_fd() if real is not None else None

    # -- before the attach -------------------------------------------------------------

    def _keep(self, event: "tuple[Any, ...]", size: int) -> bool:
        """Keep a call for the interceptor to come; False when it is attached (forward it now)."""
        with self._lock:
            if self._real is not None:
                return False
            if self._kept is None:
                return True  # gave up: the call is dropped, as a dropped interceptor's would be
            if self._kept_bytes + size > self._max_kept:
                self._kept = None
                self.gave_up = (f"more than {self._max_kept} bytes of output came before the "
                                "session's record existed")
                return True
            self._kept.append(event)
            self._kept_bytes += size
            return True

    def give_up(self, why: str) -> None:
        """No interceptor will come: the proxy drops the stand-in at its next call."""
        with self._lock:
            if self._real is None and self.gave_up is None:
                self._kept = None
                self.gave_up = why

    def attach(self, real: "Any", budget: float = CATCH_UP_SECS) -> bool:
        """Hand `real` all calls seen so far, in order, then forward to it; False if it gave up.

        Called on the main thread outside the proxy's lock: the copy threads keep
        appending meanwhile, and the forwarding starts when nothing is left.
        Bytes `real` would send for those past calls are dropped: the keys
        already reached the tool (an interceptor that only follows turns sends none).
        """
        until = monotonic() + budget
        while True:
            with self._lock:
                kept = self._kept
                if kept is None:
                    return False
                if not kept:
                    self._kept = None
                    self._real = real
                    return True
                self._kept = []
            for event in kept:
                _replay(real, event)
            if monotonic() > until:
                self.give_up(f"catching up on the output before the session's record took over {budget:g} s")


EARLY_MAX_BYTES = 16 * 1024 * 1024
"""Output an `EarlyOutput` keeps at most; past it chunks are dropped and counted (as the recorder's own
backlog limit does: the recording's marker then says how much)."""


class EarlyOutput:
    """The recording of a tool that goes first, until its recorder exists: what it writes, timed as it comes.

    The proxy's output observer from the tool's first byte, here beside the
    interceptor's stand-in: nothing of the recording is loaded for it
    (`session.recorded`, `history.recording` and its package: ~1.7 ms
    measured between the fork and the first byte); `recorded.open_early`
    makes the recorder after that byte and `hand_to` gives it what was
    kept, in order, then every chunk (one Python call more per chunk).
    Output comes from the output thread, resizes and the hand-over from the
    main thread: a lock.
    """

    def __init__(self, rows: int, cols: int) -> None:
        self.started = monotonic()
        """The recording's time 0: the tool's start."""
        self.rows, self.cols = rows, cols
        self._lock = _thread.allocate_lock()
        self._kept: "list[tuple]" = []
        """`(at, chunk)` and `(at, "r", "COLSxROWS")`, in order: the recorder's own items."""
        self._kept_bytes = 0
        self.dropped = 0
        self._handed = False
        self._target: "Recorder | None" = None

    def __call__(self, data: bytes) -> "Recorder | Callable[[bytes], None] | None":
        """A chunk the tool wrote (already shown); from the output thread.

        Once handed over it returns what takes its place as the proxy's output
        observer (`proxy.output_thread`): the recorder, or `_unrecorded`.
        """
        target = self._target
        if target is None:
            with self._lock:
                if not self._handed:
                    if self._kept_bytes + len(data) > EARLY_MAX_BYTES:
                        self.dropped += len(data)
                    else:
                        self._kept_bytes += len(data)
                        self._kept.append((monotonic(), data))
                    return None
                target = self._target
            if target is None:  # no recording after all
                return _unrecorded
        target(data)
        return target

    def resized(self, rows: int, cols: int) -> None:
        """The user's terminal changed size; from the main thread."""
        target = self._target
        if target is None:
            with self._lock:
                if not self._handed:
                    self._kept.append((monotonic(), "r", f"{cols}x{rows}"))
                    return
                target = self._target
            if target is None:
                return
        target.resized(rows, cols)

    def hand_to(self, recorder: "Recorder | None") -> None:
        """What was kept to `recorder` (None: dropped, no recording), and every later call after it."""
        with self._lock:
            kept, self._kept = self._kept, []
            if recorder is not None:
                recorder.take_early(kept, self.dropped)
            self._target = recorder
            self._handed = True


def follow_turns(live: "Live", stand_in):
    """A tool that went first: the conversation that marks its turns, its interceptor handed to
    the proxy's stand-in (`LateInterceptor`); None when there is none.

    Runs on the main thread once the record exists (`after_start`): the
    interceptor catches up on what the tool showed and the user typed so far.
    """
    from wrapagent.session.conversation import Conversation

    try:
        conversation = Conversation.start(live, None)
    except Exception as exc:  # never the end of the session: it has no markers, and says so
        stand_in.give_up(f"no conversation: {exc!r}")
        live.record.warn(f"recording: turns not followed: {exc!r}")
        return None
    if conversation is None:
        stand_in.give_up("nothing follows the turns")
        return None
    if not stand_in.attach(conversation.interceptor):
        live.record.log(f"recording: turns not followed: {stand_in.gave_up}")
    return conversation


def _replay(real: "Any", event: "tuple[Any, ...]") -> None:
    """One call as the proxy made it: `poll` follows every input and output call there too."""
    kind = event[0]
    if kind == "o":
        real.on_output(event[1], event[2])
        real.poll(event[2])
    elif kind == "i":
        real.on_input(event[1], event[2])
        real.poll(event[2])
    elif hasattr(real, "on_resize"):
        real.on_resize(event[1], event[2])


def _unrecorded(data: bytes) -> None:
    """The output observer of a session not recorded after all (`EarlyOutput` handed to no recorder)."""
