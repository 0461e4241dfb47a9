"""`[stop_check]`: a command that decides whether the agent may stop after a turn.

Exit 0: it may. Exit 2 with non-empty stdout: it must go on, and the
stdout, sanitised like a guard's body, becomes the next message:
`<prompt-guard name="stop_check">\\n…\\n</prompt-guard>`. Anything else (another
exit, a timeout, exit 2 without output) is a warning and the agent may stop.
Parsing lives here too, so the loader only names the table.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping

    from wrapagent.hooks.config_model import StopCheckSpec
    from wrapagent.hooks.context import GuardContext

CONTINUE_EXIT = 2
KEYS = ("enabled", "command", "timeout_secs", "max_continues", "quiet_secs")


def parse_stop_check(check, value: Any):
    """The file's `[stop_check]`: a StopCheckSpec, False when `enabled = false`, None when invalid."""
    from wrapagent.hooks import config_loader as cl
    from wrapagent.hooks.config_model import DEFAULT_MAX_CONTINUES, DEFAULT_STOP_CHECK_TIMEOUT, StopCheckSpec

    parts, prefix = ("stop_check",), "stop_check."
    table = cl._check_table(check, value, "stop_check", parts)
    if table is None:
        return None
    check.unknown_keys(table, KEYS, prefix, parts)
    enabled = cl._check_bool(check, table, "enabled", True, prefix, parts)
    command = cl._check_str(check, table, "command", prefix, parts, required=enabled)
    timeout = cl._check_timeout(check, table, "timeout_secs", DEFAULT_STOP_CHECK_TIMEOUT, prefix, parts)
    quiet = cl._check_timeout(check, table, "quiet_secs", 1.0, prefix, parts) if "quiet_secs" in table else None
    limit = table.get("max_continues", DEFAULT_MAX_CONTINUES)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        check.error(f"{prefix}max_continues", f"expected a whole number >= 0, got {limit!r}",
                    (*parts, "max_continues"))
        limit = DEFAULT_MAX_CONTINUES
    if not enabled:
        return False
    if command is None:
        return None
    return StopCheckSpec(command, True, timeout, limit, quiet, str(check.path))


class StopVerdict:
    """One run's outcome: `go_on` with the continuation `text`, or may stop (with a `warning`)."""

    __slots__ = ("go_on", "text", "warning", "result")

    def __init__(self, go_on: bool, text: str, warning: str | None, result) -> None:
        self.go_on = go_on
        self.text = text
        self.warning = warning
        self.result = result  # the HookResult


def continuation_text(body: str) -> str:
    """The message wrapagent submits: the check's output in a stop_check block, nothing after it."""
    return f'<prompt-guard name="stop_check">\n{body}\n</prompt-guard>'


def run_stop_check(spec: StopCheckSpec, ctx: GuardContext, *, base_env: Mapping[str, str],
                   log: Callable[[str], None], turn: int, continues: int) -> StopVerdict:
    """Run the check once (sh -c, cwd = project root, its timeout); never raises for its failures."""
    import json

    from wrapagent.hooks.guards import guard_stdin
    from wrapagent.hooks.hook_runner import hook_env, hook_variables, run_command, substitute
    from wrapagent.inject.blocks import neutralize_tags, sanitize

    payload = json.loads(guard_stdin(ctx))
    payload.update(turn=turn, continues=continues)
    result = run_command(
        substitute(spec.command, hook_variables(ctx, turn=turn)),
        name="stop_check",
        kind="stop_check",
        cwd=ctx.project_root,
        env=hook_env(base_env, ctx, {"WRAPAGENT_TURN": str(turn)}),
        timeout=spec.timeout_secs,
        stdin=json.dumps(payload).encode("utf-8"),
        log=log,
        capture_stdout=True,
    )
    if result.ok():
        return StopVerdict(False, "", None, result)
    if result.exit_code == CONTINUE_EXIT and not result.timed_out:
        body = neutralize_tags(sanitize(result.stdout).strip())
        if body:
            return StopVerdict(True, continuation_text(body), None, result)
        return StopVerdict(False, "", "stop_check exited 2 without output: the agent may stop", result)
    what = f"timed out after {spec.timeout_secs:g}s" if result.timed_out else (result.error or "failed")
    return StopVerdict(False, "", f"stop_check {what}: the agent may stop", result)
