"""The conversation phase of an interactive session: what happens per message and per turn.

The interceptor watches the user's keys and the tool's screen; this module
gives it the blocks for the first message of each conversation (the guards
run in a thread while the tool starts or the user types), runs the guards
again after a reset command, runs the `every_message` guards for each later
message, follows the turns, runs the stop check and fires waiting_for_input
when the agent stops (`stop_gate`), and writes what happened into the record
when the tool has exited.

`every_message` guards run when the first key of a later message arrives
(the key is held meanwhile, as for the first message), not ahead of it: the
point of such a guard is a value as of the message (the time, the git state
after the agent's edits and yours), and a run ahead would have to guess when
it went stale. Built-in guards take a few milliseconds; a slow command guard
is felt on that key, up to its timeout.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from wrapagent.session.live import Live


WAITING_CLOSE_SECS = 3.0
"""After the hooks were ended at the tool's exit, how long a waiting_for_input run gets to report."""


class _Prefix:
    """The injected prefix, computed in a background thread while the tool starts.

    A reset starts a new generation: a guard thread of an older one that
    finishes late is ignored. The lock keeps a late `set` from writing to a
    wake fd number that `close` already gave back (it could be reused).
    """

    def __init__(self) -> None:
        import threading  # ~2-3 ms: only full mode with injection needs it

        self.wake_r = -1
        self.wake_w = -1
        self.value: str | None = None
        self.done = threading.Event()
        self.generation = 0
        self.start_later: Callable[[], None] | None = None
        """Set for a later message: its guards start on the first `get_nowait` (its first key)."""
        self._lock = threading.Lock()

    def open_wake(self) -> None:
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)

    def set(self, value: str, generation: int = 0) -> None:
        with self._lock:
            if generation != self.generation:
                return
            self.value = value
            self.done.set()
            if self.wake_w >= 0:
                try:
                    os.write(self.wake_w, b"x")
                except OSError:
                    pass

    def get_nowait(self) -> str | None:
        if self.done.is_set():
            return self.value
        start, self.start_later = self.start_later, None
        if start is not None:
            start()
        return None

    def poke(self) -> None:
        """Wake the proxy's main thread (the outgoing queue has a message)."""
        with self._lock:
            if self.wake_w >= 0:
                try:
                    os.write(self.wake_w, b"x")
                except OSError:
                    pass

    def reset(self) -> int:
        """A new conversation: no prefix until its guards have run again; returns its generation."""
        with self._lock:
            self.generation += 1
            self.done.clear()
            self.value = None
            self.start_later = None
            return self.generation

    def close(self) -> None:
        with self._lock:
            fds, self.wake_r, self.wake_w = (self.wake_r, self.wake_w), -1, -1
        for fd in fds:
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass


def undo_notices(live: Live) -> bool:
    """An interactive session with turn checkpoints: `wrapagent undo` may leave its next message a
    block even when no guard or pre_session is configured (later messages are armed for it)."""
    info = live.record.record.get("checkpoints")
    return bool(live.launch.interactive) and isinstance(info, dict) and info.get("status") == "taken"


def undo_notice(live: Live) -> str:
    """The `<prompt-guard name="undo">` block, once, when `wrapagent undo`/`redo` changed files
    while this session ran (the notice it left in the session folder, taken and removed here)."""
    from wrapagent.history.turn_checkpoints import take_notice
    from wrapagent.inject.blocks import build_prefix

    notice = take_notice(str(live.record.dir)) if live.record.unavailable is None else None
    if notice is None:
        return ""
    what, files = notice
    shown = "\n".join(f"- {f}" for f in files[:50]) + (f"\n… and {len(files) - 50} more" if len(files) > 50 else "")
    body = (f"The user ran `wrapagent {what}` since your last turn: these files were put back as they "
            f"were, the work tree no longer holds what you last saw. Look at them again before going on."
            f"\n{shown}" if files else f"The user ran `wrapagent {what}` since your last turn (no file changed).")
    return build_prefix("", [("undo", body)])


def collect_blocks(live: Live, ctx, prompt: str | None, source: str, message=None) -> str:
    """Run the guards and pre_session once; their runs go into the record, their failures to the user.

    `message` (a guards.MessageInfo) for a terminal session's message: a later
    one runs only the every_message guards.
    """
    from wrapagent.hooks.guards import collect

    collected = collect(live.cfg, ctx, base_env=live.env, prompt=prompt, prompt_source=source,
                        log=live.record.log, message=message)
    for run in collected.runs:
        if run.result is not None:
            live.record.add_hook(run.result.to_record())
        if run.error:
            live.failures.append(guard_failure(run))
    return collected.prefix


def _types_into(live: Live) -> bool:
    """wrapagent types (blocks, continuations, sends) only into an agent's composer: a known
    agent program or one the config names (`inject/agents.py`); a shell or a REPL would run
    the text."""
    from wrapagent.inject.agents import is_agent

    name = live.launch.adapter.name
    if is_agent(name, live.cfg.agents):
        return True
    live.record.log(f"injection: {name} is not a known agent program: nothing is typed into it "
                    "(name it in [agents] programs of the global hooks.toml if it is one)")
    return False


FAILURE_SAYS_CHARS = 200
"""Of what a failed guard said (its stderr, else stdout), on the one line after the session."""


def guard_failure(run) -> str:
    """`guard NAME: exited with 1 (what it said)`: the reason is the part the user needs to fix it."""
    said = run.result.message() if run.result is not None else ""
    if len(said) > FAILURE_SAYS_CHARS:
        said = said[: FAILURE_SAYS_CHARS - 1] + "…"
    return f"{run.kind} {run.name}: {run.error}" + (f" ({said})" if said else "")


class Conversation:
    """The interceptor of a terminal session and everything it drives, until `report`."""

    def __init__(self, live: Live, plan, *, first: bool, resets: bool, wait_hook, stop_check,
                 sends: bool = False, undo: bool = False) -> None:
        from wrapagent.inject.injector import SessionInjector  # ~5 ms: only when keys are watched
        from wrapagent.proxy.spawn import start_size

        self.live = live
        self.plan = plan
        self.wait_hook = wait_hook
        self._conversation = 1
        self.prefix = _Prefix()
        self.prefix.open_wake()
        self.firer = self._hook_firer(wait_hook)
        self.turns = self._turn_tracker(wait_hook, stop_check)
        self.turn_checkpoints = self._turn_checkpoints()
        if first:
            self._run_guards(live.ctx, 0, self._message_info(1, 1))
        rows, cols = start_size()  # the tool's own size: one rule (a 0x0 terminal is 24x80)
        adapter = live.launch.adapter
        self.outgoing = None
        self.gate = None
        self.server = None
        if stop_check is not None or sends:
            from wrapagent.inject.outgoing import Outgoing
            from wrapagent.session.stop_gate import StopGate

            self.outgoing = Outgoing(adapter, rows, cols, wake=self.prefix.poke, log=live.record.log)
            self.gate = StopGate(live, stop_check, self.turns, self.outgoing,
                                 self._fire_idle if self.firer is not None else None, sends=sends)
            self.turns.fire = self.gate.stopped
            self.turns.on_same_wait = self.gate.same_wait
        if sends:
            from wrapagent.session.send_channel import SendServer

            try:
                self.server = SendServer(live, self.gate)
            except OSError as exc:
                live.record.warn(f"send: cannot take messages: {exc}")
        prompt_given = plan is not None and plan.kind == "argv" and not plan.oneshot
        every = ((first or resets or prompt_given) and any(g.every_message for g in live.cfg.guards)) \
            or ((first or resets or prompt_given or undo) and self.turn_checkpoints is not None)  # the undo block
        interrupts = self._interrupt_watch(adapter.name)
        self.interceptor = SessionInjector(
            adapter, rows=rows, cols=cols,
            get_prefix=self.prefix.get_nowait, wake_fd=self.prefix.wake_r,
            log=live.record.log, inject=first, turns=self.turns,
            on_reset=self._new_conversation if resets else None,
            on_compaction=self._compacted if resets and adapter.compact_commands else None,
            on_message=self._next_message if every else None, outgoing=self.outgoing,
            interrupts=interrupts, prompt_given=prompt_given)
        self._watch_dialogs()
        self._watch_working()

    @classmethod
    def start(cls, live: Live, plan) -> Conversation | None:
        """The conversation of a terminal session, or None when nothing needs the keys.

        First-message blocks when the plan is interactive; resets re-arm
        injection whenever blocks are configured (even after an argv
        prompt), and so do `every_message` guards for each later message
        (after an argv prompt too: it is the first); turns are followed whenever either is on, or
        waiting_for_input is configured.
        """
        from wrapagent.session.recorded import marks_turns

        first = plan is not None and plan.kind == "interactive"
        resets = (plan is not None and plan.kind in ("interactive", "argv") and not plan.oneshot
                  and bool(live.launch.adapter.reset_commands))
        wait_hook = live.cfg.hook_for("waiting_for_input")
        stop_check = live.cfg.stop_check
        sends = live.cfg.send
        if stop_check is not None or sends:
            from wrapagent.session.planning import prompt_plan

            if (plan or prompt_plan(live.launch)).oneshot:
                live.record.log("stop_check and send: not used: a one-shot run has no composer")
                stop_check, sends = None, False
        every = (plan is not None and plan.kind == "argv" and not plan.oneshot
                 and any(g.every_message for g in live.cfg.guards))
        undo = undo_notices(live)
        if (first or resets or every or stop_check is not None or sends or undo) and not _types_into(live):
            first = resets = every = sends = undo = False
            stop_check = None
        if not (first or resets or every or wait_hook is not None or stop_check is not None or sends
                or undo or (live.recorder is not None and marks_turns(live.launch, live.cfg))):  # a marker per turn
            return None
        return cls(live, plan, first=first, resets=resets, wait_hook=wait_hook, stop_check=stop_check,
                   sends=sends, undo=undo)

    # -- per conversation ----------------------------------------------------------

    def _message_info(self, message: int, conversation: int):
        from wrapagent.hooks.guards import MessageInfo

        return MessageInfo(message, conversation, self.turns.turn + 1)

    def _run_guards(self, ctx, generation: int, message) -> None:
        """Guards + pre_session in a thread: they run while the tool starts (or the user types).

        After a reset, or on a later message's first key, this is called on the
        proxy's input thread, whose mask blocks the signals: the guard thread
        starts with an empty one.
        """
        from wrapagent.hooks.hook_runner import start_hook_thread

        live, box = self.live, self.prefix

        def work() -> None:
            try:
                blocks = collect_blocks(live, ctx, None, "none", message)
                box.set(undo_notice(live) + blocks if message.message > 1 else blocks, generation)
            except Exception as exc:  # a bug in a guard must not hang the first key
                live.record.warn(f"guards failed: {exc!r}")
                box.set("", generation)

        start_hook_thread(work, "wrapagent-guards")

    def _new_conversation(self) -> None:
        """A reset command was submitted: the guards and pre_session run again (git may have moved)."""
        from wrapagent.values import replace  # GuardContext is a values.Frozen

        self.live.record.log("conversation reset: running the guards again for the next message")
        generation = self.prefix.reset()
        self._conversation += 1
        self._run_guards(replace(self.live.ctx, is_resume=False), generation,
                         self._message_info(1, self._conversation))

    def _compacted(self, conversation: int, message: int) -> None:
        """A compaction replaced the conversation with a summary: the guards and pre_session run
        again for the next message (`compaction` true in their stdin JSON, `{compaction}`)."""
        from wrapagent.values import replace

        self.live.record.log("compaction: running the guards again for the next message")
        generation = self.prefix.reset()
        self._run_guards(replace(self.live.ctx, is_resume=False, compaction=True), generation,
                         self._message_info(message, conversation))

    def _next_message(self, conversation: int, message: int) -> None:
        """A later message is armed: its every_message guards run when its first key comes."""
        from wrapagent.values import replace

        generation = self.prefix.reset()
        ctx = replace(self.live.ctx, is_resume=False) if conversation > 1 else self.live.ctx

        def start() -> None:
            self._run_guards(ctx, generation, self._message_info(message, conversation))

        self.prefix.start_later = start

    # -- per turn ------------------------------------------------------------------

    def _interrupt_watch(self, tool: str):
        """Tells the turn tracker, at each stop, whether the user interrupted the agent."""
        from wrapagent.inject.interrupts import InterruptWatch, rule_for

        watch = InterruptWatch(rule_for(tool), self.turns.working, log=self.live.record.log)
        self.turns.interrupted = watch.take
        self.turns.interrupt_pressed = watch.pressed_in
        return watch

    def _hook_firer(self, wait_hook):
        if wait_hook is None:
            return None
        from wrapagent.hooks.hook_runner import run_lifecycle
        from wrapagent.session.turns import HookFirer

        live = self.live

        def run(turn: int, reason: str):
            return run_lifecycle(wait_hook, live.ctx, base_env=live.env, log=live.record.log, turn=turn,
                                 reason=reason)

        return HookFirer(run, log=live.record.log)

    def _turn_checkpoints(self):
        """A checkpoint per turn, when the session has its `before` one (same store, same rules)."""
        live = self.live
        info = live.record.record.get("checkpoints")
        if not isinstance(info, dict) or info.get("status") != "taken":
            return None
        from wrapagent.history.checkpoints import max_file_bytes
        from wrapagent.history.turn_checkpoints import TurnCheckpoints

        turns = TurnCheckpoints(live.launch.root_str, live.record.id, live.env,
                                max_file_bytes(live.cfg.checkpoints), log=live.record.log, before=info.get("before"))

        def on_turn(which: str, n: int) -> None:
            (turns.started if which == "start" else turns.stopped)(n)

        self.turns.on_turn = on_turn
        return turns

    def _watch_working(self) -> None:
        """With a followed screen, a quiet wait is only the turn's end when the screen agrees;
        for a tool whose every turn shows its working hint, only once the hint was seen (in
        the output, `BeginScan`, or on the screen). The followed screen keeps the output coming
        to the injector all session (`watch_output`): without it, neither is looked at."""
        interceptor = self.interceptor
        view, turns = interceptor.view, self.turns
        if view is None:
            return
        from wrapagent.inject.dialog_watch import READ_SECS

        def working() -> bool:
            reading = view.read(timeout=READ_SECS)  # on the proxy's thread: bounded, as dialog_watch
            return reading is not None and reading.working

        turns.screen_working = working
        model = view.model
        if model.shape is None or not model.shape.turns_show_working:
            return
        from wrapagent.inject.turn_watches import BeginScan

        interceptor.watches.begun = BeginScan(model.shape.working, turns)
        # only while the screen is read by the tool's own model: when its markers never showed
        # (another release), the generic model took over and the hint is not known (injector.py)
        turns.watch_begin = lambda: view.model is model

        def observe(text: str) -> None:  # the emulator's thread, at each caught-up screen
            if turns.awaits_begin and model.read(text).working:
                turns.saw_working()

        view.observe(observe, hints=model.working_hints)

    def _watch_dialogs(self) -> None:
        """With waiting_for_input and a followed screen, a dialog mid-turn fires it at once."""
        view = self.interceptor.view
        if self.firer is None or view is None:
            return
        from wrapagent.inject.dialog_watch import DialogWatch

        firer, interceptor = self.firer, self.interceptor
        watches = interceptor.watches
        watches.dialogs = DialogWatch(view, interceptor.dialog_turn(self.turns),
                                      lambda turn: firer.fire(turn, "dialog"), log=self.live.record.log)

    def _fire_idle(self, turn: int) -> None:
        """The quiet wait: waiting_for_input with reason idle, unless it already fired for the
        dialog still on screen (one notification per wait)."""
        assert self.firer is not None
        dialogs = self.interceptor.watches.dialogs if hasattr(self, "interceptor") else None
        if dialogs is not None and dialogs.showing:
            self.live.record.log(f"turns: turn {turn}: waiting_for_input already fired for the dialog")
            return
        self.firer.fire(turn, "idle")

    def _turn_tracker(self, wait_hook, stop_check):
        from wrapagent.session.turns import TurnTracker

        quiet = stop_check.quiet_secs if stop_check is not None else None
        if quiet is None and wait_hook is not None:
            quiet = wait_hook.quiet_secs
        from wrapagent.session.recorded import on_turn

        tracker = TurnTracker(quiet or self.live.launch.adapter.wait_quiet_secs,
                              self._fire_idle if self.firer is not None else None, log=self.live.record.log)
        tracker.on_marker = on_turn(self.live)
        return tracker

    # -- after the tool ------------------------------------------------------------

    def report(self) -> None:
        """Deliveries, turns and waiting_for_input runs into the record; failures for the user.

        Hooks still running are ended first (`finishing.end_running_hooks`):
        the waiting_for_input run then finishes at once, not at its timeout.
        """
        from dataclasses import asdict

        from wrapagent.session.finishing import end_running_hooks

        if self.firer is not None:
            self.firer.close(timeout=0)  # no run starts from now on
        end_running_hooks(self.live)

        live, interceptor = self.live, self.interceptor
        record = live.record.record
        first = asdict(interceptor.finalize())
        inj = record["injection"]
        if interceptor.inject:
            notes = inj.get("notes", []) + first.pop("notes")
            inj.update(first)
            inj["notes"] = notes
            if first["status"] in ("lost", "not delivered"):
                live.failures.append("injection not delivered")
        later = [asdict(r) for r in interceptor.reports[1:]]
        if not any(g.every_message for g in live.cfg.guards):  # armed only for an undo block
            later = [r for r in later if r["status"] != "none"]
        if self.plan is not None:
            record["injections"] = [dict(inj, conversation=1, message=1), *later]
        elif later:  # no blocks configured: only undo blocks went in
            record["injections"] = later
        if any(r["status"] in ("lost", "not delivered") for r in later):
            live.failures.append("injection after a reset not delivered")
        if interceptor.compactions:
            record["compactions"] = list(interceptor.compactions)
        self.turns.record_into(record)
        if self.turn_checkpoints is not None:  # before the session's `after` snapshot
            self.turn_checkpoints.close()
            self.turn_checkpoints.record_into(record["turns"])
        if self.server is not None:
            self.server.close()
        if self.gate is not None:
            self.gate.record_into(record)
        self._close_waiting_hook()
        self.prefix.close()

    def _close_waiting_hook(self) -> None:
        if self.firer is None:
            return
        from wrapagent.session.finishing import end_running_hooks

        # Its group was ended (`report`): the run returns within moments, not at its timeout.
        self.firer.close(timeout=WAITING_CLOSE_SECS)
        if self.firer.busy:  # it was starting its shell while the groups were ended
            end_running_hooks(self.live)
            self.firer.close(timeout=WAITING_CLOSE_SECS)
        entry = self.firer.record_entry()
        if entry is None:
            return
        self.live.record.add_hook(entry)
        if entry["failed"]:
            self.live.failures.append(f"waiting_for_input: {entry['failed']} of {entry['runs']} runs failed")
