"""What a session holds once its record exists; shared by the start, conversation and finish phases.

`Live` is made in one place (`open_live`) with everything the later phases
read: the config, the record, the hook context, the tool's environment.
The two things a later phase adds are named here too (`tool_started`,
`failures`), so no phase has to probe for an attribute another one may
have set.
"""

from __future__ import annotations


TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from wrapagent.session.planning import Launch


class Live:
    """A session with a record: its launch, config, record, hook context and what went wrong."""

    __slots__ = ("launch", "cfg", "record", "ctx", "child_env", "tool_started", "failures", "sweeper",
                 "version_lookup", "recorder")

    def __init__(self, launch: Launch, cfg, record, ctx, child_env: dict[str, str],
                 tool_started: float | None, sweeper) -> None:
        self.launch = launch
        self.cfg = cfg
        self.record = record
        self.ctx = ctx
        self.child_env = child_env  # the adapter's additions go in before the tool starts
        self.tool_started = tool_started  # None until the start phase knows when the tool started
        self.failures: list[str] = []  # said in one line after the tool's screen is gone
        self.sweeper = sweeper  # the abandoned-session sweep's thread, or None
        self.version_lookup = None  # the tool's version, looked up once it runs (`look_up_version`)
        self.recorder = None  # the session's asciicast recorder (`session/recorded.py`), or None

    @property
    def env(self) -> dict[str, str]:
        return self.launch.env

    def log(self, line: str) -> None:
        self.record.log(line)

    def close(self, sweep_wait: float) -> None:
        """Wait for the sweep (its commit must not be cut short), then close the record's log."""
        if self.sweeper is not None:
            self.sweeper.join(timeout=sweep_wait)
        self.record.close()


def look_up_version(live: Live) -> None:
    """Once the tool has been spawned: its version, in a thread (`tool_version`); never raises.

    The record gets the result at the end (`finishing.after`). A tool
    wrapagent brings itself (the demo agent, whose binary is the Python
    interpreter) comes with its release (`RunOptions.tool_version`).
    """
    launch = live.launch
    if launch.opts.argv_override is not None:
        live.record.record["tool_version"] = launch.opts.tool_version
        return
    if live.version_lookup is not None:
        return
    from wrapagent.session.tool_version import start_lookup

    live.version_lookup = start_lookup(launch.executable, live.child_env, launch.adapter.name)


def open_live(launch: Launch, cfg, session_id: str, started: float | None = None) -> Live:
    """The session's folder, first record and running marker, the sweep and the hook context.

    A record that cannot be written (an unwritable state folder, a full
    disk) does not stop the tool: it runs without one, and wrapagent says
    so once, now if the tool has not started yet, else at the end.
    """
    from wrapagent.history.records import Session as Record
    from wrapagent.session.resolve import nested_depth

    record = Record.create(tool=launch.name, transport=launch.adapter.name,
                           argv=[launch.opts.tool, *launch.opts.args],
                           executable=launch.executable, cwd=launch.cwd_str,
                           project_root=launch.root_str, env=launch.env,
                           mode="pty" if launch.interactive else "pipe",
                           session_id=session_id, started_at=started, without_folder=True,
                           depth=nested_depth(launch.env))
    sweeper = _start_sweep(record) if record.unavailable is None else None
    ctx = _guard_context(launch, record)
    record.record["is_resume"] = ctx.is_resume
    live = Live(launch, cfg, record, ctx, launch.child_env, started, sweeper)
    if record.unavailable is not None:
        note = f"{launch.name} runs without a session record: {record.unavailable}"
        if started is None:
            from wrapagent.session.planning import stderr_line

            stderr_line(f"wrapagent: {note}")
        else:  # the tool's screen is up: at the end
            live.failures.append(note)
    return live


def _start_sweep(record):
    """Sessions left `running` by a killed wrapagent become `abandoned`, in a thread.

    Only when another session's running marker exists (one listdir); the
    thread runs beside the tool and is waited for at the end, so its commit
    is never cut short by wrapagent exiting.
    """
    from wrapagent.history.records import running_markers, sweep_abandoned

    if not running_markers(record.root, record.id):
        return None
    import threading

    def sweep() -> None:
        try:
            sweep_abandoned(record.root, record.id, log=record.log)
        except Exception as exc:  # never the session's end
            record.log(f"warning: looking for abandoned sessions failed: {exc!r}")

    thread = threading.Thread(target=sweep, name="wrapagent-sweep", daemon=True)
    thread.start()
    return thread


def _guard_context(launch: Launch, record):
    from wrapagent.hooks.context import GuardContext

    return GuardContext(project_root=launch.project_root, cwd=launch.cwd, tool=launch.adapter.name,
                        session_id=record.id, is_resume=launch.adapter.is_resume(launch.opts.args),
                        session_dir=record.dir, sessions_root=record.root)

