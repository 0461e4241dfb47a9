"""`wrapagent config check`: every layer, its problems and trust, the merged result and where each
value came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wrapagent.hooks.tomlvalue import toml_table

from wrapagent.hooks.config_model import (LAYER_GLOBAL_CONFIG, LAYER_GLOBAL_HOOKS,
                                          LAYER_PROJECT_HOOKS, Config, EVENTS, Layer)

_LAYER_TITLES = {
    LAYER_GLOBAL_HOOKS: "global hooks",
    LAYER_GLOBAL_CONFIG: "global config",
    LAYER_PROJECT_HOOKS: "project hooks",
}


def _layer_status(layer: Layer) -> str:
    if not layer.exists:
        return "not found"
    if layer.trusted is False:
        if _changed_since_trusted(layer):
            return "CHANGED SINCE TRUSTED: hooks and guards in it are skipped until trusted again"
        return "NOT TRUSTED: hooks and guards in it are skipped"
    errors = sum(1 for p in layer.problems if p.severity == "error")
    warnings = len(layer.problems) - errors
    if errors and not layer.used:
        return f"NOT USED: {errors} error(s)" + (f", {warnings} warning(s)" if warnings else "")
    status = "used"
    if errors:  # only invalid [[prompt_guard]] entries: those are skipped, the rest is used
        status += f", invalid prompt guard entries skipped ({errors} error(s))"
    if layer.kind == LAYER_PROJECT_HOOKS:
        status += ", trusted" if layer.trusted else " (trust unknown)"
    return status + (f", {warnings} warning(s)" if warnings else "")


def _changed_since_trusted(layer: Layer) -> bool:
    """The file was trusted once and differs now, as the loader decided on the bytes it read.

    Not read again: a second read could meet another file (a link to
    `/dev/zero` or a FIFO swapped in meanwhile) and block or eat memory.
    """
    return layer.trust == "changed"


def _untrusted_notice(layer: Layer) -> str | None:
    try:
        from wrapagent.hooks.trust import untrusted_notice
    except ImportError:
        return None
    try:
        return untrusted_notice(Path(layer.path), changed=_changed_since_trusted(layer))
    except Exception:
        return None


def _fmt_seconds(value: float) -> str:
    return f"{value:g}s"


def describe(config: Config) -> str:
    """The report for `wrapagent config check`: layers, problems, the merged result and its sources."""
    out: list[str] = ["Files:"]
    for layer in config.layers:
        out.append(f"  {_LAYER_TITLES.get(layer.kind, layer.kind):<14} {layer.path}")
        out.append(f"  {'':<14} {_layer_status(layer)}")
        if layer.trusted is False:
            notice = _untrusted_notice(layer)
            if notice:
                out.extend(f"  {'':<14} {line}" for line in notice.splitlines())
    problems = config.problems
    out.append("")
    out.append("Validation:" if problems else "Validation: no problems")
    for problem in problems:
        out.append(f"  {problem.severity}: {problem}")

    out.append("")
    out.append("Lifecycle hooks:")
    for event in EVENTS:
        configured = config.lifecycle.get(event)
        hook = config.hook_for(event)
        if hook is not None:
            out.append(f"  {event:<17} {hook.command}")
            quiet = ""
            if event == "waiting_for_input":
                quiet = ("quiet " + _fmt_seconds(hook.quiet_secs) if hook.quiet_secs is not None
                         else "quiet: the tool's default") + ", "
            out.append(f"  {'':<17} {quiet}timeout {_fmt_seconds(hook.timeout_secs)}, from {hook.source}")
        elif configured is not None:
            out.append(f"  {event:<17} (disabled, from {configured.source})")
        else:
            out.append(f"  {event:<17} (none)")

    check = config.stop_check
    if check is None:
        out.append(f"  {'stop_check':<17} (none)")
    else:
        quiet = "quiet " + _fmt_seconds(check.quiet_secs) if check.quiet_secs is not None else "quiet: as for waiting"
        out.append(f"  {'stop_check':<17} {check.command}")
        out.append(f"  {'':<17} {quiet}, timeout {_fmt_seconds(check.timeout_secs)}, "
                   f"max {check.max_continues} continuations in a row, from {check.source}")
    out.append(f"  {'send':<17} {'enabled: wrapagent send is taken' if config.send else '(not enabled)'}")

    out.append("")
    sources = list(dict.fromkeys(guard.source for guard in config.guards))
    if len(sources) > 1:  # only `[extend] prompt_guard = true` in a project file mixes layers
        out.append("Prompt guards (the global ones extended by the project's, [extend] prompt_guard = true):")
    else:
        out.append("Prompt guards:" if config.guards else "Prompt guards: (none)")
    for number, guard in enumerate(config.guards, 1):
        if guard.builtin is not None:
            what = f"builtin {guard.builtin}"
            if guard.args:
                what += " args = " + toml_table(guard.args)
        else:
            what = f"command {guard.command}"
        out.append(f"  {number}. {guard.name}: {what}")
        every = ", every message" if guard.every_message else ""
        out.append(f"     timeout {_fmt_seconds(guard.timeout_secs)}{every}, from {guard.source}")

    out.append("")
    pre = config.pre_session
    if pre is None:
        out.append("pre_session: (none)")
    else:
        state = "" if pre.enabled else " (disabled)"
        out.append(f"pre_session:{state} {pre.command}")
        tools = ", ".join(pre.transports) if pre.transports else "all tools"
        out.append(f"  for {tools}; timeout {_fmt_seconds(pre.timeout_seconds)}, from {pre.source}")

    out.append("")
    cp = config.checkpoints
    out.append(f"Checkpoints: {'on (git projects)' if cp.enabled else 'off'}, budget {_fmt_seconds(cp.budget_secs)}; "
               f"transcripts {'on' if cp.transcripts else 'off'}, cap {cp.max_transcript_bytes} bytes; "
               f"from {cp.source}")
    rec = config.record
    cap = f"cap {rec.max_bytes} bytes" if rec.max_bytes else "no cap"
    out.append(f"Recording: {'on (terminal sessions)' if rec.enabled else 'off'}, {cap}; from {rec.source}")
    return "\n".join(out) + "\n"


def _layer_state(layer: Layer) -> str:
    """One word per layer for --json: not-found, untrusted, changed-since-trusted, errors, used."""
    if not layer.exists:
        return "not-found"
    if layer.trusted is False:
        return "changed-since-trusted" if _changed_since_trusted(layer) else "untrusted"
    if not layer.used:
        return "errors"
    return "used"


def _problem(problem: Any) -> dict:
    return {"path": problem.path, "severity": problem.severity, "line": problem.line, "key": problem.key,
            "message": problem.message}


def as_json(config: Config) -> dict:
    """`config check --json`: the same facts as `describe`; shape documented in docs/JSON.md."""
    lifecycle = {}
    for event in EVENTS:
        hook = config.hook_for(event)
        configured = config.lifecycle.get(event)
        if hook is not None:
            lifecycle[event] = {"command": hook.command, "enabled": True, "timeout_secs": hook.timeout_secs,
                                "quiet_secs": hook.quiet_secs, "source": hook.source}
        elif configured is not None:
            lifecycle[event] = {"command": configured.command, "enabled": False,
                                "timeout_secs": configured.timeout_secs, "quiet_secs": configured.quiet_secs,
                                "source": configured.source}
        else:
            lifecycle[event] = None
    pre = config.pre_session
    cp = config.checkpoints
    return {
        "ok": not config.has_errors,
        "layers": [{"kind": layer.kind, "path": layer.path, "exists": layer.exists, "used": layer.used,
                    "trusted": layer.trusted, "state": _layer_state(layer),
                    "problems": [_problem(p) for p in layer.problems]} for layer in config.layers],
        "lifecycle": lifecycle,
        "guards": [{"name": g.name, "builtin": g.builtin, "command": g.command, "args": dict(g.args),
                    "timeout_secs": g.timeout_secs, "source": g.source} for g in config.guards],
        "pre_session": None if pre is None else {
            "command": pre.command, "enabled": pre.enabled, "transports": list(pre.transports),
            "timeout_seconds": pre.timeout_seconds, "source": pre.source},
        "checkpoints": {"enabled": cp.enabled, "budget_secs": cp.budget_secs, "transcripts": cp.transcripts,
                        "max_transcript_bytes": cp.max_transcript_bytes, "source": cp.source},
        "record": {"enabled": config.record.enabled, "max_bytes": config.record.max_bytes,
                   "source": config.record.source},
    }
