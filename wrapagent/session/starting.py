"""The start phase: the `before` checkpoint, then the tool in the mode the plan chose.

Five ways to start: blocks put into a prompt argument, blocks fed on the
tool's stdin (a piped prompt, `opencode run` arguments moved to stdin,
gemini's stdin-before-argument), plain pipe mode, and a terminal session
whose conversation (`conversation.Conversation`) watches the keys. Each
returns the proxy's result, already written into the record.
"""

from __future__ import annotations

import os

from wrapagent.proxy.terminal import is_tty
from wrapagent.session.live import read_all

TYPE_CHECKING = False
if TYPE_CHECKING:
    from wrapagent.session.live import Live
    from wrapagent.session.planning import Launch


def spawn_first(launch: Launch, session_id: str):
    """The tool, started before the record exists (`planning.tool_goes_first`); (child, start time) or None.

    None when the tool cannot start: the usual order then reports it, with a record.
    """
    import time

    from wrapagent.errors import WrapagentError
    from wrapagent.paths import make_session_dir, sessions_root_str

    # The one thing of the record that can fail for the user to fix: before the tool.
    make_session_dir(sessions_root_str(launch.root_str, launch.env), session_id)

    from wrapagent.proxy import spawn

    started = time.time()
    try:
        child = spawn.start(launch.argv, env=launch.child_env)
        child.check_exec()
        return child, started
    except WrapagentError:
        return None


def history_before(live: Live) -> None:
    """Snapshot the work tree just before the tool starts: the user's own edits are "before"."""
    import time

    from wrapagent.session import checkpoints

    if live.tool_started is None:
        live.tool_started = time.time()
    try:
        checkpoints.begin(live.record.record, live.cfg.checkpoints, live.launch.root_str, live.env)
    except Exception as exc:  # never the end of the session
        live.record.warn(f"checkpoints: {exc!r}")


def run_tool(live: Live):
    """Start the tool in the planned mode and proxy it to its end; the result, in the record."""
    from wrapagent.proxy import passthrough
    from wrapagent.proxy import pty_loop
    from wrapagent.session.conversation import Conversation, collect_blocks
    from wrapagent.session.finishing import tool_ended
    from wrapagent.session.planning import prompt_plan, wants_injection

    launch = live.launch
    plan = prompt_plan(launch) if wants_injection(launch, live.cfg) else None
    inj = live.record.record["injection"]
    if plan is not None:
        inj["path"] = plan.kind
        if plan.reason:
            inj["notes"].append(plan.reason)
        live.child_env = launch.adapter.child_env(live.child_env)
    elif launch.interactive:
        # A continuation or a `wrapagent send` is delivered like the blocks: the same settings
        # (opencode's paste).
        live.child_env = launch.adapter.child_env(live.child_env)
    env = live.child_env
    argv = list(launch.argv)
    stdin_data = _pre_read_stdin(launch, plan)
    if plan is not None and plan.kind == "argv" and stdin_data:
        # gemini puts piped stdin BEFORE the prompt argument: the blocks go
        # on stdin then, so they still come first.
        inj["path"] = "stdin"
        feeder = _stdin_feeder(live, initial=stdin_data, read_stdin=False,
                               prompt=stdin_data.decode("utf-8", "replace") + "\n\n" + argv[plan.index])
        return tool_ended(live, passthrough.run(argv, env=env, stdin_feeder=feeder))
    if plan is not None and plan.kind == "argv":
        prefix = collect_blocks(live, live.ctx, argv[plan.index], "argv")
        if prefix:
            argv[plan.index] = prefix + argv[plan.index]
            _injected(live, prefix, "argv")
        else:
            inj["status"] = "none"
    if plan is not None and plan.kind == "stdin-args":
        return _run_stdin_args(live, argv, plan, stdin_data or b"")
    if plan is not None and plan.kind == "stdin":
        feeder = _stdin_feeder(live, initial=b"")
        return tool_ended(live, passthrough.run(argv, env=env, stdin_feeder=feeder))
    if not launch.interactive:
        return tool_ended(live, passthrough.run(argv, env=env))
    conversation = Conversation.start(live, plan)
    try:
        result = pty_loop.run(argv, env=env,
                              interceptor=conversation.interceptor if conversation is not None else None)
    finally:
        if conversation is not None:
            conversation.report()
    return tool_ended(live, result)


def _pre_read_stdin(launch: Launch, plan) -> bytes | None:
    """Read piped stdin up front where the tool mixes it with argv prompts.

    gemini (stdin first, then the argument) and `opencode run` (arguments,
    then "\n" + stdin, nothing when stdin is empty) need to know whether
    stdin holds anything before wrapagent decides where the blocks go.
    """
    if plan is None or is_tty(0):
        return None
    if plan.kind == "stdin-args" or (plan.kind == "argv" and launch.adapter.stdin_before_arg):
        return read_all(0)
    return None


def _run_stdin_args(live: Live, argv: list[str], plan, stdin_data: bytes):
    """`opencode run a b`: message args move to stdin, joined the way the tool joins them."""
    from wrapagent.inject.adapters.opencode import quote_join
    from wrapagent.proxy import passthrough
    from wrapagent.session.finishing import tool_ended

    message = quote_join([argv[i] for i in plan.args]).encode()
    if stdin_data:
        message += b"\n" + stdin_data  # the tool's own join of args and piped stdin
    rest = [a for i, a in enumerate(argv) if i not in set(plan.args)]
    feeder = _stdin_feeder(live, initial=message, read_stdin=False)
    return tool_ended(live, passthrough.run(rest, env=live.child_env, stdin_feeder=feeder))


def _stdin_feeder(live: Live, *, initial: bytes, read_stdin: bool = True, prompt: str | None = None):
    """Feed the tool's stdin: blocks, then the prompt, byte for byte."""
    from wrapagent.session.conversation import collect_blocks

    def feed(wfd: int) -> None:
        data = initial + (read_all(0) if read_stdin else b"")
        text = data.decode("utf-8", "replace") if prompt is None else prompt
        prefix = collect_blocks(live, live.ctx, text, "stdin")
        if prefix:
            _injected(live, prefix, "stdin")
        else:
            live.record.record["injection"]["status"] = "none"
        payload = prefix.encode() + data
        view = memoryview(payload)
        while view:
            view = view[os.write(wfd, view):]

    return feed


def _injected(live: Live, prefix: str, path: str) -> None:
    from wrapagent.session.records import now_iso

    inj = live.record.record["injection"]
    inj.update(status="delivered", path=path, text=prefix, at=now_iso(), attempts=1)
