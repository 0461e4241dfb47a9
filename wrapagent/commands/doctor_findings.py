"""`wrapagent doctor`: findings, what to fix, read from the gathered facts.

Its own module because it is the judgement, not the gathering: it reads
only the plain report data (the `--json` output), so each rule can be
changed, and tested, without any config, tool or session around.
Most likely cause first; an ERROR finding makes `wrapagent doctor` exit 1.
"""

from __future__ import annotations

from typing import Any, Mapping

ERROR, WARNING, INFO = "error", "warning", "info"


def findings(report: Mapping[str, Any], env: Mapping[str, str]) -> list[dict[str, str]]:
    """The findings of a report from `collect` (without its "findings" key), in order."""
    out: list[dict[str, str]] = []

    def add(level: str, message: str) -> None:
        out.append({"level": level, "message": message})

    if env.get("WRAPAGENT_DISABLE") == "1":
        add(WARNING, "WRAPAGENT_DISABLE=1 is set: wrapagent runs every tool directly, without hooks or guards")
    titles = {"global-hooks": "global hooks", "global-config": "global config", "project-hooks": "project hooks"}
    for layer in report["layers"]:
        title = titles.get(layer["kind"], layer["kind"])
        errors = [p for p in layer["problems"] if p["severity"] == "error"]
        if errors and not layer.get("used", False):
            add(ERROR, f"{title} {layer['path']} has {len(errors)} error(s), so none of it is used; "
                       f"first: {errors[0]['text']}")
        elif errors:
            add(ERROR, f"{title} {layer['path']}: {len(errors)} error(s) in prompt guard entries, which are "
                       f"skipped (the rest of the file is used); first: {errors[0]['text']}")
        if layer["exists"] and layer["trusted"] is False:
            what = "changed since you trusted it" if layer.get("trust") == "changed" else "not trusted"
            add(WARNING, f"{title} {layer['path']} is {what}: its hooks and guards are skipped; "
                         f"review and trust it with `wrapagent trust {layer['path']}`")
    hooks = report["hooks"]
    if not hooks["guards"] and not (hooks["pre_session"] and hooks["pre_session"]["enabled"]):
        add(WARNING, "no prompt guards and no pre_session hook in effect: there is nothing to inject "
                     "(`wrapagent config init` writes a starter hooks.toml)")
    if report["tools"] and not any(tool["found"] for tool in report["tools"]):
        names = ", ".join(tool["name"] for tool in report["tools"])
        add(WARNING, f"none of the coding CLIs is installed ({names}): install one, e.g. "
                     "`npm install -g @openai/codex` (or @anthropic-ai/claude-code, @google/gemini-cli, "
                     "opencode-ai), or try `wrapagent demo`, which needs none")
    for tool in report["tools"]:
        if not tool["found"]:
            continue
        shim = tool.get("shim") or {}
        if shim.get("installed") and not shim.get("active") and shim.get("note"):
            add(WARNING, f"{tool['name']}: shim installed but not in effect ({shim['note']})")
        if tool["wrapped"] == "no":
            add(WARNING, f"{tool['name']}: no active shim and no alias found, so typing `{tool['name']}` "
                         f"runs it without wrapagent (`wrapagent shims install`, or "
                         f"`wrapagent init {tool['alias'].get('shell') or 'bash'}` in your shell rc)")
    from wrapagent.commands.doctor_readiness import fallback_message
    from wrapagent.commands.sessions_show import undelivered

    for tool in report["tools"]:
        ready = tool.get("last_ready")
        if tool["found"] and ready and ready.get("ready_by") == "generic":
            convs = ready.get("conversations") or []
            where = f"in your last session with it ({ready.get('id')})"
            if convs and 1 not in convs:
                where = f"after a reset in your last session with it ({ready.get('id')})"
            add(INFO, fallback_message(tool["name"], ready.get("tool_version"), where))
    last = report.get("last_session")
    if last is not None:
        inj = last.get("injection") or {}
        status = inj.get("status")
        notes = "; ".join(str(n) for n in inj.get("notes") or [])
        if status == "lost":
            add(ERROR, f"the last session ({last['id']}, {last['tool']}) did not get the blocks: "
                       f"{notes or 'injection lost'}; `wrapagent doctor --probe {last['tool']}` checks "
                       f"whether wrapagent sees that tool's ready screen")
        elif undelivered(last):
            rows = undelivered(last)
            add(ERROR, f"the last session ({last['id']}, {last['tool']}) sent {len(rows)} message(s) without "
                       f"the blocks: the screen never showed them in the composer "
                       f"(`wrapagent sessions show {last['id']}` says why)")
        elif status == "pending" and last.get("state") == "finished":
            add(WARNING, f"the last session ({last['id']}) ended with the injection still pending")
        elif status == "none" and inj.get("path") == "none" and inj.get("notes"):
            add(INFO, f"the last session ({last['id']}, {last['tool']}) had nowhere to inject: {notes}")
        for hook in last.get("hooks") or []:
            if hook.get("timed_out") or hook.get("error") or (hook.get("exit_code") not in (0, None)):
                what = "timed out" if hook.get("timed_out") else (
                    hook.get("error") or f"exit {hook.get('exit_code')}")
                add(ERROR, f"the last session's {hook.get('kind')} {hook.get('name')!r} failed ({what}); "
                           f"see `wrapagent sessions show {last['id']}`")
        sends = last.get("sends") or {}
        if sends.get("not_delivered"):
            add(WARNING, f"the last session ({last['id']}) did not deliver {sends['not_delivered']} message(s) "
                         f"from `wrapagent send` ({'; '.join(sends.get('reasons') or [])}); "
                         f"see `wrapagent sessions show {last['id']}`")
    git = report["sessions"]["git"]
    if report["sessions"]["exists"] and not git["repo"]:
        add(INFO, f"the sessions folder {report['sessions']['root']} is not a git repository yet")
    elif git.get("uncommitted_sessions"):
        ids = git["uncommitted_sessions"]
        shown = ", ".join(ids[:3]) + (" …" if len(ids) > 3 else "")
        add(INFO, f"{len(ids)} session folder(s) not committed to the sessions repository ({shown}): "
                  "still running, or their session_complete hook did not commit")
    return out
