"""A session's recording and its entry in the search index: started with the tool, closed after it.

The recorder (`history/recording.py`) is handed to the proxy as its output
observer; the turn tracker puts a marker at each submission. After the tool:
the recording is closed and compressed (its numbers into the record as
`recording`), old recordings expire with the checkpoints' `keep_days`, and
the session's conversation goes into the search index (`history/search_index.py`).
None of it may fail the session: problems are warnings in the record.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from wrapagent.session.live import Live


def wants_recording(launch, cfg) -> bool:
    """A terminal session with `[record] enabled` (the default)."""
    return bool(launch.interactive and cfg.record.enabled)


def make_recorder(session_id: str, launch, cfg):
    """(recorder, None) for a terminal session with `[record] enabled`; (None, why not) else.

    A tool that goes first (`planning.tool_goes_first`) is recorded from its
    first byte by a `late_turns.EarlyOutput` instead, its recorder made by
    `open_early` once the record exists; its turns are followed by an
    interceptor attached then too (`late_turns`).
    """
    if not wants_recording(launch, cfg):
        return None, None
    from wrapagent.history import recording

    rows, cols = _start_size()
    return recording.start(session_id, cfg.record, launch.env, rows, cols, title=_title(launch))


def open_early(early, session_id: str, launch, cfg):
    """`make_recorder`'s answer for a tool that went first, recorded so far by `early`
    (`late_turns.EarlyOutput`): the recorder with its file made and what the tool wrote until
    now, or None (not wanted; or the file cannot be made: then why not)."""
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
        from wrapagent.history.recording_files import expire

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
