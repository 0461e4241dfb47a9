"""`wrapagent doctor`: the human-readable text of the report and of a probe result.

Its own module because rendering is presentation only: it turns the plain
data of `collect` and `probe` (the same data `--json` prints) into text,
so the facts, the findings and the probe never format anything.
"""

from __future__ import annotations

import re
from typing import Any, Mapping


_LAYER_TITLES = {"global-hooks": "global hooks", "global-config": "global config",
                 "project-hooks": "project hooks"}


_LEVEL_COLOURS = {"error": "1;31", "warning": "33", "info": "36"}


def render(report: Mapping[str, Any], *, colour: bool = False) -> str:
    """The report of `collect` as text, section by section, findings last (levels coloured when `colour`)."""
    from wrapagent.commands.colour import GREEN, paint
    from wrapagent.commands.sessions import format_exit, format_time, hook_rows, visible_text

    out: list[str] = [f"wrapagent {report['wrapagent']} (python {report['python']})",
                      f"project: {report['project_root']}"]
    if report.get("inside_session"):
        out.append(f"(running inside wrapagent session {report['inside_session']})")

    out += ["", "Config layers:"]
    for layer in report["layers"]:
        title = _LAYER_TITLES.get(layer["kind"], layer["kind"])
        out.append(f"  {title:<14} {layer['path']}")
        status = layer["status"]
        if layer["kind"] == "project-hooks" and layer["exists"]:
            status += f" (trust: {layer.get('trust') or 'unknown'})"
        out.append(f"  {'':<14} {status}")
        out.extend(f"  {'':<14} {line}" for line in _session_settings_lines(layer))
        for p in layer["problems"]:
            out.append(f"  {'':<14} {p['severity']}: {p['text']}")

    hooks = report["hooks"]
    out += ["", "Lifecycle hooks (all tools):"]
    for event, hook in hooks["lifecycle"].items():
        if hook is None:
            out.append(f"  {event:<17} (none)")
        elif not hook["enabled"]:
            out.append(f"  {event:<17} (disabled, from {hook['source']})")
        else:
            origin = "built-in default" if hook["default"] else hook["source"]
            out.append(f"  {event:<17} {hook['command']}")
            out.append(f"  {'':<17} timeout {hook['timeout_secs']:g}s, from {origin}")
    pre = hooks["pre_session"]
    if pre is None:
        out.append(f"  {'pre_session':<17} (none)")
    else:
        tools = "all tools" if pre["tools"] == "all" else ", ".join(pre["tools"])
        state = "" if pre["enabled"] else " (disabled)"
        out.append(f"  {'pre_session':<17} {pre['command']}{state}")
        out.append(f"  {'':<17} for {tools}; timeout {pre['timeout_seconds']:g}s, from {pre['source']}")

    guards = hooks["guards"]
    out += ["", "Prompt guards (all tools, into the first message):" if guards else "Prompt guards: (none)"]
    for number, g in enumerate(guards, 1):
        if g["builtin"]:
            what = f"builtin {g['builtin']}"
            if g["args"]:
                from wrapagent.hooks.tomlvalue import toml_table

                what += " args = " + toml_table(g["args"].items())
        else:
            what = f"command {g['command']}"
        out.append(f"  {number}. {g['name']}: {what}")
        out.append(f"     timeout {g['timeout_secs']:g}s, from {g['source']}")
    out.append("  injected per tool:")
    for tool, inj in hooks["injects"].items():
        parts = []
        if inj["guards"]:
            parts.append("guards " + ", ".join(inj["guards"]))
        if inj["pre_session"]:
            parts.append("pre_session")
        out.append(f"    {tool:<9} {' + '.join(parts) if parts else 'nothing'}")

    out += ["", "Tools:"]
    for t in report["tools"]:
        if t["found"]:
            version = t["version"] or "version unknown"
            if t["version_error"]:
                version += f" ({t['version_error']})"
            out.append(f"  {t['name']:<9} {t['path']}")
            out.append(f"  {'':<9} version: {version}")
            out.append(f"  {'':<9} last seen ready: {_last_ready_text(t.get('last_ready'))}")
        else:
            out.append(f"  {t['name']:<9} not found{_not_found_detail(t['error'])}")
            # shim and alias lines only matter for a missing tool when something is set up for it
            if not (t["shim"] or {}).get("installed") and (t["alias"] or {}).get("state") != "alias":
                continue
        out.append(f"  {'':<9} shim: {_shim_text(t['shim'])}")
        out.append(f"  {'':<9} alias: {_alias_text(t['alias'])}")
        out.append(f"  {'':<9} wrapped when you type `{t['name']}`: {_wrapped_text(t['wrapped'])}")

    s = report["sessions"]
    out += ["", "Sessions (this project):", f"  root      {s['root']}"]
    if not s["exists"]:
        out.append("  git       (the folder does not exist yet: no session recorded here)")
    else:
        git = s["git"]
        if not git["repo"]:
            out.append("  git       not a git repository")
        else:
            state = "dirty" if git["dirty"] else "clean"
            if git["dirty"]:
                state += f" ({git['changes']} changed"
                if git.get("uncommitted_sessions"):
                    state += f", {len(git['uncommitted_sessions'])} session folder(s) never committed"
                state += ")"
            if git["error"]:
                state = f"unknown ({git['error']})"
            out.append(f"  git       repository, {git['commits']} commit(s), {state}")
        out.append(f"  sessions  {s['count']}")

    last = report.get("last_session")
    out.append("")
    if last is None:
        out.append("Last session: (none for this project)")
    else:
        version = f" {last['tool_version']}" if last.get("tool_version") else ""
        out.append(f"Last session: {last['id']} ({last['tool']}{version}, {format_time(last['started_at'])}, "
                   f"exit {format_exit(last)})")
        inj = last["injection"]
        details = []
        if inj.get("path") and inj.get("path") != "none":
            details.append(f"path {inj['path']}")
        from wrapagent.commands.sessions_show import ready_text

        ready = ready_text(inj, last.get("transport"))
        if ready:
            details.append(f"tool {ready}")
        line = f"  injection: {inj.get('status') or 'none'}"
        out.append(line + (f" ({', '.join(details)})" if details else ""))
        for note in inj.get("notes") or []:
            out.append(f"    note: {visible_text(str(note))}")
        out.append("  hooks:")
        out.extend(hook_rows(last["hooks"], indent="    "))
        out.extend(_last_whole_session_lines(last))
        for w in last.get("warnings") or []:
            out.append(f"  warning: {visible_text(str(w))}")

    out += ["", "Findings:"]
    if not report["findings"]:
        out.append("  " + paint("no problems found", GREEN, colour))
    for f in report["findings"]:
        out.append(f"  {paint(f['level'], _LEVEL_COLOURS.get(f['level'], ''), colour)}: {f['message']}")
    return "\n".join(out) + "\n"


def _session_settings_lines(layer: Mapping[str, Any]) -> list[str]:
    """A hooks layer's own `[stop_check]` and `[send]`; a project file's say whether they apply (trust)."""
    lines: list[str] = []
    check, send = layer.get("stop_check"), layer.get("send")
    if check is None and send is None:
        return lines
    applies = ""
    if layer["kind"] == "project-hooks" and not layer["used"]:
        applies = " (not applied: " + ("the file is not trusted" if layer.get("trusted") is False
                                       else "the file is not used") + ")"
    if check is not None:
        if not check["enabled"]:
            lines.append(f"[stop_check] disabled (enabled = false){applies}")
        else:
            quiet = "the tool's default" if check["quiet_secs"] is None else f"{check['quiet_secs']:g}s"
            lines.append(f"[stop_check] {check['command']}{applies}")
            lines.append(f"  max_continues {check['max_continues']}, quiet_secs {quiet}, "
                         f"timeout {check['timeout_secs']:g}s")
    if send is not None:
        lines.append(f"[send] {'enabled' if send else 'disabled'}{applies}")
    return lines


def _last_whole_session_lines(last: Mapping[str, Any]) -> list[str]:
    """How many continuations and sends the newest session had, and any that did not go in."""
    lines: list[str] = []
    check = last.get("stop_check")
    if check:
        line = (f"  stop check: {check['runs']} run(s), {check['continuations']} continuation(s)"
                + (f", {check['not_sent']} not sent" if check["not_sent"] else "")
                + (f", {check['interrupted']} stop(s) after the user interrupted" if check["interrupted"] else "")
                + (", still failing when let stop" if check["still_failing"] else ""))
        lines.append(line)
    sends = last.get("sends")
    if sends:
        line = f"  sends: {sends['total']} message(s), {sends['delivered']} delivered"
        if sends["not_delivered"]:
            line += f", {sends['not_delivered']} NOT delivered ({'; '.join(sends['reasons'])})"
        lines.append(line)
    return lines


def _last_ready_text(ready: Mapping[str, Any] | None) -> str:
    """Which rule saw the tool ready in its newest such session, and the release that ran."""
    from wrapagent.commands.doctor_readiness import rule_text
    from wrapagent.commands.sessions import format_time

    if not ready:
        return "(no session of yours saw it ready yet)"
    release = f"{ready['tool_version']}, " if ready.get("tool_version") else "version not recorded, "
    return (f"by {rule_text(ready.get('ready_by'))} "
            f"({release}session {ready.get('id')}, {format_time(ready.get('started_at'))})")


def _not_found_detail(error: str | None) -> str:
    """The useful part of resolve's message (what was skipped), without the whole PATH."""
    if not error:
        return ""
    match = re.search(r"\((.*)\)\s*$", error)
    if not match:
        return f" ({error})"
    notes = [n for n in match.group(1).split("; ") if not n.startswith("searched PATH:")]
    return f" on PATH ({'; '.join(notes)})" if notes else " on PATH"


def _shim_text(shim: Mapping[str, Any] | None) -> str:
    if not shim or shim.get("installed") is None:
        return f"unknown ({(shim or {}).get('error', 'no status')})"
    if not shim["installed"]:
        return "none"
    text = "active" if shim["active"] else "installed, not in effect"
    return f"{text} ({shim['note']})" if shim.get("note") else text


def _alias_text(alias: Mapping[str, Any]) -> str:
    state = alias.get("state")
    if state == "unknown":
        return "unknown (aliases live in your shell)"
    if state == "alias":
        return f"{alias['text']}  ({alias['file']}:{alias['line']})"
    if state == "init":
        return f"from `wrapagent init` ({alias['file']}:{alias['line']})"
    files = ", ".join(alias.get("files") or []) or "no rc file found"
    return f"none found ({files}; aliases defined elsewhere cannot be seen from here)"


def _wrapped_text(wrapped: str) -> str:
    return {"shim": "yes (shim)", "alias": "yes in interactive shells (alias)", "no": "no",
            "unknown": "unknown"}.get(wrapped, wrapped)


def render_probe(result: Mapping[str, Any], *, colour: bool = False) -> str:
    """The result of `probe` as text; the last screen only when readiness did not fire."""
    import shlex

    from wrapagent.commands.colour import GREEN, RED, paint

    out = [f"Probe: {result['tool']}"]
    if result["error"]:
        out.append(f"  {paint('error', RED, colour)}         {result['error']}")
        return "\n".join(out) + "\n"
    out.append(f"  command       {' '.join(shlex.quote(a) for a in result['argv'])}")
    if result.get("adapter") != "demo":
        out.append(f"  version       {result.get('tool_version') or 'unknown'}")
    out.append(f"  terminal      private {result['cols']}x{result['rows']}; "
               f"{result['queries_answered']} terminal queries answered")
    types_input = result.get("types_input", True)
    if "kind" in result:
        what = ("wrapagent types its blocks and messages into it" if types_input else
                "proxied and recorded with its hooks, nothing typed into it "
                "(name it in [agents] programs of the global hooks.toml if it is an agent)")
        out.append(f"  kind          {result['kind']}: {what}")
    if result["ready"]:
        from wrapagent.commands.doctor_readiness import fallback_message

        by = result.get("ready_by")
        rule = {"marker": " by its own screen markers", "generic": " by the generic rule"}.get(str(by), "")
        out.append(f"  readiness     {paint('FIRED', GREEN, colour)} after {result['ready_after_s']:.2f}s{rule} "
                   + ("(wrapagent would inject into the first message)" if types_input else
                      "(no agent: nothing would be typed)"))
        from wrapagent.inject.adapters import KNOWN_TOOLS

        if by == "generic" and result.get("adapter") in KNOWN_TOOLS:
            tool = str(result.get("adapter"))
            out.append(f"  note          {fallback_message(tool, result.get('tool_version'), 'on this start')}")
    else:
        quit_info = result["quit"] or {}
        if result.get("emulator_error"):
            why = "wrapagent's screen emulator failed on the tool's output"
        elif quit_info.get("exited_before_quit"):
            why = "the tool exited first"
        else:
            why = f"within {result['timeout_s']:g}s; a first start can be slow: try --timeout 120"
        out.append(f"  readiness     {paint('NOT FIRED', RED, colour)} ({why})")
        if result.get("emulator_error"):
            out.append(f"  emulator      {result['emulator_error']}")
            out.append("                (a wrapagent bug: the live proxy fails the same way; please report it)")
    for m in result["markers"]:
        out.append(f"  marker        {m['pattern']!r}: {'on screen' if m['on_screen'] else 'NOT on screen'}")
    if not result["markers"]:
        out.append("  marker        (none for this tool: bracketed paste + quiet output means ready)")
    if result["bracketed_paste_required"]:
        seen = "enabled" if result["bracketed_paste"] else "NEVER enabled (wrapagent waits for ESC[?2004h)"
        out.append(f"  paste mode    bracketed paste {seen}")
    q = result["quit"] or {}
    if q.get("exited_before_quit"):
        out.append(f"  exit          the tool exited by itself with code {q.get('exit_code')}")
    else:
        keys = " then ".join(repr(k) for k in q.get("keys", [])[: q.get("keys_sent", 0)]) or "no keys"
        how = f"sent {keys}"
        if q.get("sigterm"):
            how += "; still running: SIGTERM"
        if q.get("sigkill"):
            how += "; still running: SIGKILL"
        after = f" after {q['seconds']:.2f}s" if q.get("seconds") is not None else ""
        sig = f" (signal {q['signal']})" if q.get("signal") else ""
        out.append(f"  quit          {how}; exit code {q.get('exit_code')}{sig}{after}")
    if not result["ready"] and result["screen"] is not None:
        out.append(f"  last screen ({result['cols']}x{result['rows']}):")
        lines = result["screen"].split("\n")
        while lines and not lines[-1].strip():
            lines.pop()
        from wrapagent.commands.sessions import visible_text

        out.extend(f"  | {visible_text(line)}" for line in lines or ["(empty)"])
    return "\n".join(out) + "\n"
