"""One wrapped session, end to end: the phases in their order.

Order (CSA's hooks semantics): session record created → pre_run → the tool
(guards run concurrently with its start-up) → record saved with exit code and
resources → post_run → session_complete (default: commit the session into the
sessions repository, under a lock). Nothing is written to the terminal while
the tool's screen is up; hook output goes to the session log, and at most one
summary line is printed after the tool exits.

The phases, each in its module, each handing the next what it needs:
`planning` (config, adapter, what must come before the tool: a `Launch`),
`live.open_live` (record, sweep, hook context: a `Live`), `starting`
(pre_run's refusal aside: the `before` checkpoint and the tool in its mode),
`conversation` (per message and per turn, in a terminal session),
`finishing` (post_run, transcripts, `after` checkpoint, session_complete).
"""

from wrapagent.session.planning import Launch, config_can_wait, find_project_root, load_config, tool_goes_first

SWEEP_WAIT_SECS = 90.0  # at the end, for the abandoned-session sweep (bounded by the 60 s commit lock)


class Session:
    """A session to run (`opts`: a launch.RunOptions); `run` takes it through its phases."""

    def __init__(self, opts, env: "dict[str, str]", child_env: "dict[str, str]",
                 executable: str, argv: "list[str]", interactive: bool) -> None:
        self.launch = Launch(opts, env, child_env, executable, argv, interactive)

    @property
    def env(self) -> "dict[str, str]":
        return self.launch.env

    def tool_goes_first(self, cfg) -> bool:
        """Nothing of this session has to happen before the tool starts (`planning.tool_goes_first`)."""
        return tool_goes_first(self.launch, cfg)

    def run(self) -> int:
        """The session; a SIGTERM or SIGHUP while wrapagent waits on a hook ends that hook's
        process group and closes the record before wrapagent dies of the signal (`_Terminated`)."""
        with _TerminatedRaised() as terminated:
            try:
                return self._run()
            except _Terminated as exc:
                terminated.signum = exc.signum
        return 128 + terminated.signum  # not reached: `_TerminatedRaised` re-sends the signal

    def _run(self) -> int:
        from wrapagent.paths import new_session_id  # (`history.ids`: two modules more before the tool)

        launch = self.launch
        find_project_root(launch)
        # No config file, and the defaults let the tool go first: the config loads once it runs.
        cfg = None if config_can_wait(launch) else load_config(launch)
        session_id = new_session_id()
        launch.child_env["WRAPAGENT_SESSION_ID"] = session_id
        opened: list = []  # the Live, once its record exists (the tool-first order makes it in a callback)
        try:
            if cfg is None or tool_goes_first(launch, cfg):
                started = _spawn_first(launch, session_id)
                if started is not None:
                    early = _early_recorder(launch, cfg)  # made while the exec runs
                    output = _start_output(started[0], early)
                    if _exec_checked(started[0], output):
                        return _run_tool_first(launch, cfg, session_id, started, output, opened)
            if cfg is None:
                cfg = load_config(launch)  # no file: nothing printed, the defaults
            return _run_in_order(launch, cfg, session_id, opened)
        finally:
            from wrapagent.session.finishing import end_running_hooks

            end_running_hooks(opened[0] if opened else None, "the session ended")
            if opened and opened[0].version_lookup is not None:
                opened[0].version_lookup.result(wait=0)  # `after` did not come: no `--version` outlives us
            if opened:
                opened[0].close(SWEEP_WAIT_SECS)


class _Terminated(BaseException):
    """SIGTERM or SIGHUP arrived while no tool held the terminal: unwind as an interrupt would."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _TerminatedRaised:
    """SIGTERM and SIGHUP raise `_Terminated` in the main thread for the session's span.

    With their default action wrapagent died on the spot while it waited on
    pre_run, guards or post_run: the hook's own process group (a session of
    its own, no terminal to hang up) ran on with no timeout, and so did the
    hooks of a wrapagent that a hook had started. Raised instead, the hook
    runner kills the group on the way out and the record is closed; then the
    signal is sent again with its default action, so the exit is the same.
    While the tool runs the proxy forwards these signals to it (its own
    handlers, restored after), and after the tool ended SIGHUP is ignored
    (`events.HangupIgnored`): both stay as they are. A signal the parent set
    to be ignored (`nohup`) stays ignored.
    """

    def __enter__(self) -> "_TerminatedRaised":
        signal = _signal_module()

        self.signum = 0
        self._old: dict[int, object] = {}
        raised = False

        def handler(signum: int, frame: object) -> None:
            nonlocal raised
            if not raised:  # once: a second signal must not cut the clean-up short
                raised = True
                raise _Terminated(signum)

        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                if signal.getsignal(sig) == signal.SIG_DFL:
                    self._old[sig] = signal.signal(sig, handler)
            except (ValueError, OSError):  # not the main thread: leave the defaults
                pass
        return self

    def __exit__(self, *exc: object) -> None:
        import os

        signal = _signal_module()
        for sig, old in self._old.items():
            signal.signal(sig, old)  # type: ignore[arg-type]
        if self.signum:
            signal.signal(self.signum, signal.SIG_DFL)
            os.kill(os.getpid(), self.signum)


def _signal_module():
    """The C module `_signal`: `signal` imports `enum` (and with it `collections`, `functools`: ~10 ms)
    for its IntEnums, and this runs before the tool starts."""
    try:
        import _signal

        return _signal
    except ImportError:  # pragma: no cover - an interpreter without it
        import signal

        return signal


def _spawn_first(launch: Launch, session_id: str):
    """The tool, started before the record exists (`planning.tool_goes_first`); (child, start time) or None.

    None when its record folder cannot be made: the usual order then
    reports it (the tool runs without a record). Whether the tool's exec
    succeeded is checked by the caller (`Child.check_exec`) once it has
    loaded what it needs meanwhile. Here rather than in `starting`, the
    start phase of the usual order: one module fewer before the tool starts.
    """
    import time

    from wrapagent.paths import make_session_dir, sessions_root_str

    # The one thing of the record that can fail for the user to fix: before the tool.
    try:
        make_session_dir(sessions_root_str(launch.root_str, launch.env), session_id, launch.env)
    except Exception as exc:
        if _is_wrapagent_error(exc):
            return None
        raise

    from wrapagent.proxy import spawn

    started = time.time()
    try:
        return spawn.start(launch.argv, env=launch.child_env), started
    except Exception as exc:
        if _is_wrapagent_error(exc):
            return None
        raise


def _is_wrapagent_error(exc: BaseException) -> bool:
    """`isinstance(exc, WrapagentError)`, its module loaded only when something failed."""
    from wrapagent.errors import WrapagentError

    return isinstance(exc, WrapagentError)


def _exec_succeeded(child) -> bool:
    """Whether a tool started first exec'd; else the usual order reports the failure in the record.

    Asked once the modules of the session's run are loaded: they load
    while the tool's exec runs.
    """
    from wrapagent.proxy import pty_loop  # noqa: F401 - loaded while the exec runs

    try:
        child.check_exec()
    except Exception as exc:
        if _is_wrapagent_error(exc):
            return False
        raise
    return True


def _early_recorder(launch: Launch, cfg):
    """What records a tool that goes first until its recorder exists (`late_turns.EarlyOutput`),
    or None when `cfg` wants no recording.

    With `cfg` None (the defaults, not loaded yet) it is made, and dropped
    later if the config says so (`recorded.open_early`). Nothing of the
    recorder loads for it: its module comes with the setup, after the first byte.
    """
    if cfg is not None:  # a config file was loaded: the recorder's modules are no cost worth saving here
        from wrapagent.session.recorded import wants_recording

        if not wants_recording(launch, cfg):
            return None
    from wrapagent.proxy.spawn import start_size
    from wrapagent.session.late_turns import EarlyOutput

    rows, cols = start_size()
    return EarlyOutput(rows, cols)


def _exec_checked(child, output) -> bool:
    """`_exec_succeeded`, and an early output thread stopped and the terminal given back if the
    check is interrupted (a SIGTERM raised as `_Terminated`): nothing will adopt them."""
    try:
        return _exec_succeeded(child)
    except BaseException:
        output.abandon()
        raise


def _start_output(child, early):
    """The tool's output copied from now on (`proxy.output_start`), before the proxy's other modules
    load, to the screen and to `early` (the recording's stand-in, or None).

    A recording marks each turn: the interceptor that follows them comes with the record, and
    catches up on what it missed (`late_turns`); until then a stand-in keeps what it sees.
    """
    from wrapagent.proxy import output_start

    stand_in = None
    if early is not None:
        from wrapagent.session.late_turns import LateInterceptor

        stand_in = LateInterceptor()
    return output_start.start(child, on_output=early, interceptor=stand_in)


def _run_tool_first(launch: Launch, cfg, session_id: str, started, output, opened: list) -> int:
    """The session of a tool already started: record, sweep and context once its first output is out.

    `cfg` is None when it is the defaults (`planning.config_can_wait`): it
    is made then too. `output`: its output thread (`_start_output`), with the recording's stand-in
    (`early`, or None: its recorder and file come with the record) and the turns' stand-in.
    """
    from wrapagent.proxy import pty_loop

    child, started_at = started
    early, stand_in = output.on_output, output.interceptor
    conversation: list = []

    def setup() -> None:  # once the tool's first output is out: its modules load then too
        from wrapagent.session.live import look_up_version, open_live
        from wrapagent.session.planning import defaults_config
        from wrapagent.session.recorded import open_early
        from wrapagent.session.starting import history_before

        config = defaults_config(launch) if cfg is None else cfg
        if stand_in is not None:
            _no_turns_to_follow(launch, config, stand_in)
        live = open_live(launch, config, session_id, started_at)
        opened.append(live)
        live.record.log(f"{launch.name} started first: nothing had to come before it")
        if early is not None:
            live.recorder, why_not = open_early(early, session_id, launch, config)
            if why_not is not None:
                live.record.warn(why_not)
        look_up_version(live)
        history_before(live)  # records why there is no checkpoint
        if stand_in is not None:
            _follow_late_turns(live, config, stand_in, conversation)

    try:
        try:
            result = pty_loop.proxy(child, after_start=setup, started=output)
        finally:
            if conversation and conversation[0] is not None:
                conversation[0].report()
    except BaseException as exc:
        if opened:
            from wrapagent.session.finishing import tool_failed

            tool_failed(opened[0], 1, f"wrapagent failed while the tool was running: {exc!r}")
        raise
    from wrapagent.session.finishing import after, tool_ended

    live = opened[0]
    tool_ended(live, result)
    after(live, result.exit_code)
    return result.exit_code


def _no_turns_to_follow(launch: Launch, config, stand_in) -> None:
    """Drop the stand-in at once when no turns will be followed (not an agent program, or no
    recording wanted): until then every output chunk is copied to it, a cost a `cat` of a big
    file pays in throughput for as long as the record takes to make (~0.1 s)."""
    from wrapagent.session.recorded import marks_turns, wants_recording

    if not wants_recording(launch, config):
        stand_in.give_up("no recording")
    elif not marks_turns(launch, config):
        stand_in.give_up("not an agent program: its recording has no turns")


def _follow_late_turns(live, config, stand_in, conversation: list) -> None:
    """A tool that went first: its turns followed from here (`late_turns`), if its recording marks them;
    else the stand-in is told no interceptor comes, and the proxy drops it."""
    if stand_in.gave_up is not None:
        return  # `_no_turns_to_follow`
    if live.recorder is None:
        stand_in.give_up("no recording")
    else:
        from wrapagent.session.late_turns import follow_turns

        conversation.append(follow_turns(live, stand_in))


def _run_in_order(launch: Launch, cfg, session_id: str, opened: list) -> int:
    """Record, pre_run (which may refuse), the `before` checkpoint, the tool, what comes after."""
    from wrapagent.errors import WrapagentError
    from wrapagent.session.events import refused, run_event
    from wrapagent.session.finishing import after, tool_failed
    from wrapagent.session.live import open_live
    from wrapagent.session.starting import history_before, run_tool

    live = open_live(launch, cfg, session_id)
    opened.append(live)
    pre_run = run_event(live, "pre_run", None)
    if pre_run is not None and pre_run.refuses():
        return refused(live, pre_run)
    history_before(live)
    try:
        result = run_tool(live)
    except WrapagentError as exc:
        # The tool could not start (e.g. a missing #! interpreter): the
        # session still ends properly, with the shell's exit code.
        tool_failed(live, exc.exit_code, exc.message)
        after(live, exc.exit_code)
        raise
    except BaseException as exc:
        tool_failed(live, 1, f"wrapagent failed while the tool was running: {exc!r}")
        raise
    after(live, result.exit_code)
    return result.exit_code
