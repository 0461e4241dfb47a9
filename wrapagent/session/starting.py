"""The start phase: the `before` checkpoint, then the tool in the mode the plan chose.

Five ways to start: blocks put into a prompt argument, blocks fed on the
tool's stdin (a piped prompt, `opencode run` arguments moved to stdin,
gemini's stdin-before-argument), plain pipe mode, and a terminal session
whose conversation (`conversation.Conversation`) watches the keys. Each
returns the proxy's result, already written into the record.
"""

import os


TYPE_CHECKING = False
if TYPE_CHECKING:
    from wrapagent.session.live import Live
    from wrapagent.session.planning import Launch


def history_before(live: "Live") -> None:
    """Snapshot the work tree just before the tool starts: the user's own edits are "before"."""
    import time

    from wrapagent.history import checkpoints

    if live.tool_started is None:
        live.tool_started = time.time()
    try:
        checkpoints.begin(live.record.record, live.cfg.checkpoints, live.launch.root_str, live.env)
    except Exception as exc:  # never the end of the session
        live.record.warn(f"checkpoints: {exc!r}")
    if (live.record.record.get("checkpoints") or {}).get("status") == "taken":
        # The running record names its store and `before`: `sessions diff/undo ID --turn N`
        # reach a running session's turns through it (the record is otherwise saved at the end).
        live.record.save(durable=False)


def run_tool(live: "Live"):
    """Start the tool in the planned mode and proxy it to its end; the result, in the record."""
    from wrapagent.proxy import passthrough
    from wrapagent.proxy import pty_loop
    from wrapagent.session.conversation import Conversation, collect_blocks, undo_notices
    from wrapagent.session.finishing import tool_ended
    from wrapagent.session.live import look_up_version
    from wrapagent.session.planning import prompt_plan, wants_injection

    launch = live.launch
    plan = prompt_plan(launch) if wants_injection(launch, live.cfg) else None
    inj = live.record.record["injection"]
    if plan is not None:
        inj["path"] = plan.kind
        if plan.reason:
            inj["notes"].append(plan.reason)
        live.child_env = launch.adapter.child_env(live.child_env)
    elif (live.cfg.stop_check is not None or live.cfg.send or undo_notices(live)) and launch.interactive:
        # A continuation or an undo block is delivered like the blocks: the same settings (opencode's paste).
        live.child_env = launch.adapter.child_env(live.child_env)
    env = live.child_env
    argv = list(launch.argv)

    def spawned(pid: int) -> None:  # the tool runs: its version is looked up beside it
        look_up_version(live)

    head = _pre_read_stdin(launch, plan)
    if plan is not None and plan.kind == "argv" and head is not None and head[0]:
        # gemini puts piped stdin BEFORE the prompt argument: the blocks go
        # on stdin then, so they still come first.
        inj["path"] = "stdin"
        data, eof = head
        feeder = _stdin_feeder(live, initial=data, stdin_left=not eof,
                               prompt=_prompt_text(data) + "\n\n" + argv[plan.index])
        return tool_ended(live, passthrough.run(argv, env=env, stdin_feeder=feeder, on_spawn=spawned))
    if plan is not None and plan.kind == "argv":
        _inject_into_argument(live, argv, plan.index)
    if plan is not None and plan.kind == "stdin-args":
        return _run_stdin_args(live, argv, plan, head or (b"", True))
    if plan is not None and plan.kind == "stdin":
        feeder = _stdin_feeder(live, initial=b"", read_head=True)
        return tool_ended(live, passthrough.run(argv, env=env, stdin_feeder=feeder, on_spawn=spawned))
    if not launch.interactive:
        return tool_ended(live, passthrough.run(argv, env=env, on_spawn=spawned))
    from wrapagent.session.recorded import start_recording

    start_recording(live)
    conversation = Conversation.start(live, plan)
    try:
        result = pty_loop.run(argv, env=env, after_start=lambda: spawned(0),  # after the first output
                              on_output=live.recorder,
                              interceptor=conversation.interceptor if conversation is not None else None)
    finally:
        if conversation is not None:
            conversation.report()
    return tool_ended(live, result)


ARG_CAP = 128 * 1024 - 1
"""Bytes one argument may have: Linux's MAX_ARG_STRLEN (32 pages, with the NUL) is the tightest
limit of the two platforms (macOS limits only the total, ARG_MAX = 1 MiB)."""


def _inject_into_argument(live: "Live", argv: "list[str]", index: int) -> None:
    """Put the blocks in front of the prompt argument, the whole argument kept under ARG_CAP.

    Longer, the tool could not start at all (E2BIG: exit 126): the last
    blocks are cut or dropped instead, and the record and log say which.
    """
    from wrapagent.inject.blocks import cap_prefix
    from wrapagent.session.conversation import collect_blocks

    inj = live.record.record["injection"]
    prompt = argv[index]
    prefix = collect_blocks(live, live.ctx, prompt, "argv")
    room = ARG_CAP - len(os.fsencode(prompt))
    prefix, notes = cap_prefix(prefix, room)
    for note in notes:
        note = f"{note} (a prompt argument is kept under {ARG_CAP + 1} bytes)"
        inj["notes"].append(note)
        live.record.log(f"injection: {note}")
    if notes:
        live.failures.append("blocks cut to fit the prompt argument")
    if prefix:
        argv[index] = prefix + prompt
        _injected(live, prefix, "argv")
    else:
        inj["status"] = "none"


def _pre_read_stdin(launch: "Launch", plan) -> "tuple[bytes, bool] | None":
    """The start of piped stdin, read up front where the tool mixes it with argv prompts.

    gemini (stdin first, then the argument) and `opencode run` (arguments,
    then "\n" + stdin, nothing when stdin is empty) need to know whether
    stdin holds anything before wrapagent decides where the blocks go: its
    first bytes tell (`stdin_head`); the rest is streamed to the tool.
    """
    from wrapagent.proxy.terminal import is_tty

    if plan is None or is_tty(0):
        return None
    if plan.kind == "stdin-args" or (plan.kind == "argv" and launch.adapter.stdin_before_arg):
        return stdin_head(0)
    return None


def stdin_head(fd: int, cap: "int | None" = None) -> "tuple[bytes, bool]":
    """The first bytes of piped stdin: (bytes, whether stdin ended).

    Waits for the first byte (or the end), then takes what keeps arriving
    without a pause of HEAD_QUIET_SECS, up to `cap` (pre_session's share
    of the prompt). A stream that never ends (`tail -f log | …`) is never
    waited for: the tool gets its head now and the rest as it comes.
    """
    import select

    from wrapagent.hooks.guards import PROMPT_CAP

    cap = PROMPT_CAP if cap is None else cap
    chunks: list[bytes] = []
    size = 0
    while size < cap:
        if chunks:
            try:
                if not select.select([fd], [], [], HEAD_QUIET_SECS)[0]:
                    break
            except (OSError, ValueError):
                break
        try:
            chunk = os.read(fd, min(65536, cap - size))
        except OSError:
            chunk = b""
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


HEAD_QUIET_SECS = 0.05
"""A pause in piped input this long ends the part pre_session sees (never what the tool gets)."""


def _prompt_text(data: bytes) -> str:
    """What pre_session reads of a prompt: its first PROMPT_CAP bytes, decoded."""
    from wrapagent.hooks.guards import PROMPT_CAP

    return data[:PROMPT_CAP].decode("utf-8", "replace")


def _run_stdin_args(live: "Live", argv: "list[str]", plan, head: "tuple[bytes, bool]"):
    """`opencode run a b`: message args move to stdin, joined the way the tool joins them."""
    from wrapagent.inject.adapters.opencode import quote_join
    from wrapagent.proxy import passthrough
    from wrapagent.session.finishing import tool_ended
    from wrapagent.session.live import look_up_version

    message = quote_join([argv[i] for i in plan.args]).encode()
    data, eof = head
    if data:
        message += b"\n" + data  # the tool's own join of args and piped stdin
    rest = [a for i, a in enumerate(argv) if i not in set(plan.args)]
    feeder = _stdin_feeder(live, initial=message, stdin_left=not eof)
    return tool_ended(live, passthrough.run(rest, env=live.child_env, stdin_feeder=feeder,
                                                   on_spawn=lambda pid: look_up_version(live)))


def _stdin_feeder(live: "Live", *, initial: bytes, read_head: bool = False, stdin_left: bool = False,
                  prompt: "str | None" = None):
    """Feed the tool's stdin: blocks, then the prompt, byte for byte, streamed.

    `read_head`: the prompt is piped stdin, not read yet (its head is read
    here, for pre_session); `stdin_left`: stdin has more after `initial`.
    Either way the rest of stdin is copied as it comes, in bounded chunks:
    a prompt of any size, or one that never ends, costs no memory.
    """
    from wrapagent.session.conversation import collect_blocks

    def feed(wfd: int) -> None:
        from wrapagent.child_process import leave_signals_to_the_main_thread

        leave_signals_to_the_main_thread()  # (the guards it runs start with an empty mask all the same)
        data, more = initial, stdin_left
        if read_head:
            head, eof = stdin_head(0)
            data, more = initial + head, not eof
        text = _prompt_text(data) if prompt is None else prompt
        prefix = collect_blocks(live, live.ctx, text, "stdin")
        if prefix:
            _injected(live, prefix, "stdin")
        else:
            live.record.record["injection"]["status"] = "none"
        _write_all(wfd, prefix.encode() + data)
        del data
        while more:
            chunk = os.read(0, 65536)
            if not chunk:
                break
            _write_all(wfd, chunk)

    return feed


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _injected(live: "Live", prefix: str, path: str) -> None:
    from wrapagent.history.records import now_iso

    inj = live.record.record["injection"]
    inj.update(status="delivered", path=path, text=prefix, at=now_iso(), attempts=1)
