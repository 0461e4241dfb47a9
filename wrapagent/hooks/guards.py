"""pre_session hook + prompt guards → the text prepended to the first user message.

Everything here is fail-open: a guard that fails, hangs, or prints nothing is
logged and left out; the user's message is delivered regardless. Guards run
one after another in configuration order (their output order is the block
order, and running them in parallel would make a slow machine slower).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Callable, Mapping

if TYPE_CHECKING:
    from wrapagent.hooks.config_loader import Config, GuardSpec, PreSessionHook
    from wrapagent.hooks.context import GuardContext
    from wrapagent.hooks.hook_runner import HookResult

PROMPT_SOURCES = ("argv", "stdin", "none")
PROMPT_CAP = 64 * 1024
"""Bytes of the prompt pre_session reads on its stdin (the tool always gets the whole prompt)."""
CSA_TRANSPORTS = {"claude": "claude-code", "gemini": "gemini-cli"}
"""wrapagent's tool names that CSA spells differently; codex and opencode are the same."""


@dataclass
class GuardRun:
    """One pre_session / guard execution: `body` is the sanitised block text, "" when skipped."""

    name: str
    kind: str  # "pre_session" | "guard" | "builtin"
    body: str
    result: HookResult | None
    error: str | None


@dataclass
class Collected:
    """The prefix to inject and every run behind it (for the session record)."""

    prefix: str  # blocks.build_prefix(...): "" or the blocks followed by a blank line
    runs: list[GuardRun] = field(default_factory=list)

    def records(self) -> list[dict]:
        """Hook records for session.json, in execution order."""
        return [run.result.to_record() for run in self.runs if run.result is not None]


def _say(log: Callable[[str], None], message: str) -> None:
    try:
        log(message)
    except Exception:
        pass


def guard_stdin(ctx: GuardContext, message: MessageInfo | None = None) -> bytes:
    """The JSON a command guard reads on stdin (CSA's GuardContext; in a terminal session also
    which message of which conversation it runs for)."""
    import json

    payload = {
        "project_root": str(ctx.project_root),
        "session_id": ctx.session_id,
        "tool": ctx.tool,
        "is_resume": bool(ctx.is_resume),
        "compaction": bool(ctx.compaction),
        "cwd": str(ctx.cwd),
    }
    if message is not None:
        payload.update(message=message.message, conversation=message.conversation)
    return json.dumps(payload).encode("utf-8")


def guard_variables(ctx: GuardContext, turn: int | None = None) -> dict[str, str]:
    """The hooks' placeholders for a guard's or pre_session's command, with `{compaction}`."""
    from wrapagent.hooks.hook_runner import hook_variables

    return {**hook_variables(ctx, turn=turn), "compaction": "true" if ctx.compaction else "false"}


class MessageInfo:
    """Which message the guards run for: `message` 1-based within `conversation`; `turn` (the
    turn this message starts) is `{turn}` and WRAPAGENT_TURN for an every_message guard."""

    __slots__ = ("message", "conversation", "turn")

    def __init__(self, message: int, conversation: int, turn: int | None) -> None:
        self.message = message
        self.conversation = conversation
        self.turn = turn


def _body_from(result: HookResult, label: str, log: Callable[[str], None]) -> tuple[str, str | None]:
    """(sanitised body, error). A failed run gives no body, whatever it printed."""
    from wrapagent.inject.blocks import sanitize

    if not result.ok():
        reason = result.error or "failed"
        _say(log, f"warning: {label} skipped: {reason}")
        return "", reason
    return sanitize(result.stdout), None


def csa_env(ctx: GuardContext) -> dict[str, str]:
    """The names CSA's documentation gives a pre_session hook, so hooks written for CSA run unchanged."""
    return {
        "CSA_SESSION_ID": ctx.session_id,
        "CSA_TRANSPORT": CSA_TRANSPORTS.get(ctx.tool, ctx.tool),
        "CSA_PROJECT_ROOT": str(ctx.project_root),
        "CSA_WORKING_DIR": str(ctx.cwd),
    }


def run_pre_session(
    hook: PreSessionHook,
    ctx: GuardContext,
    *,
    base_env: Mapping[str, str],
    prompt: str | None,
    prompt_source: str,
    log: Callable[[str], None],
) -> GuardRun:
    """Run the global pre_session hook: prompt on stdin, WRAPAGENT_PROMPT_SOURCE and CSA_* in env,
    the hooks' placeholders in its command."""
    from wrapagent.hooks.hook_runner import hook_env, run_command, substitute

    source = prompt_source if prompt_source in PROMPT_SOURCES else "none"
    env = hook_env(base_env, ctx, {"WRAPAGENT_PROMPT_SOURCE": source, **csa_env(ctx)})
    stdin = prompt.encode("utf-8", errors="replace")[:PROMPT_CAP] if prompt is not None else b""
    result = run_command(
        substitute(hook.command, guard_variables(ctx)),
        name="pre_session",
        kind="pre_session",
        cwd=ctx.project_root,
        env=env,
        timeout=hook.timeout_seconds,
        stdin=stdin,
        log=log,
        capture_stdout=True,
    )
    body, error = _body_from(result, "pre_session", log)
    if not body and error is None:
        _say(log, "warning: pre_session produced no output, no block")
    return GuardRun("pre_session", "pre_session", body, result, error)


def run_command_guard(
    guard: GuardSpec, ctx: GuardContext, *, base_env: Mapping[str, str], log: Callable[[str], None],
    message: MessageInfo | None = None,
) -> GuardRun:
    """Run one command guard with the hooks' placeholders filled in, quoted as for a hook.

    `{turn}` (and WRAPAGENT_TURN) is the turn an every_message guard's message
    starts; for the blocks of a conversation's first message it is empty.
    """
    from wrapagent.hooks.hook_runner import hook_env, run_command, substitute

    turn = message.turn if message is not None and guard.every_message else None
    extra = {"WRAPAGENT_TURN": str(turn)} if turn is not None else None
    result = run_command(
        substitute(guard.command or "", guard_variables(ctx, turn=turn)),
        name=guard.name,
        kind="guard",
        cwd=ctx.project_root,
        env=hook_env(base_env, ctx, extra),
        timeout=guard.timeout_secs,
        stdin=guard_stdin(ctx, message),
        log=log,
        capture_stdout=True,
    )
    body, error = _body_from(result, f"prompt guard {guard.name!r}", log)
    if not body and error is None:
        _say(log, f"prompt guard {guard.name!r}: no output, no block")
    return GuardRun(guard.name, "guard", body, result, error)


def run_builtin_guard(guard: GuardSpec, ctx: GuardContext, *, log: Callable[[str], None]) -> GuardRun:
    """A built-in guard runs in-process; any exception it raises is a warning, never fatal."""
    from wrapagent.inject.blocks import sanitize
    from wrapagent.hooks.hook_runner import HookResult

    name = guard.builtin or ""
    started = time.monotonic()
    error: str | None = None
    output = ""
    try:
        from wrapagent.hooks.builtins import run_builtin

        output = run_builtin(name, dict(guard.args), ctx, timeout=guard.timeout_secs)
    except Exception as exc:  # includes ImportError while the built-ins are missing
        error = f"{type(exc).__name__}: {exc}"
        _say(log, f"warning: prompt guard {guard.name!r} (builtin {name}) skipped: {error}")
    result = HookResult(
        name=guard.name,
        kind="guard",
        command=f"builtin:{name}",
        exit_code=0 if error is None else None,
        duration_s=time.monotonic() - started,
        timed_out=False,
        error=error,
    )
    body = sanitize(output or "") if error is None else ""
    return GuardRun(guard.name, "builtin", body, result, error)


def collect(
    config: Config,
    ctx: GuardContext,
    *,
    base_env: Mapping[str, str],
    prompt: str | None,
    prompt_source: str,
    log: Callable[[str], None],
    message: MessageInfo | None = None,
) -> Collected:
    """Run pre_session (if it applies) then every guard in order; build the prefix.

    For a later message of a conversation (`message.message` > 1) only the
    `every_message` guards run, and pre_session does not. After a compaction
    (`ctx.compaction`) every guard and pre_session run again, as for a first message.
    """
    from wrapagent.inject.blocks import build_prefix

    runs: list[GuardRun] = []
    pre_session_body = ""
    later = message is not None and message.message > 1 and not ctx.compaction
    hook = config.pre_session
    if not later and hook is not None and hook.enabled and hook.command and hook.applies_to(ctx.tool):
        run = run_pre_session(
            hook, ctx, base_env=base_env, prompt=prompt, prompt_source=prompt_source, log=log
        )
        runs.append(run)
        pre_session_body = run.body

    guard_bodies: list[tuple[str, str]] = []
    for guard in config.guards:
        if later and not guard.every_message:
            continue
        if guard.builtin is not None:
            run = run_builtin_guard(guard, ctx, log=log)
        else:
            run = run_command_guard(guard, ctx, base_env=base_env, log=log, message=message)
        runs.append(run)
        if run.body:
            guard_bodies.append((guard.name, run.body))
    return Collected(build_prefix(pre_session_body, guard_bodies), runs)
