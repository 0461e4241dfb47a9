"""`[stop_check]`: a command that decides whether the agent may stop after a turn.

Exit 0: it may. Exit 2 with non-empty stdout: it must go on, and the
stdout, sanitised like a guard's body, becomes the next message:
`<prompt-guard name="stop_check">\\n…\\n</prompt-guard>`. Anything else (another
exit, a timeout, exit 2 without output) is a warning and the agent may stop.
The table is parsed by the config loader (`_parse_stop_check`).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping

    from wrapagent.hooks.config_model import StopCheckSpec
    from wrapagent.hooks.context import GuardContext

CONTINUE_EXIT = 2


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
