"""`wrapagent doctor`: why didn't my guard show up?

    wrapagent doctor [--json]
    wrapagent doctor --probe TOOL [--timeout S] [--json] [-- TOOL-ARGS...]

The report gathers, without starting any agent: the config layers (problems,
trust), the merged hooks and guards and which tools they apply to, each
known tool (real binary, version, shim, alias), the project's sessions
repository and the last session's hook outcomes and injection status. It
ends with findings: what to fix, most likely cause first.

`--probe TOOL` starts the real TOOL (not wrapped: no hooks, no record) in a
private 120x40 terminal and feeds its output to the same
`FirstMessageInjector` wrapagent uses, to see whether readiness detection
fires for this installed version; then quits it with the adapter's
`quit_keys` (SIGTERM only if that did not work, SIGKILL only after that).
`demo` probes the built-in demo agent. The probe answers the terminal
queries TUIs send at start-up (cursor position, device attributes, colours)
the way a terminal would: nobody else is there to answer them.

Exit status: 0, or 1 when something is wrong (config errors, the last
session's injection lost or a hook failed; for `--probe`: readiness did not
fire or the tool could not be started).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any, Callable, Mapping, Sequence

VERSION_TIMEOUT_SECS = 10.0
PROBE_TIMEOUT_SECS = 30.0
"""opencode's first start took 17 s on a 2-core machine; a ready tool ends the wait at once."""
PROBE_ROWS, PROBE_COLS = 40, 120
QUIT_KEY_GAP_SECS = 0.3
"""Between quit key groups (claude and gemini want Ctrl-C twice, not as one read)."""
QUIT_WAIT_SECS = 3.0
"""After the last quit key: how long the tool gets to exit before SIGTERM."""
TERM_WAIT_SECS = 3.0
"""After SIGTERM: how long before SIGKILL."""
SETTLE_QUIET_SECS, SETTLE_MAX_SECS = 0.5, 2.0
"""Before the quit keys: output quiet this long (at most SETTLE_MAX_SECS). gemini ignores keys
for about a second after its input box appears."""

ERROR, WARNING, INFO = "error", "warning", "info"
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")


# =========================================================================== report: facts


def _tools() -> tuple[str, ...]:
    from wrapagent.inject.adapters import KNOWN_TOOLS

    return tuple(KNOWN_TOOLS)


def _layer_facts(layer: Any, env: Mapping[str, str]) -> dict[str, Any]:
    from wrapagent.hooks.config_loader import LAYER_PROJECT_HOOKS

    trust_state = None
    if layer.kind == LAYER_PROJECT_HOOKS and layer.exists:
        trust_state = _trust_state(Path(layer.path), env, layer.trusted)
    errors = [p for p in layer.problems if p.severity == "error"]
    if not layer.exists:
        status = "not found"
    elif layer.trusted is False:
        status = "not used: changed since trusted" if trust_state == "changed" else "not used: untrusted"
    elif errors:
        status = f"not used: {len(errors)} error(s)"
    else:
        status = "used"
    return {
        "kind": layer.kind,
        "path": layer.path,
        "exists": layer.exists,
        "used": layer.used,
        "trusted": layer.trusted,
        "trust": trust_state,
        "status": status,
        "problems": [
            {"severity": p.severity, "path": p.path, "line": p.line, "key": p.key,
             "message": p.message, "text": str(p)}
            for p in layer.problems
        ],
    }


def _trust_state(path: Path, env: Mapping[str, str], trusted: bool | None) -> str | None:
    """trusted / untrusted / changed (trusted once, edited since), from the trust store."""
    try:
        from wrapagent.hooks.trust import TrustStore

        return TrustStore(env=env, warn=lambda m: None).check(path, path.read_bytes())
    except Exception:
        return None if trusted is None else ("trusted" if trusted else "untrusted")


def _guard_facts(guard: Any) -> dict[str, Any]:
    return {
        "name": guard.name,
        "command": guard.command,
        "builtin": guard.builtin,
        "args": {k: v for k, v in guard.args},
        "timeout_secs": guard.timeout_secs,
        "source": guard.source,
        "tools": "all",
    }


def _hooks_facts(cfg: Any) -> dict[str, Any]:
    from wrapagent.hooks.config_loader import DEFAULT_SOURCE, EVENTS

    events: dict[str, Any] = {}
    for event in EVENTS:
        configured = cfg.lifecycle.get(event)
        hook = cfg.hook_for(event)
        if hook is not None:
            events[event] = {"command": hook.command, "enabled": True, "timeout_secs": hook.timeout_secs,
                             "source": hook.source, "default": hook.source == DEFAULT_SOURCE, "tools": "all"}
        elif configured is not None:
            events[event] = {"command": configured.command, "enabled": False,
                             "timeout_secs": configured.timeout_secs, "source": configured.source,
                             "default": False, "tools": "all"}
        else:
            events[event] = None
    pre = cfg.pre_session
    pre_facts = None
    if pre is not None:
        pre_facts = {"command": pre.command, "enabled": pre.enabled,
                     "tools": list(pre.transports) if pre.transports else "all",
                     "timeout_seconds": pre.timeout_seconds, "source": pre.source}
    per_tool = {}
    for tool in _tools():
        per_tool[tool] = {
            "guards": [g.name for g in cfg.guards],
            "pre_session": bool(pre is not None and pre.enabled and pre.command and pre.applies_to(tool)),
        }
    return {"lifecycle": events, "pre_session": pre_facts, "guards": [_guard_facts(g) for g in cfg.guards],
            "injects": per_tool}


# --------------------------------------------------------------------------- tools


def _first_line(text: str) -> str:
    for line in _ANSI.sub("", text).splitlines():
        line = line.strip()
        if line:
            return line[:200]
    return ""


def tool_version(path: str, env: Mapping[str, str], timeout: float = VERSION_TIMEOUT_SECS) -> dict[str, Any]:
    """`TOOL --version`: the first line, never hanging longer than `timeout`."""
    try:
        proc = subprocess.Popen([path, "--version"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=dict(env), start_new_session=True)
    except OSError as exc:
        return {"version": None, "error": f"cannot run: {exc.strerror or exc}"}
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop_group(proc)
        return {"version": None, "error": f"`{os.path.basename(path)} --version` did not finish within {timeout:g}s"}
    line = _first_line(out.decode("utf-8", "replace")) or _first_line(err.decode("utf-8", "replace"))
    result: dict[str, Any] = {"version": line or None, "error": None}
    if proc.returncode != 0:
        result["error"] = f"--version exited {proc.returncode}"
    return result


def _stop_group(proc: subprocess.Popen) -> None:
    """TERM the process group, KILL it a second later if it is still there."""
    for sig, wait in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.communicate(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _rc_files(shell: str, env: Mapping[str, str]) -> list[Path]:
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    if shell == "bash":
        return [home / n for n in (".bashrc", ".bash_profile", ".bash_login", ".profile", ".bash_aliases")]
    if shell == "zsh":
        zdot = Path(env.get("ZDOTDIR") or home)
        return [zdot / n for n in (".zshenv", ".zprofile", ".zshrc", ".zlogin")]
    if shell == "fish":
        base = env.get("XDG_CONFIG_HOME", "")
        cfg = Path(base) if base and os.path.isabs(base) else home / ".config"
        fish = cfg / "fish"
        files = [fish / "config.fish"]
        try:
            files += sorted((fish / "conf.d").glob("*.fish"))
        except OSError:
            pass
        return files
    return []


def _shorten(path: Path, env: Mapping[str, str]) -> str:
    home = env.get("HOME") or ""
    text = str(path)
    if home and text.startswith(home.rstrip("/") + "/"):
        return "~" + text[len(home.rstrip("/")):]
    return text


def find_aliases(tools: Sequence[str], env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Best effort: `alias TOOL=…` (or `wrapagent init`) in the rc files of `$SHELL`.

    doctor runs in a child process of the shell, so it cannot see the live
    aliases; it reads the files the shell reads.
    """
    shell = os.path.basename(env.get("SHELL", ""))
    files = _rc_files(shell, env)
    if not files:
        return {t: {"state": "unknown", "shell": shell or None, "files": [], "file": None, "line": None,
                    "text": None, "wraps": None} for t in tools}
    found: dict[str, dict[str, Any]] = {}
    read: list[str] = []
    init_line: tuple[str, int, str] | None = None
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        read.append(_shorten(path, env))
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if init_line is None and re.search(r"\bwrapagent\s+init\b", line):
                init_line = (_shorten(path, env), number, line)
            if not line.startswith("alias ") and not line.startswith("function "):
                continue
            for tool in tools:
                if tool in found:
                    continue
                t = re.escape(tool)
                if re.search(rf"^alias\s+(?:-\S+\s+)*(?:\S+\s+)*{t}(?:=|\s+\S)", line) or \
                        re.match(rf"^function\s+{t}\b", line):
                    found[tool] = {"state": "alias", "shell": shell, "file": _shorten(path, env),
                                   "line": number, "text": line, "wraps": "wrapagent" in line}
    result = {}
    for tool in tools:
        if tool in found:
            result[tool] = {**found[tool], "files": read}
        elif init_line is not None:
            file, number, line = init_line
            result[tool] = {"state": "init", "shell": shell, "file": file, "line": number, "text": line,
                            "wraps": True, "files": read}
        else:
            result[tool] = {"state": "none", "shell": shell, "file": None, "line": None, "text": None,
                            "wraps": False, "files": read}
    return result


def _tool_facts(env: Mapping[str, str]) -> list[dict[str, Any]]:
    from concurrent.futures import ThreadPoolExecutor

    from wrapagent.session import resolve
    from wrapagent.errors import WrapagentError

    tools = _tools()
    child_env = {**env, **resolve.child_env_additions(env=env)}
    facts: list[dict[str, Any]] = []
    for tool in tools:
        try:
            path = str(resolve.find_real_tool(tool, env=env))
            facts.append({"name": tool, "found": True, "path": path, "error": None})
        except WrapagentError as exc:
            facts.append({"name": tool, "found": False, "path": None, "error": exc.message})
        except Exception as exc:  # doctor must report, not crash
            facts.append({"name": tool, "found": False, "path": None, "error": f"{type(exc).__name__}: {exc}"})
    with ThreadPoolExecutor(max_workers=len(tools)) as pool:
        futures = {f["name"]: pool.submit(tool_version, f["path"], child_env) for f in facts if f["found"]}
        for f in facts:
            v = futures[f["name"]].result() if f["name"] in futures else {"version": None, "error": None}
            f["version"] = v["version"]
            f["version_error"] = v["error"]
    shims = _shim_facts(tools, env)
    aliases = find_aliases(tools, env)
    for f in facts:
        f["shim"] = shims.get(f["name"])
        f["alias"] = aliases[f["name"]]
        f["wrapped"] = _wrapped(f)
    return facts


def _shim_facts(tools: Sequence[str], env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    try:
        from wrapagent.commands.shims import shims_status

        statuses = shims_status(list(tools), env=env)
    except Exception as exc:
        return {t: {"installed": None, "error": str(exc)} for t in tools}
    return {
        s.tool: {"path": str(s.shim), "installed": s.installed, "current": s.current,
                 "active": s.effective, "note": s.note}
        for s in statuses
    }


def _wrapped(tool: Mapping[str, Any]) -> str:
    """yes (shim), alias (interactive shells only), no, or unknown."""
    shim = tool.get("shim") or {}
    alias = tool.get("alias") or {}
    if shim.get("active"):
        return "shim"
    if alias.get("state") in ("alias", "init") and alias.get("wraps"):
        return "alias"
    if alias.get("state") == "unknown":
        return "unknown"
    return "no"


# --------------------------------------------------------------------------- sessions


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    from wrapagent.session.records import git_env

    return subprocess.run(["git", "-C", str(root), *args], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, env=git_env(), timeout=30)


def _sessions_facts(project_root: Path, env: Mapping[str, str]) -> dict[str, Any]:
    from wrapagent import paths
    from wrapagent.commands.sessions import project_records

    root = paths.sessions_root(project_root, env)
    facts: dict[str, Any] = {"root": str(root), "exists": root.is_dir(),
                             "git": {"repo": False, "commits": None, "dirty": None, "changes": None,
                                     "uncommitted_sessions": [], "error": None},
                             "count": 0}
    if not root.is_dir():
        return facts
    git = facts["git"]
    if (root / ".git").exists():
        git["repo"] = True
        try:
            count = _git(root, "rev-list", "--count", "HEAD")
            git["commits"] = int(count.stdout.strip()) if count.returncode == 0 else 0
            status = _git(root, "status", "--porcelain")
            if status.returncode == 0:
                changes = [line for line in status.stdout.splitlines() if line.strip()]
                git["changes"] = len(changes)
                git["dirty"] = bool(changes)
                # `?? ID/`: a session folder never committed (running, or session_complete failed)
                git["uncommitted_sessions"] = sorted(
                    line[3:].rstrip("/") for line in changes
                    if line.startswith("?? ") and line.endswith("/") and "/" not in line[3:].rstrip("/"))
            else:
                git["error"] = _first_line(status.stderr) or f"git status exited {status.returncode}"
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            git["error"] = str(exc)
    records = project_records(project_root, env)
    facts["count"] = len(records)
    facts["_last"] = records[0] if records else None
    return facts


def _last_session_facts(record: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if record is None:
        return None
    inj = dict(record.get("injection") or {})
    return {
        "id": record.get("id"),
        "tool": record.get("tool"),
        "started_at": record.get("started_at"),
        "exit_code": record.get("exit_code"),
        "state": record.get("state"),
        "mode": record.get("mode"),
        "injection": inj,
        "hooks": list(record.get("hooks") or []),
        "warnings": list(record.get("warnings") or []),
        "dir": record.get("_dir"),
    }


# --------------------------------------------------------------------------- findings


def _findings(report: Mapping[str, Any], env: Mapping[str, str]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []

    def add(level: str, message: str) -> None:
        out.append({"level": level, "message": message})

    if env.get("WRAPAGENT_DISABLE") == "1":
        add(WARNING, "WRAPAGENT_DISABLE=1 is set: wrapagent runs every tool directly, without hooks or guards")
    titles = {"global-hooks": "global hooks", "global-config": "global config", "project-hooks": "project hooks"}
    for layer in report["layers"]:
        title = titles.get(layer["kind"], layer["kind"])
        errors = [p for p in layer["problems"] if p["severity"] == "error"]
        if errors:
            add(ERROR, f"{title} {layer['path']} has {len(errors)} error(s), so none of it is used; "
                       f"first: {errors[0]['text']}")
        if layer["exists"] and layer["trusted"] is False:
            what = "changed since you trusted it" if layer.get("trust") == "changed" else "not trusted"
            add(WARNING, f"{title} {layer['path']} is {what}: its hooks and guards are skipped; "
                         f"review and trust it with `wrapagent trust {layer['path']}`")
    hooks = report["hooks"]
    if not hooks["guards"] and not (hooks["pre_session"] and hooks["pre_session"]["enabled"]):
        add(WARNING, "no prompt guards and no pre_session hook in effect: there is nothing to inject "
                     "(`wrapagent config init` writes a starter hooks.toml)")
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
    last = report.get("last_session")
    if last is not None:
        inj = last.get("injection") or {}
        status = inj.get("status")
        notes = "; ".join(str(n) for n in inj.get("notes") or [])
        if status == "lost":
            add(ERROR, f"the last session ({last['id']}, {last['tool']}) did not get the blocks: "
                       f"{notes or 'injection lost'}; `wrapagent doctor --probe {last['tool']}` checks "
                       f"whether wrapagent sees that tool's ready screen")
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
    git = report["sessions"]["git"]
    if report["sessions"]["exists"] and not git["repo"]:
        add(INFO, f"the sessions folder {report['sessions']['root']} is not a git repository yet")
    elif git.get("uncommitted_sessions"):
        ids = git["uncommitted_sessions"]
        shown = ", ".join(ids[:3]) + (" …" if len(ids) > 3 else "")
        add(INFO, f"{len(ids)} session folder(s) not committed to the sessions repository ({shown}): "
                  "still running, or their session_complete hook did not commit")
    return out


# --------------------------------------------------------------------------- the report


def collect(cwd: Path | None = None, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Every fact the report shows, as plain data (the `--json` output)."""
    from wrapagent import __version__
    from wrapagent import paths
    from wrapagent.hooks.config_loader import load_config

    env = dict(os.environ if env is None else env)
    cwd = Path.cwd() if cwd is None else cwd
    project_root = paths.find_project_root(cwd)
    cfg = load_config(project_root, env=env)
    sessions = _sessions_facts(project_root, env)
    last = sessions.pop("_last", None)
    report: dict[str, Any] = {
        "wrapagent": __version__,
        "python": sys.version.split()[0],
        "cwd": str(cwd),
        "project_root": str(project_root),
        "inside_session": env.get("WRAPAGENT_SESSION_ID") or None,
        "layers": [_layer_facts(layer, env) for layer in cfg.layers],
        "config_errors": cfg.has_errors,
        "hooks": _hooks_facts(cfg),
        "tools": _tool_facts(env),
        "sessions": sessions,
        "last_session": _last_session_facts(last),
    }
    report["findings"] = _findings(report, env)
    return report


_LAYER_TITLES = {"global-hooks": "global hooks", "global-config": "global config",
                 "project-hooks": "project hooks"}


def render(report: Mapping[str, Any]) -> str:
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
                what += " " + ", ".join(f"{k}={v!r}" for k, v in g["args"].items())
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
        out.append(f"Last session: {last['id']} ({last['tool']}, {format_time(last['started_at'])}, "
                   f"exit {format_exit(last)})")
        inj = last["injection"]
        details = []
        if inj.get("path") and inj.get("path") != "none":
            details.append(f"path {inj['path']}")
        if inj.get("ready_after_s") is not None:
            details.append(f"tool ready after {inj['ready_after_s']:.2f}s")
        line = f"  injection: {inj.get('status') or 'none'}"
        out.append(line + (f" ({', '.join(details)})" if details else ""))
        for note in inj.get("notes") or []:
            out.append(f"    note: {visible_text(str(note))}")
        out.append("  hooks:")
        out.extend(hook_rows(last["hooks"], indent="    "))
        for w in last.get("warnings") or []:
            out.append(f"  warning: {visible_text(str(w))}")

    out += ["", "Findings:"]
    if not report["findings"]:
        out.append("  no problems found")
    for f in report["findings"]:
        out.append(f"  {f['level']}: {f['message']}")
    return "\n".join(out) + "\n"


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


# =========================================================================== probe


_QUERY_RE = re.compile(
    rb"\x1b\[(?P<csi>[?>]?[0-9;]*\$?[A-Za-z])"  # CSI: 6n 5n c >c >q ?2026$p 18t …
    rb"|\x1b\](?P<osc>1[01]);\?(?P<st>\x07|\x1b\\)"  # OSC 10/11: foreground/background colour
)
_DECRQM = re.compile(r"\?(\d+)\$p")


def query_reply(query: re.Match, cursor: tuple[int, int], rows: int, cols: int) -> bytes | None:
    """What an xterm-like terminal answers to a query the tool wrote, or None (not a query)."""
    osc = query.group("osc")
    if osc is not None:
        colour = b"rgb:cccc/cccc/cccc" if osc == b"10" else b"rgb:0000/0000/0000"
        return b"\x1b]" + osc + b";" + colour + query.group("st")
    csi = query.group("csi").decode("ascii")
    row, col = cursor
    if csi == "6n":
        return f"\x1b[{row};{col}R".encode()
    if csi == "?6n":
        return f"\x1b[?{row};{col}R".encode()
    if csi == "5n":
        return b"\x1b[0n"
    if csi in ("c", "0c"):
        return b"\x1b[?62;22c"
    if csi in (">c", ">0c"):
        return b"\x1b[>1;10;0c"
    if csi in (">q", ">0q"):
        return b"\x1bP>|wrapagent-probe\x1b\\"
    if csi == "14t":
        return f"\x1b[4;{rows * 20};{cols * 10}t".encode()
    if csi == "16t":
        return b"\x1b[6;20;10t"
    if csi == "18t":
        return f"\x1b[8;{rows};{cols}t".encode()
    decrqm = _DECRQM.fullmatch(csi)
    if decrqm:
        return f"\x1b[?{decrqm.group(1)};0$y".encode()  # mode not recognised
    return None


class _Probe:
    """The tool on a private PTY, its output fed to a FirstMessageInjector."""

    def __init__(self, argv: list[str], env: Mapping[str, str], adapter: Any, rows: int, cols: int) -> None:
        from wrapagent.inject.injector import FirstMessageInjector
        from wrapagent.proxy.pty_loop import spawn

        self.rows, self.cols = rows, cols
        self.injector = FirstMessageInjector(adapter, rows=rows, cols=cols, get_prefix=lambda: "",
                                             wake_fd=None)
        self.t0 = time.monotonic()
        self.pid, self.fd = spawn(argv, env=env, cwd=None, size=(rows, cols))
        os.set_blocking(self.fd, False)
        self.eof = False
        self.status: int | None = None
        self.exited_at: float | None = None
        self.bracketed_paste = False
        self._bp_tail = b""
        self.replies = 0
        self.output_bytes = 0
        self.emulator_error: str | None = None
        self.last_output = self.t0

    # -- io ------------------------------------------------------------------

    def _cursor(self) -> tuple[int, int]:
        screen = getattr(self.injector.screen, "_screen", None)
        cursor = getattr(screen, "cursor", None)
        if cursor is None:
            return 1, 1
        return cursor.y + 1, cursor.x + 1

    def _feed(self, data: bytes, now: float) -> None:
        if self.emulator_error is None:
            try:
                self.injector.on_output(data, now)
            except Exception as exc:
                # The live proxy would hit the same exception: say so instead of crashing.
                self.emulator_error = f"{type(exc).__name__}: {exc} (on output {data[-80:]!r})"
        hay = self._bp_tail + data
        if b"\x1b[?2004h" in hay:
            self.bracketed_paste = True
        self._bp_tail = hay[-7:]

    def _on_data(self, data: bytes, now: float) -> None:
        self.output_bytes += len(data)
        self.last_output = now
        pos = 0
        for match in _QUERY_RE.finditer(data):
            reply = query_reply(match, (1, 1), self.rows, self.cols)
            if reply is None:
                continue
            self._feed(data[pos:match.end()], now)  # the cursor as of the query
            pos = match.end()
            reply = query_reply(match, self._cursor(), self.rows, self.cols)
            self.write(reply or b"")
            self.replies += 1
        if pos < len(data):
            self._feed(data[pos:], now)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        end = time.monotonic() + 1.0
        while view and time.monotonic() < end and not self.eof:
            try:
                view = view[os.write(self.fd, view):]
            except BlockingIOError:
                time.sleep(0.01)
            except OSError:
                return

    def _reap(self) -> None:
        if self.status is not None:
            return
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            self.status = 0
            self.exited_at = time.monotonic()
            return
        if pid == self.pid:
            self.status = status
            self.exited_at = time.monotonic()

    @property
    def alive(self) -> bool:
        self._reap()
        return self.status is None

    def _read(self, wait: float) -> bool:
        """One select + read of the master; True when output arrived."""
        import select

        if self.eof:
            time.sleep(wait)
            return False
        try:
            ready, _, _ = select.select([self.fd], [], [], wait)
        except InterruptedError:
            return False
        if not ready:
            return False
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return False
        except OSError:  # EIO: every holder of the terminal is gone
            data = b""
        if not data:
            self.eof = True
            return False
        self._on_data(data, time.monotonic())
        return True

    def _drain_after_exit(self, quiet: float = 0.2) -> None:
        """What the tool wrote before it exited; a leftover holding the terminal must not keep us."""
        until = time.monotonic() + quiet
        while not self.eof and time.monotonic() < until:
            if self._read(0.05):
                until = time.monotonic() + quiet

    def pump(self, seconds: float, stop: Callable[[], bool]) -> None:
        """Read output and drive readiness checks for up to `seconds`, or until `stop()`.

        Once the tool has exited, its remaining output is drained first, so
        the last screen is complete.
        """
        from wrapagent.inject.injector import STARTING

        end = time.monotonic() + seconds
        while True:
            if not self.alive:
                self._drain_after_exit()
                return
            now = time.monotonic()
            if stop() or now >= end:
                return
            wait = min(end - now, 0.05)
            deadline = self.injector.deadline()
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - now))
            self._read(wait)
            now = time.monotonic()
            deadline = self.injector.deadline()
            if self.injector.state == STARTING and deadline is not None and now >= deadline:
                self.injector.poll(now)

    def signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            try:
                os.kill(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def close(self) -> None:
        from wrapagent.proxy.pty_loop import reap_leftovers

        reap_leftovers(self.pid)
        try:
            os.close(self.fd)
        except OSError:
            pass

    def screen_text(self) -> str:
        text = self.injector.screen.text()
        return "\n".join(text.rstrip("\n").split("\n")).rstrip("\n")


def _probe_command(tool: str, extra: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], str, str]:
    """(argv, executable, adapter name); raises WrapagentError when the tool is not there."""
    from wrapagent.session import resolve

    if tool == "demo":
        return [sys.executable, "-m", "wrapagent.commands.demo_agent", *extra], sys.executable, "demo"
    path = str(resolve.find_real_tool(tool, env=env))
    return [path, *extra], path, os.path.basename(tool)


def probe(tool: str, extra: Sequence[str] = (), *, timeout: float = PROBE_TIMEOUT_SECS,
          env: Mapping[str, str] | None = None, rows: int = PROBE_ROWS, cols: int = PROBE_COLS) -> dict[str, Any]:
    """Start the real `tool`, wait for wrapagent's readiness detection, quit it; the facts as a dict."""
    from wrapagent.session import resolve
    from wrapagent.inject.adapters import adapter_for
    from wrapagent.errors import WrapagentError
    from wrapagent.inject.injector import STARTING
    from wrapagent.proxy.pty_loop import status_to_exit_code

    env = dict(os.environ if env is None else env)
    result: dict[str, Any] = {"tool": tool, "argv": None, "executable": None, "adapter": None,
                              "rows": rows, "cols": cols, "timeout_s": timeout, "started": False,
                              "error": None, "ready": False, "ready_after_s": None, "markers": [],
                              "bracketed_paste": None, "bracketed_paste_required": None,
                              "screen": None, "queries_answered": 0, "emulator_error": None,
                              "quit": None}
    try:
        argv, executable, name = _probe_command(tool, extra, env)
    except WrapagentError as exc:
        result["error"] = exc.message
        return result
    adapter = adapter_for(name)
    result.update(argv=argv, executable=executable, adapter=adapter.name,
                  bracketed_paste_required=adapter.requires_bracketed_paste)
    child_env = {**env, **resolve.child_env_additions(env=env)}
    if child_env.get("TERM", "dumb") in ("", "dumb"):
        child_env["TERM"] = "xterm-256color"
    child_env = adapter.child_env(child_env)
    try:
        run = _Probe(argv, child_env, adapter, rows, cols)
    except WrapagentError as exc:
        result["error"] = exc.message
        return result
    result["started"] = True
    try:
        run.pump(timeout, lambda: run.injector.state != STARTING or not run.alive
                 or run.emulator_error is not None)
        ready = run.injector.state != STARTING and run.emulator_error is None
        result["emulator_error"] = run.emulator_error
        result["ready"] = ready
        result["ready_after_s"] = run.injector.report.ready_after_s if ready else None
        screen = run.screen_text()
        result["screen"] = screen
        result["markers"] = [{"pattern": p, "on_screen": bool(re.search(p, screen))}
                             for p in adapter.ready_patterns]
        result["bracketed_paste"] = run.bracketed_paste
        result["quit"] = _quit(run, adapter.quit_keys)
        result["queries_answered"] = run.replies
        if run.status is not None:
            code, sig = status_to_exit_code(run.status)
            result["quit"].update(exit_code=code, signal=sig)
    finally:
        if run.alive:  # only reached when something above raised
            run.signal_group(signal.SIGTERM)
            run.pump(TERM_WAIT_SECS, lambda: not run.alive)
            if run.alive:
                run.signal_group(signal.SIGKILL)
                run.pump(5.0, lambda: not run.alive)
        run.close()
    return result


def _quit(run: _Probe, keys: Sequence[bytes]) -> dict[str, Any]:
    info: dict[str, Any] = {"keys": [k.decode("latin-1") for k in keys], "keys_sent": 0,
                            "exited_before_quit": not run.alive, "sigterm": False, "sigkill": False,
                            "exit_code": None, "signal": None, "seconds": None}
    start = time.monotonic()
    if not info["exited_before_quit"]:
        settle_end = start + SETTLE_MAX_SECS
        run.pump(SETTLE_MAX_SECS, lambda: not run.alive or time.monotonic() >= settle_end
                 or time.monotonic() - run.last_output >= SETTLE_QUIET_SECS)
        start = time.monotonic()
        for key in keys:
            if not run.alive:
                break
            run.write(key)
            info["keys_sent"] += 1
            run.pump(QUIT_KEY_GAP_SECS, lambda: not run.alive)
        run.pump(QUIT_WAIT_SECS, lambda: not run.alive)
        if run.alive:
            info["sigterm"] = True
            run.signal_group(signal.SIGTERM)
            run.pump(TERM_WAIT_SECS, lambda: not run.alive)
        if run.alive:
            info["sigkill"] = True
            run.signal_group(signal.SIGKILL)
            run.pump(5.0, lambda: not run.alive)
    if run.exited_at is not None and not info["exited_before_quit"]:
        info["seconds"] = round(max(0.0, run.exited_at - start), 3)
    return info


def render_probe(result: Mapping[str, Any]) -> str:
    import shlex

    out = [f"Probe: {result['tool']}"]
    if result["error"]:
        out.append(f"  error         {result['error']}")
        return "\n".join(out) + "\n"
    out.append(f"  command       {' '.join(shlex.quote(a) for a in result['argv'])}")
    out.append(f"  terminal      private {result['cols']}x{result['rows']}; "
               f"{result['queries_answered']} terminal queries answered")
    if result["ready"]:
        out.append(f"  readiness     FIRED after {result['ready_after_s']:.2f}s "
                   f"(wrapagent would inject into the first message)")
    else:
        quit_info = result["quit"] or {}
        if result.get("emulator_error"):
            why = "wrapagent's screen emulator failed on the tool's output"
        elif quit_info.get("exited_before_quit"):
            why = "the tool exited first"
        else:
            why = f"within {result['timeout_s']:g}s; a first start can be slow: try --timeout 120"
        out.append(f"  readiness     NOT FIRED ({why})")
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


# =========================================================================== main


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wrapagent doctor",
        description="Why didn't my guard show up? Config layers, hooks, tools, sessions; "
                    "--probe starts a tool to check readiness detection.",
        epilog="Arguments after `--` go to the probed tool.")
    parser.add_argument("--json", action="store_true", help="the same facts as a JSON object")
    parser.add_argument("--probe", metavar="TOOL", default=None,
                        help="start TOOL (or `demo`) in a private terminal and check readiness detection")
    parser.add_argument("--timeout", metavar="S", type=float, default=None,
                        help=f"--probe: seconds to wait for the ready screen (default {PROBE_TIMEOUT_SECS:g})")
    return parser


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def main(args: Sequence[str], *, out: IO[str] | None = None) -> int:
    out = sys.stdout if out is None else out
    args = list(args)
    extra: list[str] = []
    if "--" in args:
        cut = args.index("--")
        args, extra = args[:cut], args[cut + 1:]
    parser = _parser()
    ns = parser.parse_args(args)
    if ns.probe is None and (extra or ns.timeout is not None):
        parser.error("--timeout and `-- TOOL-ARGS` go with --probe TOOL")
    if ns.probe is not None:
        timeout = PROBE_TIMEOUT_SECS if ns.timeout is None else ns.timeout
        if not timeout > 0:
            parser.error("--timeout must be a positive number of seconds")
        if not ns.json and _isatty(sys.stderr):
            sys.stderr.write(f"wrapagent doctor: starting {ns.probe} in a private {PROBE_COLS}x{PROBE_ROWS} "
                             f"terminal, waiting up to {timeout:g}s for its ready screen...\n")
            sys.stderr.flush()
        result = probe(ns.probe, extra, timeout=timeout)
        if ns.json:
            json.dump(result, out, indent=2, ensure_ascii=False)
            out.write("\n")
        else:
            out.write(render_probe(result))
        return 0 if result["ready"] else 1
    report = collect()
    if ns.json:
        json.dump(report, out, indent=2, ensure_ascii=False, default=str)
        out.write("\n")
    else:
        out.write(render(report))
    return 1 if any(f["level"] == ERROR for f in report["findings"]) else 0
