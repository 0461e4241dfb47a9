"""The session's lifecycle hooks at its two ends: pre_run, post_run, session_complete.

pre_run may refuse the launch (exit 2: the session ends `blocked`);
session_complete runs under the sessions repository's commit lock, and the
default one's outcome is folded into its own commit. A closed terminal
(SIGHUP) must not stop what runs after the tool: `HangupIgnored`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from wrapagent.session.live import Live


def run_event(live: Live, event: str, exit_code: int | None):
    """Run one lifecycle hook; its HookResult (None when not configured or folded into the commit)."""
    hook = live.cfg.hook_for(event)
    if hook is None:
        return None
    if event == "session_complete" and hook.source == "<default>" and live.record.unavailable is not None:
        return None  # the default commits the record: there is none (said at the start)
    from wrapagent.hooks.hook_runner import run_lifecycle  # not before the tool when pre_run is unset

    if event == "session_complete":
        result = _session_complete(live, hook, exit_code)
        if result is None:
            return None
    else:
        result = run_lifecycle(hook, live.ctx, base_env=live.env, log=live.record.log,
                               exit_code=exit_code)
    live.record.add_hook(result.to_record())
    if not result.ok() and not (event == "pre_run" and result.refuses()):
        what = "timed out" if result.timed_out else f"exit {result.exit_code}"
        live.failures.append(f"{event}: {what}")
    live.record.save()
    return result


def refused(live: Live, pre_run) -> int:
    """pre_run exited 2: the tool is not started, the user gets one line, the session ends `blocked`.

    The record is committed (session_complete fires, post_run does not:
    nothing ran), and wrapagent exits 2 like the hook. The line goes to
    stderr: in pipe mode stdout belongs to the tool's consumer.
    """
    from wrapagent.hooks.hook_runner import REFUSE_EXIT
    from wrapagent.session.planning import stderr_line

    reason = pre_run.message() or "no reason given"
    stderr_line(f"wrapagent: pre_run refused to start {live.launch.name}: {reason}")
    live.record.log(f"pre_run refused the launch (exit {REFUSE_EXIT}): {reason}")
    with HangupIgnored():
        live.record.block(reason)
        run_event(live, "session_complete", REFUSE_EXIT)
    say_failures(live)
    return REFUSE_EXIT


def _session_complete(live: Live, hook, exit_code: int | None):
    """Run session_complete under the sessions repository's commit lock.

    Returns the hook's result, or None when the default commit succeeded
    and the final record was already folded into that commit.
    """
    import contextlib

    from wrapagent.hooks.hook_runner import run_lifecycle
    from wrapagent.history import sessions_repo

    record = live.record
    root = record.root
    default = sessions_repo.is_default_command(hook.command)
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(sessions_repo.commit_lock(root))
        except (OSError, TimeoutError) as exc:
            record.warn(f"session_complete runs without the commit lock: {exc}")
        try:
            # under the lock: two first sessions race. A configured hook gets a repository git
            # accepts (`rev-parse`); the default one checks the disk and asks git if it fails.
            note = sessions_repo.ensure_repo(root, trust_disk=default)
            if note:
                record.warn(note)
        except Exception as exc:
            record.warn(f"cannot initialise the sessions repository: {exc}")
        if not default:
            return run_lifecycle(hook, live.ctx, base_env=live.env, log=record.log, exit_code=exit_code)
        # In-process: no shell, and every git call names the sessions repository (gitcmd).
        result = sessions_repo.run_default_session_complete(hook, live.ctx, log=record.log, warn=record.warn)
        if not result.ok():
            record.uncommitted = True  # its marker stays: the next session's sweep commits it
            return result
        # The record now gets the commit's own outcome; fold that into the
        # same commit so the repository stays clean.
        record.add_hook(result.to_record())
        record.save()
        sessions_repo.amend_session_commit(root, record.id)
        return None


def say_failures(live: Live) -> None:
    """At most one line after the tool's screen is gone: what failed, what was not saved, where the log is."""
    from wrapagent.session.planning import stderr_line

    record = live.record
    lost = record.loss_note()  # a full disk: what of the record and log is missing
    said = live.failures + ([lost] if lost else [])
    if said:
        shown = "; ".join(said[:3]) + (" …" if len(said) > 3 else "")
        log_whole = record.unavailable is None and "log lines" not in record.lost
        stderr_line(f"wrapagent: {shown}" + (f" — see {record.log_path}" if live.failures and log_whole else ""))


class HangupIgnored:
    """SIGHUP ignored for a block: the session's record and commit outlive a closed terminal."""

    def __enter__(self) -> None:
        import signal

        self._old = signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def __exit__(self, *exc: object) -> None:
        import signal

        signal.signal(signal.SIGHUP, self._old)
