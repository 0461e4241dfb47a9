"""The last phase of a session, after the tool exited.

The record gets the exit code and resources, then (SIGHUP ignored) the
`after` checkpoint and copies of the tool's own transcripts, post_run and
session_complete (the default commits the session), and at most one line
for the user.
"""

from __future__ import annotations

from wrapagent.session.events import HangupIgnored, run_event, say_failures
from wrapagent.session.recorded import finish_recording, index_session

TYPE_CHECKING = False
if TYPE_CHECKING:
    from wrapagent.session.live import Live


def end_running_hooks(live: Live | None, when: str = "the tool exited") -> list[str]:
    """Hooks still running (waiting_for_input, the stop check, guards, pre_session): their groups ended.

    They were about the tool, which is gone: nothing waits for them, and the
    user's prompt must not wait for their timeouts either (a waiting_for_input
    of `gh run watch …` has an hour). TERM to each hook's process group, KILL
    after the hook runner's grace; post_run and session_complete, which start
    later, keep their own timeouts. Returns the names ended (logged).
    """
    import sys

    hook_runner = sys.modules.get("wrapagent.hooks.hook_runner")  # not loaded: no hook ever ran
    if hook_runner is None:
        return []
    ended = hook_runner.kill_running()
    if ended and live is not None:
        live.log(f"still running when {when}, killed (TERM to the group, KILL after "
                 f"{hook_runner.KILL_GRACE:g}s): {', '.join(ended)}")
    return ended


def tool_ended(live: Live, result):
    """The proxy's result into the record (exit code, signal, CPU, memory); returns it."""
    end_running_hooks(live)
    record = live.record
    record.finish(exit_code=result.exit_code, signal=result.signal,
                  cpu_seconds=result.cpu_seconds, peak_rss_bytes=result.peak_rss_bytes)
    rec = record.record
    how = f"signal {result.signal}" if result.signal else f"exit {result.exit_code}"
    record.log(f"{live.launch.name} ended ({how}) after {rec['duration_s']}s in {rec['mode']} mode")
    if result.orphans_killed:
        record.warn(f"{result.orphans_killed} leftover process(es) of the tool were killed")
    return result


def tool_failed(live: Live, exit_code: int, warning: str) -> None:
    """The tool could not start or wrapagent failed while it ran: the record still ends."""
    end_running_hooks(live)
    live.record.warn(warning)
    live.record.finish(exit_code=exit_code, signal=None, cpu_seconds=0.0, peak_rss_bytes=0)


def after(live: Live, exit_code: int) -> None:
    """post_run and session_complete; a closed terminal (SIGHUP) must not stop them.

    Nothing here may change what the caller gets, the tool's exit code: an
    error is one more item of the one line at the end, never a traceback.
    """
    try:
        with HangupIgnored():
            _history_after(live)
            _tool_version(live)
            index_session(live)
            live.record.save()
            run_event(live, "post_run", exit_code)
            run_event(live, "session_complete", exit_code)
    except Exception as exc:
        live.failures.append(f"wrapagent failed after {live.launch.name} ended: {exc!r}")
    say_failures(live)


def _tool_version(live: Live) -> None:
    """The tool's version into the record: the lookup started with the tool, waited for briefly."""
    lookup = live.version_lookup
    if lookup is None:
        return
    version = lookup.result()
    live.record.record["tool_version"] = version
    if version is None and lookup.found is not None and lookup.found.get("error"):
        live.record.log(f"tool version: unknown ({lookup.found['error']})")


def _history_after(live: Live) -> None:
    """After the tool: the `after` snapshot and copies of the tool's own transcripts.

    Before post_run and session_complete, so the default commit holds them.
    """
    import time

    from wrapagent.history import checkpoints, transcripts

    record = live.record
    settings = live.cfg.checkpoints
    finish_recording(live)
    try:
        checkpoints.end(record.record, settings, live.launch.root_str, live.env)
    except Exception as exc:
        record.warn(f"checkpoints: {exc!r}")
    info = record.record.get("checkpoints") or {}
    if info.get("status") == "failed":
        record.log(f"checkpoints: {info.get('note')}")
        live.failures.append("checkpoints failed")
    if not settings.transcripts or live.tool_started is None or record.unavailable is not None:
        return
    try:
        ended = time.time()
        nested = transcripts.claimed_by_children(record.root, record.id)
        warned = len(record.record["warnings"])
        transcripts.collect(live.launch.adapter.name, record.record, record.dir, cwd=live.launch.cwd,
                            started=live.tool_started, ended=ended, env=live.child_env,
                            executable=live.launch.executable, max_bytes=settings.max_transcript_bytes,
                            exclude=nested)
        for warning in record.record["warnings"][warned:]:
            record.log(f"WARNING: {warning}")
    except Exception as exc:
        record.warn(f"transcripts: {exc!r}")
