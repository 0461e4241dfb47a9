"""A session's recording and its entry in the search index: started with the tool, closed after it.

The recorder (`history/recording.py`) is handed to the proxy as its output
observer; the turn tracker puts a marker at each submission. After the tool:
the recording is closed and compressed (its numbers into the record as
`recording`), old recordings expire with the checkpoints' `keep_days`, and
the session's conversation goes into the search index (`history/search_index.py`).
None of it may fail the session: problems are warnings in the record.
"""

import _thread
from time import monotonic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from wrapagent.history.recording import Recorder
    from wrapagent.session.live import Live

EARLY_MAX_BYTES = 16 * 1024 * 1024
"""Output an `EarlyOutput` keeps at most; past it chunks are dropped and counted (as the recorder's own
backlog limit does: the recording's marker then says how much)."""


class EarlyOutput:
    """The recording of a tool that goes first, until its recorder exists: what it writes, timed as it comes.

    The proxy's output observer from the tool's first byte. Nothing of the
    recording is loaded for it (`history.recording`, its package: ~1.5 ms
    between the fork and the first byte); `open_early` makes the recorder
    after that byte and `hand_to` gives it what was kept, in order, then
    forwards every chunk (one Python call more per chunk). Output comes from
    the output thread, resizes and the hand-over from the main thread: a lock.
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

    def __call__(self, data: bytes) -> None:
        """A chunk the tool wrote (already shown); from the output thread."""
        target = self._target
        if target is None:
            with self._lock:
                if not self._handed:
                    if self._kept_bytes + len(data) > EARLY_MAX_BYTES:
                        self.dropped += len(data)
                    else:
                        self._kept_bytes += len(data)
                        self._kept.append((monotonic(), data))
                    return
                target = self._target
            if target is None:  # no recording after all
                return
        target(data)

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


def wants_recording(launch, cfg) -> bool:
    """A terminal session with `[record] enabled` (the default)."""
    return bool(launch.interactive and cfg.record.enabled)


def make_recorder(session_id: str, launch, cfg):
    """(recorder, None) for a terminal session with `[record] enabled`; (None, why not) else.

    A tool that goes first (`planning.tool_goes_first`) gets an `early_recorder`
    instead, recording from its first byte before its record exists; its turns
    are followed by an interceptor attached once the record exists (`late_turns`).
    """
    if not wants_recording(launch, cfg):
        return None, None
    from wrapagent.history import recording

    rows, cols = _start_size()
    return recording.start(session_id, cfg.record, launch.env, rows, cols, title=_title(launch))


def early_recorder() -> EarlyOutput:
    """The recording of a tool that goes first (`planning.tool_goes_first`), from its first byte.

    Only an `EarlyOutput` until `open_early` (after the tool's first
    output, with the config, which may not be loaded yet, and the record):
    the recorder, its file, the writer thread and `json` do not hold the
    first byte back. Its turns are marked once the record exists
    (`late_turns`: a stand-in interceptor keeps what the proxy sees until then).
    """
    rows, cols = _start_size()
    return EarlyOutput(rows, cols)


def open_early(early: EarlyOutput, session_id: str, launch, cfg):
    """`make_recorder`'s answer for an `early_recorder`: the recorder with its file made and what
    the tool wrote so far, or None (not wanted; or the file cannot be made: then why not)."""
    if not wants_recording(launch, cfg):
        early.hand_to(None)
        return None, None
    from wrapagent.history import recording

    recorder = recording.prepare(session_id, launch.env, early.rows, early.cols, title=_title(launch),
                                 started=early.started)
    early.hand_to(recorder)
    why_not = recording.open_prepared(recorder, launch.env, cfg.record.max_bytes)
    if why_not is not None:
        early.hand_to(None)
        return None, why_not
    return recorder, None


def _start_size() -> "tuple[int, int]":
    from wrapagent.proxy.spawn import start_size

    return start_size()


def _title(launch) -> str:
    return f"{launch.name} in {launch.root_str}"


def marks_turns(launch, cfg) -> bool:
    """Whether a recording follows the turns of this tool: an agent program (`inject/agents.py`:
    the known CLIs and those `[agents] programs` names) in a terminal session with `[record]`.

    A turn is a message submitted to an agent's composer. A shell, a pager or `cat` has
    none, and the interceptor that would look for one feeds its screen emulator every byte
    until a composer shows, which for them is never (~150 KB/s: a `cat` of a big file would
    crawl).
    """
    if not wants_recording(launch, cfg):
        return False
    from wrapagent.inject.agents import is_agent

    return is_agent(launch.adapter.name, cfg.agents)


def start_recording(live: "Live") -> None:
    """Create the recorder of a terminal session (`live.recorder`), at the tool's start size."""
    recorder, why_not = make_recorder(live.record.id, live.launch, live.cfg)
    if why_not is not None:
        live.record.warn(why_not)
    live.recorder = recorder


def on_turn(live: "Live"):
    """The turn tracker's callback: a marker `turn N: first words` in the recording; None without one."""
    recorder = live.recorder
    if recorder is None:
        return None
    from wrapagent.history.recording import marker_label

    def mark(turn: int, text: str, by: str | None) -> None:
        recorder.marker(marker_label(turn, text, by))

    return mark


def finish_recording(live: "Live") -> None:
    """Close and compress the recording (its numbers in the record); expire old ones."""
    recorder, live.recorder = live.recorder, None
    record = live.record
    if recorder is not None:
        try:
            info = recorder.close(record.record.get("exit_code"))
            record.record["recording"] = info
            for key in ("note", "error"):
                if info.get(key):
                    record.warn(f"recording: {info[key]}")
            if info.get("capped"):
                record.log(f"recording: stopped at its size cap ({live.cfg.record.max_bytes} bytes)")
        except Exception as exc:
            record.warn(f"recording: {exc!r}")
    try:
        from wrapagent.history.recording import expire

        gone = expire(live.cfg.checkpoints.keep_days, live.env)
        if gone:
            record.log(f"recording: {len(gone)} recording(s) older than "
                       f"{live.cfg.checkpoints.keep_days:g} days deleted")
    except Exception as exc:
        record.warn(f"recording: expiry: {exc!r}")


def index_session(live: "Live") -> None:
    """The session's messages and replies into the search index (after the transcripts were copied)."""
    record = live.record
    if record.unavailable is not None:
        return
    try:
        from wrapagent.history import search_index

        search_index.index_record(record.record, record.dir, live.env)
    except Exception as exc:
        record.warn(f"search index: {exc!r}")
