"""One wrapped session, end to end.

Order (CSA's hooks semantics): session record created → pre_run → the tool
(guards run concurrently with its start-up) → record saved with exit code and
resources → post_run → session_complete (default: commit the session into the
sessions repository, under a lock). Nothing is written to the terminal while
the tool's screen is up; hook output goes to the session log, and at most one
summary line is printed after the tool exits.
"""

from __future__ import annotations

import os
import sys

from wrapagent.errors import WrapagentError
from wrapagent.proxy.terminal import is_tty

SWEEP_WAIT_SECS = 90.0  # at the end, for the abandoned-session sweep (bounded by the 60 s commit lock)


def _stderr(line: str) -> None:
    try:
        sys.stderr.write(line.rstrip("\n") + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


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
        return self.value if self.done.is_set() else None

    def reset(self) -> int:
        """A new conversation: no prefix until its guards have run again; returns its generation."""
        with self._lock:
            self.generation += 1
            self.done.clear()
            self.value = None
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


class Session:
    """Glue between config, hooks, guards, the proxy and the session record (`opts`: a launch.RunOptions)."""

    def __init__(self, opts, env: dict[str, str], child_env: dict[str, str],
                 executable: str, argv: list[str], interactive: bool) -> None:
        from wrapagent.inject.adapters import adapter_for

        self.opts = opts
        self.env = env
        self.child_env = child_env
        self.executable = executable
        self.argv = argv
        self.interactive = interactive
        self.name = opts.display_name or os.path.basename(opts.tool)
        self.adapter = adapter_for(self.name)
        self.cwd_str = os.getcwd()
        self.root_str = self.cwd_str
        self.failures: list[str] = []
        self.record = None
        self._sweeper = None

    # Paths for hooks, checkpoints and transcripts; plain strings before the
    # tool starts (pathlib costs ~20 ms to import).

    @property
    def cwd(self):
        from pathlib import Path

        return Path(self.cwd_str)

    @property
    def project_root(self):
        from pathlib import Path

        return Path(self.root_str)

    # -- set-up -----------------------------------------------------------------

    def _load_config(self):
        from wrapagent.hooks import config_loader as config_mod
        from wrapagent.paths import project_root_of

        self.root_str = project_root_of(self.cwd_str)
        if self.opts.config_factory is not None:
            cfg = self.opts.config_factory(self.project_root, self.env)
        else:
            cfg = config_mod.load_config(self.root_str, env=self.env)
        for problem in cfg.problems:
            level = "error" if problem.severity == "error" else "warning"
            suffix = " (this file's hooks are not used)" if problem.severity == "error" else ""
            _stderr(f"wrapagent: config {level}: {problem}{suffix}")
        for layer in cfg.layers:
            if layer.exists and layer.trusted is False:
                from pathlib import Path

                from wrapagent.hooks.trust import untrusted_notice

                # Decided on the bytes the loader read: the file is not read again.
                _stderr(untrusted_notice(Path(layer.path), changed=layer.trust == "changed"))
        if self.opts.strict and cfg.has_errors:
            raise WrapagentError("invalid configuration (--strict): fix the errors above", 2)
        return cfg

    def _wants_injection(self, cfg) -> bool:
        pre = cfg.pre_session
        return bool(cfg.guards) or bool(pre is not None and pre.enabled and pre.command
                                        and pre.applies_to(self.adapter.name))

    def _plan(self):
        from wrapagent.inject.adapters.base import PromptPlan

        stdin_piped = not is_tty(0)
        plan = self.adapter.plan_prompt(self.opts.args, stdin_piped=stdin_piped)
        # Plans index the tool's argv as if argv[0] were the tool; the demo
        # agent runs as `python -m wrapagent.commands.demo_agent`, so shift.
        shift = len(self.argv) - len(self.opts.args) - 1
        if shift:
            from wrapagent.values import replace  # PromptPlan is a values.Frozen

            plan = replace(plan, index=None if plan.index is None else plan.index + shift,
                           args=tuple(a + shift for a in plan.args))
        if stdin_piped and plan.kind == "interactive" and self.adapter.piped_stdin_is_prompt:
            plan = PromptPlan("stdin", oneshot=True)
        if plan.kind == "interactive" and not self.interactive:
            plan = PromptPlan("none", reason="no terminal and no prompt argument")
        if plan.kind == "none" and self.interactive and not plan.oneshot \
                and not plan.reason.startswith("subcommand"):
            plan = PromptPlan("interactive", reason=f"argv left alone ({plan.reason})")
        return plan

    # -- the run -----------------------------------------------------------------

    def run(self) -> int:
        from wrapagent.session.ids import new_session_id

        cfg = self._load_config()
        self.cfg = cfg
        session_id = new_session_id()
        self.child_env["WRAPAGENT_SESSION_ID"] = session_id
        try:
            child = self._start_first(cfg)
            if child is not None:
                return self._run_tool_first(child, session_id)
            return self._run_with_record(cfg, self._open_record(session_id))
        finally:
            if self._sweeper is not None:
                self._sweeper.join(timeout=SWEEP_WAIT_SECS)
            if self.record is not None:
                self.record.close()

    def _open_record(self, session_id: str, started: float | None = None):
        """The session's folder, first record and running marker; the abandoned-session sweep."""
        from wrapagent.session.records import Session as Record

        record = Record.create(tool=self.name, transport=self.adapter.name,
                               argv=[self.opts.tool, *self.opts.args],
                               executable=self.executable, cwd=self.cwd_str,
                               project_root=self.root_str, env=self.env,
                               mode="pty" if self.interactive else "pipe",
                               session_id=session_id, started_at=started)
        self.record = record
        self._sweeper = self._start_sweep(record)
        return record

    # -- the tool first, when nothing has to come before it -----------------------

    def _start_first(self, cfg):
        """The tool, started at once when nothing has to happen before it; else None.

        Before the tool come: pre_run (it may refuse the launch), the `before`
        checkpoint of a git project, and an interceptor (injection, resets,
        waiting_for_input: it must see the tool's first output). Without any
        of them (the default configuration outside a git project) the tool
        starts first and the record is written while it starts: the user
        does not wait for wrapagent's own imports and files.
        """
        if not self.tool_goes_first(cfg):
            return None
        import time

        from wrapagent.paths import make_session_dir, sessions_root_str

        # The one thing of the record that can fail for the user to fix: before the tool.
        make_session_dir(sessions_root_str(self.root_str, self.env), self.child_env["WRAPAGENT_SESSION_ID"])

        from wrapagent.proxy import spawn

        self._tool_started = time.time()
        try:
            child = spawn.start(self.argv, env=self.child_env)
            child.check_exec()
            return child
        except WrapagentError:
            # The tool cannot start: the usual order reports it, with a record.
            return None

    def tool_goes_first(self, cfg) -> bool:
        """Nothing of this session has to happen before the tool starts (see `_start_first`)."""
        if not self.interactive or cfg.hook_for("pre_run") is not None \
                or cfg.hook_for("waiting_for_input") is not None or self._wants_injection(cfg):
            return False
        from wrapagent.hooks.config_model import CheckpointSettings
        from wrapagent.session import checkpoints

        return checkpoints.before_skip_reason(
            getattr(cfg, "checkpoints", None) or CheckpointSettings(), depth=int(self.env.get("WRAPAGENT_DEPTH", "0") or 0),
            parent=self.env.get("WRAPAGENT_SESSION_ID") or None, project_root=self.root_str) is not None

    def _run_tool_first(self, child, session_id: str) -> int:
        """The session of a tool already started: record, sweep and context while it starts up."""
        from wrapagent.proxy import pty_loop

        def setup() -> None:
            record = self._open_record(session_id, self._tool_started)
            self.ctx = self._ctx(record)
            record.record["is_resume"] = self.ctx.is_resume
            self._history_before(record)  # records why there is no checkpoint

        try:
            result = pty_loop.proxy(child, after_start=setup)
        except BaseException as exc:
            if self.record is not None:
                self.record.warn(f"wrapagent failed while the tool was running: {exc!r}")
                self.record.finish(exit_code=1, signal=None, cpu_seconds=0.0, peak_rss_bytes=0)
            raise
        self._finish(result)
        self._after(result.exit_code)
        return result.exit_code

    def _start_sweep(self, record):
        """Sessions left `running` by a killed wrapagent become `abandoned`, in a thread.

        Only when another session's running marker exists (one listdir); the
        thread runs beside the tool and is waited for at the end, so its
        commit is never cut short by wrapagent exiting.
        """
        from wrapagent.session.records import running_markers, sweep_abandoned

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

    def _ctx(self, record):
        from wrapagent.hooks.context import GuardContext

        return GuardContext(project_root=self.project_root, cwd=self.cwd, tool=self.adapter.name,
                            session_id=record.id,
                            is_resume=self.adapter.is_resume(self.opts.args),
                            session_dir=record.dir, sessions_root=record.root)

    def _run_with_record(self, cfg, record) -> int:
        ctx = self._ctx(record)
        self.ctx = ctx
        record.record["is_resume"] = ctx.is_resume
        pre_run = self._lifecycle("pre_run", None)
        if pre_run is not None and pre_run.refuses():
            return self._refused(pre_run)
        self._history_before(record)
        try:
            result = self._run_tool(cfg, record, ctx)
        except WrapagentError as exc:
            # The tool could not start (e.g. a missing #! interpreter): the
            # session still ends properly, with the shell's exit code.
            record.warn(exc.message)
            record.finish(exit_code=exc.exit_code, signal=None, cpu_seconds=0.0, peak_rss_bytes=0)
            self._after(exc.exit_code)
            raise
        except BaseException as exc:
            record.warn(f"wrapagent failed while the tool was running: {exc!r}")
            record.finish(exit_code=1, signal=None, cpu_seconds=0.0, peak_rss_bytes=0)
            raise
        self._after(result.exit_code)
        return result.exit_code

    def _run_tool(self, cfg, record, ctx):
        from wrapagent.proxy import passthrough
        from wrapagent.proxy import pty_loop

        inject = self._wants_injection(cfg)
        plan = self._plan() if inject else None
        inj = record.record["injection"]
        if plan is not None:
            inj["path"] = plan.kind
            if plan.reason:
                inj["notes"].append(plan.reason)
            self.child_env = self.adapter.child_env(self.child_env)
        argv = list(self.argv)
        stdin_data = self._pre_read_stdin(plan)
        if plan is not None and plan.kind == "argv" and stdin_data:
            # gemini puts piped stdin BEFORE the prompt argument: the blocks go
            # on stdin then, so they still come first.
            inj["path"] = "stdin"
            feeder = self._stdin_feeder(cfg, ctx, initial=stdin_data, read_stdin=False,
                                        prompt=stdin_data.decode("utf-8", "replace")
                                        + "\n\n" + argv[plan.index])
            return self._finish(passthrough.run(argv, env=self.child_env, stdin_feeder=feeder))
        if plan is not None and plan.kind == "argv":
            prefix = self._collect(cfg, ctx, argv[plan.index], "argv")
            if prefix:
                argv[plan.index] = prefix + argv[plan.index]
                self._injected(prefix, "argv")
            else:
                inj["status"] = "none"
        if plan is not None and plan.kind == "stdin-args":
            return self._run_stdin_args(cfg, ctx, argv, plan, stdin_data or b"")
        if plan is not None and plan.kind == "stdin":
            feeder = self._stdin_feeder(cfg, ctx, initial=b"")
            return self._finish(passthrough.run(argv, env=self.child_env, stdin_feeder=feeder))
        if not self.interactive:
            return self._finish(passthrough.run(argv, env=self.child_env))
        interceptor = self._start_interactive(cfg, ctx, plan)
        try:
            result = pty_loop.run(argv, env=self.child_env, interceptor=interceptor)
        finally:
            if interceptor is not None:
                self._interactive_report(interceptor, plan)
        return self._finish(result)

    def _pre_read_stdin(self, plan) -> bytes | None:
        """Read piped stdin up front where the tool mixes it with argv prompts.

        gemini (stdin first, then the argument) and `opencode run` (arguments,
        then "\n" + stdin, nothing when stdin is empty) need to know whether
        stdin holds anything before wrapagent decides where the blocks go.
        """
        if plan is None or is_tty(0):
            return None
        if plan.kind == "stdin-args" or (plan.kind == "argv" and self.adapter.stdin_before_arg):
            return _read_all(0)
        return None

    def _run_stdin_args(self, cfg, ctx, argv, plan, stdin_data: bytes):
        """`opencode run a b`: message args move to stdin, joined the way the tool joins them."""
        from wrapagent.proxy import passthrough
        from wrapagent.inject.adapters.opencode import quote_join

        message = quote_join([argv[i] for i in plan.args]).encode()
        if stdin_data:
            message += b"\n" + stdin_data  # the tool's own join of args and piped stdin
        rest = [a for i, a in enumerate(argv) if i not in set(plan.args)]
        feeder = self._stdin_feeder(cfg, ctx, initial=message, read_stdin=False)
        return self._finish(passthrough.run(rest, env=self.child_env, stdin_feeder=feeder))

    def _stdin_feeder(self, cfg, ctx, *, initial: bytes, read_stdin: bool = True,
                      prompt: str | None = None):
        """Feed the tool's stdin: blocks, then the prompt, byte for byte."""

        def feed(wfd: int) -> None:
            data = initial + (_read_all(0) if read_stdin else b"")
            text = data.decode("utf-8", "replace") if prompt is None else prompt
            prefix = self._collect(cfg, ctx, text, "stdin")
            if prefix:
                self._injected(prefix, "stdin")
            else:
                self.record.record["injection"]["status"] = "none"
            payload = prefix.encode() + data
            view = memoryview(payload)
            while view:
                view = view[os.write(wfd, view):]

        return feed

    def _start_interactive(self, cfg, ctx, plan):
        """The interceptor for a terminal session, or None when nothing needs the keys.

        First-message blocks when the plan is interactive; resets re-arm
        injection whenever blocks are configured (even after an argv
        prompt); turns are followed whenever either is on, or
        waiting_for_input is configured.
        """

        first = plan is not None and plan.kind == "interactive"
        resets = (plan is not None and plan.kind in ("interactive", "argv") and not plan.oneshot
                  and bool(self.adapter.reset_commands))
        wait_hook = cfg.hook_for("waiting_for_input")
        if not (first or resets or wait_hook is not None):
            return None
        from wrapagent.inject.injector import FirstMessageInjector  # ~5 ms: only when keys are watched
        from wrapagent.proxy.terminal import get_winsize

        box = _Prefix()
        box.open_wake()
        self._prefix_box = box
        if first:
            self._run_guards(cfg, ctx, box)
        self.turns = self._turn_tracker(wait_hook)
        size = get_winsize(0) or (24, 80, 0, 0)
        return FirstMessageInjector(self.adapter, rows=size[0], cols=size[1],
                                    get_prefix=box.get_nowait, wake_fd=box.wake_r,
                                    log=self.record.log, inject=first, turns=self.turns,
                                    on_reset=(lambda: self._new_conversation(cfg)) if resets else None)

    def _run_guards(self, cfg, ctx, box: _Prefix, generation: int = 0) -> None:
        """Guards + pre_session in a thread: they run while the tool starts (or the user types)."""
        import threading

        def work() -> None:
            try:
                box.set(self._collect(cfg, ctx, None, "none"), generation)
            except Exception as exc:  # a bug in a guard must not hang the first key
                self.record.warn(f"guards failed: {exc!r}")
                box.set("", generation)

        threading.Thread(target=work, name="wrapagent-guards", daemon=True).start()

    def _new_conversation(self, cfg) -> None:
        """A reset command was submitted: the guards and pre_session run again (git may have moved)."""
        from wrapagent.values import replace  # GuardContext is a values.Frozen

        self.record.log("conversation reset: running the guards again for the next message")
        generation = self._prefix_box.reset()
        self._run_guards(cfg, replace(self.ctx, is_resume=False), self._prefix_box, generation)

    def _turn_tracker(self, wait_hook):
        from wrapagent.session.turns import HookFirer, TurnTracker

        self.firer = None
        if wait_hook is not None:
            from wrapagent.hooks.hook_runner import run_lifecycle

            def run(turn: int):
                return run_lifecycle(wait_hook, self.ctx, base_env=self.env, log=self.record.log,
                                     turn=turn)

            self.firer = HookFirer(run, log=self.record.log)
        quiet = wait_hook.quiet_secs if wait_hook is not None and wait_hook.quiet_secs else None
        return TurnTracker(quiet or self.adapter.wait_quiet_secs,
                           self.firer.fire if self.firer is not None else None, log=self.record.log)

    def _interactive_report(self, interceptor, plan) -> None:
        from dataclasses import asdict

        first = asdict(interceptor.finalize())
        inj = self.record.record["injection"]
        if interceptor.inject:
            notes = inj.get("notes", []) + first.pop("notes")
            inj.update(first)
            inj["notes"] = notes
            if first["status"] == "lost":
                self.failures.append("injection not delivered")
        if plan is not None:
            later = [asdict(r) for r in interceptor.reports[1:]]
            self.record.record["injections"] = [dict(inj, conversation=1), *later]
            if any(r["status"] == "lost" for r in later):
                self.failures.append("injection after a reset not delivered")
        self.turns.record_into(self.record.record)
        self._close_waiting_hook()
        box = getattr(self, "_prefix_box", None)
        if box is not None:
            box.close()

    def _close_waiting_hook(self) -> None:
        firer = getattr(self, "firer", None)
        if firer is None:
            return
        hook = self.cfg.hook_for("waiting_for_input")
        firer.close(timeout=(hook.timeout_secs if hook is not None else 10.0) + 3.0)
        entry = firer.record_entry()
        if entry is None:
            return
        self.record.add_hook(entry)
        if entry["failed"]:
            self.failures.append(f"waiting_for_input: {entry['failed']} of {entry['runs']} runs failed")

    def _collect(self, cfg, ctx, prompt: str | None, source: str) -> str:
        from wrapagent.hooks.guards import collect

        collected = collect(cfg, ctx, base_env=self.env, prompt=prompt, prompt_source=source,
                            log=self.record.log)
        for run in collected.runs:
            if run.result is not None:
                self.record.add_hook(run.result.to_record())
            if run.error:
                self.failures.append(f"{run.kind} {run.name}: {run.error}")
        return collected.prefix

    def _injected(self, prefix: str, path: str) -> None:
        from wrapagent.session.records import now_iso

        inj = self.record.record["injection"]
        inj.update(status="delivered", path=path, text=prefix, at=now_iso(), attempts=1)

    def _finish(self, result):
        self.record.finish(exit_code=result.exit_code, signal=result.signal,
                           cpu_seconds=result.cpu_seconds, peak_rss_bytes=result.peak_rss_bytes)
        rec = self.record.record
        how = f"signal {result.signal}" if result.signal else f"exit {result.exit_code}"
        self.record.log(f"{self.name} ended ({how}) after {rec['duration_s']}s in {rec['mode']} mode")
        if result.orphans_killed:
            self.record.warn(f"{result.orphans_killed} leftover process(es) of the tool were killed")
        return result

    # -- after the tool ----------------------------------------------------------

    def _lifecycle(self, event: str, exit_code: int | None):
        """Run one lifecycle hook; its HookResult (None when not configured or folded into the commit)."""
        hook = self.cfg.hook_for(event)
        if hook is None:
            return None
        from wrapagent.hooks.hook_runner import run_lifecycle  # not before the tool when pre_run is unset

        if event == "session_complete":
            result = self._session_complete(hook, exit_code)
            if result is None:
                return None
        else:
            result = run_lifecycle(hook, self.ctx, base_env=self.env, log=self.record.log,
                                   exit_code=exit_code)
        self.record.add_hook(result.to_record())
        if not result.ok() and not (event == "pre_run" and result.refuses()):
            what = "timed out" if result.timed_out else f"exit {result.exit_code}"
            self.failures.append(f"{event}: {what}")
        self.record.save()
        return result

    def _refused(self, pre_run) -> int:
        """pre_run exited 2: the tool is not started, the user gets one line, the session ends `blocked`.

        The record is committed (session_complete fires, post_run does not:
        nothing ran), and wrapagent exits 2 like the hook. The line goes to
        stderr: in pipe mode stdout belongs to the tool's consumer.
        """
        from wrapagent.hooks.hook_runner import REFUSE_EXIT

        reason = pre_run.message() or "no reason given"
        _stderr(f"wrapagent: pre_run refused to start {self.name}: {reason}")
        self.record.log(f"pre_run refused the launch (exit {REFUSE_EXIT}): {reason}")
        with _HangupIgnored():
            self.record.block(reason)
            self._lifecycle("session_complete", REFUSE_EXIT)
        self._say_failures()
        return REFUSE_EXIT

    def _session_complete(self, hook, exit_code: int | None):
        """Run session_complete under the sessions repository's commit lock.

        Returns the hook's result, or None when the default commit succeeded
        and the final record was already folded into that commit.
        """
        import contextlib

        from wrapagent.hooks.hook_runner import run_lifecycle
        from wrapagent.session.records import amend_session_commit, commit_lock, ensure_repo

        root = self.record.root
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(commit_lock(root))
            except (OSError, TimeoutError) as exc:
                self.record.warn(f"session_complete runs without the commit lock: {exc}")
            try:
                ensure_repo(root)  # under the lock: two first sessions race
            except Exception as exc:
                self.record.warn(f"cannot initialise the sessions repository: {exc}")
            result = run_lifecycle(hook, self.ctx, base_env=self.env, log=self.record.log,
                                   exit_code=exit_code)
            if hook.source != "<default>" or not result.ok():
                return result
            # The record now gets the commit's own outcome; fold that into the
            # same commit so the repository stays clean.
            self.record.add_hook(result.to_record())
            self.record.save()
            amend_session_commit(root, self.record.id)
            return None

    # -- session history (session/checkpoints.py, session/transcripts.py) -----------

    def _history_settings(self):
        from wrapagent.hooks.config_model import CheckpointSettings

        return getattr(self.cfg, "checkpoints", None) or CheckpointSettings()

    def _history_before(self, record) -> None:
        """Snapshot the work tree just before the tool starts: the user's own edits are "before"."""
        import time

        from wrapagent.session import checkpoints

        if not hasattr(self, "_tool_started"):
            self._tool_started = time.time()
        try:
            checkpoints.begin(record.record, self._history_settings(), self.root_str, self.env)
        except Exception as exc:  # never the end of the session
            record.warn(f"checkpoints: {exc!r}")

    def _history_after(self) -> None:
        """After the tool: the `after` snapshot and copies of the tool's own transcripts.

        Before post_run and session_complete, so the default commit holds them.
        """
        import time

        from wrapagent.session import checkpoints, transcripts

        settings = self._history_settings()
        try:
            checkpoints.end(self.record.record, settings, self.root_str, self.env)
        except Exception as exc:
            self.record.warn(f"checkpoints: {exc!r}")
        info = self.record.record.get("checkpoints") or {}
        if info.get("status") == "failed":
            self.record.log(f"checkpoints: {info.get('note')}")
            self.failures.append("checkpoints failed")
        if not settings.transcripts or not hasattr(self, "_tool_started"):
            return
        try:
            ended = time.time()
            nested = transcripts.claimed_by_children(self.record.root, self.record.id)
            warned = len(self.record.record["warnings"])
            transcripts.collect(self.adapter.name, self.record.record, self.record.dir, cwd=self.cwd,
                                started=self._tool_started, ended=ended, env=self.child_env,
                                executable=self.executable, max_bytes=settings.max_transcript_bytes,
                                exclude=nested)
            for warning in self.record.record["warnings"][warned:]:
                self.record.log(f"WARNING: {warning}")
        except Exception as exc:
            self.record.warn(f"transcripts: {exc!r}")

    def _after(self, exit_code: int) -> None:
        """post_run and session_complete; a closed terminal (SIGHUP) must not stop them."""
        with _HangupIgnored():
            self._history_after()
            self.record.save()
            self._lifecycle("post_run", exit_code)
            self._lifecycle("session_complete", exit_code)
        self._say_failures()

    def _say_failures(self) -> None:
        """At most one line after the tool's screen is gone: what failed, and where the log is."""
        if self.failures:
            shown = "; ".join(self.failures[:3]) + (" …" if len(self.failures) > 3 else "")
            _stderr(f"wrapagent: {shown} — see {self.record.log_path}")


class _HangupIgnored:
    """SIGHUP ignored for a block: the session's record and commit outlive a closed terminal."""

    def __enter__(self) -> None:
        import signal

        self._old = signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def __exit__(self, *exc: object) -> None:
        import signal

        signal.signal(signal.SIGHUP, self._old)
