"""`wrapagent doctor`: why didn't my guard show up?

    wrapagent doctor [--json]
    wrapagent doctor --probe TOOL [--timeout S] [--json] [-- TOOL-ARGS...]

The report gathers, without starting any agent: the config layers (problems,
trust), the merged hooks and guards and which tools they apply to, each
known tool (real binary, version, shim, alias), the project's sessions
repository and the last session's hook outcomes and injection status. It
ends with findings: what to fix, most likely cause first.

`--probe TOOL` starts the real TOOL in a private terminal to see whether
readiness detection fires for this installed version (`doctor_probe`).

Exit status: 0, or 1 when something is wrong (config errors, the last
session's injection lost or a hook failed; for `--probe`: readiness did not
fire or the tool could not be started).

This module is the command line and the gathering of facts (`collect`);
the findings are in `doctor_findings`, the text in `doctor_report`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import IO, Any, Mapping, Sequence

from wrapagent.commands.doctor_findings import ERROR, findings
from wrapagent.commands.doctor_probe import PROBE_COLS, PROBE_ROWS, PROBE_TIMEOUT_SECS, probe
from wrapagent.commands.doctor_report import render, render_probe
from wrapagent import visible
from wrapagent.history.records import dumps  # bytes that are not UTF-8: as in a record (`escaped`)

VERSION_TIMEOUT_SECS = 10.0
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")


# =========================================================================== facts


def _tools() -> tuple[str, ...]:
    from wrapagent.inject.adapters import KNOWN_TOOLS

    return tuple(KNOWN_TOOLS)


def _layer_facts(layer: Any, env: Mapping[str, str]) -> dict[str, Any]:
    from wrapagent.hooks.config_loader import LAYER_PROJECT_HOOKS

    trust_state = None
    if layer.kind == LAYER_PROJECT_HOOKS and layer.exists:
        trust_state = layer.trust  # decided on the bytes the loader read (bounded); not read again
    errors = [p for p in layer.problems if p.severity == "error"]
    if not layer.exists:
        status = "not found"
    elif layer.trusted is False:
        status = "not used: changed since trusted" if trust_state == "changed" else "not used: untrusted"
    elif errors and not layer.used:
        status = f"not used: {len(errors)} error(s)"
    elif errors:  # only invalid [[prompt_guard]] entries: those are skipped
        status = f"used; invalid prompt guard entries skipped ({len(errors)} error(s))"
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
        "stop_check": _stop_check_facts(layer.stop_check),
        "send": layer.send,
        "problems": [
            {"severity": p.severity, "path": p.path, "line": p.line, "key": p.key,
             "message": p.message, "text": str(p)}
            for p in layer.problems
        ],
    }


def _stop_check_facts(spec: Any) -> dict[str, Any] | None:
    """A layer's own `[stop_check]` (None: not in the file); whether it applies is the layer's status."""
    if spec is None:
        return None
    if spec is False:
        return {"enabled": False}
    return {"enabled": True, "command": spec.command, "max_continues": spec.max_continues,
            "quiet_secs": spec.quiet_secs, "timeout_secs": spec.timeout_secs}


def _whole_session_facts(record: Mapping[str, Any]) -> dict[str, Any]:
    """The newest session's stop check continuations and `wrapagent send` messages, and what did not go in."""
    check = record.get("stop_check")
    stop = None
    if check:
        stop = {"runs": len(check.get("runs") or []), "continuations": len(check.get("continuations") or []),
                "not_sent": len(check.get("not_sent") or []), "interrupted": len(check.get("interrupted") or []),
                "still_failing": bool(check.get("still_failing"))}
    sent = record.get("sent")
    sends = None
    if sent is not None:
        delivered = sum(1 for s in sent if s.get("status") == "delivered")
        failed = [s for s in sent if s.get("status") not in ("delivered", "queued")]
        sends = {"total": len(sent), "delivered": delivered, "not_delivered": len(failed),
                 "reasons": sorted({str(s.get("reason") or "-") for s in failed})}
    return {"stop_check": stop, "sends": sends}


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
    """The installed tool's version: {"version", "source", "error"}, never taking longer than `timeout`.

    The same lookup a session makes (`session/tool_version.py`): the cache
    per binary, the npm package's own version, else `TOOL --version` run
    from `/` (never in the project folder, whose config is not trusted for
    this) with stdin /dev/null, no terminal, its process group killed at
    the timeout; only a release number is taken from what it printed.
    A binary that failed before is asked again: doctor is asked for it.
    """
    from wrapagent.session.tool_version import find_version

    return find_version(path, env, may_run=True, timeout=timeout, trust_failures=False)


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
            f["version_source"] = v.get("source")
            f["version_error"] = v["error"]
    from wrapagent.commands.doctor_readiness import recent_readiness

    try:
        ready = recent_readiness(tools, env)
    except Exception:  # doctor must report, not crash
        ready = {}
    shims = _shim_facts(tools, env)
    aliases = find_aliases(tools, env)
    for f in facts:
        f["shim"] = shims.get(f["name"])
        f["alias"] = aliases[f["name"]]
        f["wrapped"] = _wrapped(f)
        f["last_ready"] = ready.get(f["name"])
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
    """git on the sessions repository, named explicitly (history/sessions_repo.py: never the enclosing one)."""
    from wrapagent import gitcmd
    from wrapagent.history import sessions_repo

    try:
        res = sessions_repo.git(root, args, timeout=30)
    except gitcmd.GitError as exc:
        raise OSError(str(exc)) from None
    return subprocess.CompletedProcess(res.argv, res.code, res.stdout.decode("utf-8", "replace"),
                                       res.stderr.decode("utf-8", "replace"))


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
        "transport": record.get("transport"),
        "tool_version": record.get("tool_version"),
        "started_at": record.get("started_at"),
        "exit_code": record.get("exit_code"),
        "state": record.get("state"),
        "mode": record.get("mode"),
        "injection": inj,
        "injections": list(record.get("injections") or []),
        "hooks": list(record.get("hooks") or []),
        "warnings": list(record.get("warnings") or []),
        "dir": record.get("_dir"),
        **_whole_session_facts(record),
    }



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
    report["findings"] = findings(report, env)
    return report


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
            out.write(visible.json_text(dumps(result)) + "\n")
        else:
            from wrapagent.commands.colour import enabled

            # Escapes the screen itself; `sent` is a repr.
            out.write(render_probe(result, colour=enabled(out)))
        return 0 if result["ready"] else 1
    report = collect()
    # Paths, tool versions, hook commands: whatever came from outside is printed inert.
    if ns.json:
        out.write(visible.json_text(dumps(report, default=str)) + "\n")
    else:
        from wrapagent.commands.colour import enabled

        out.write(render(visible.data(report), colour=enabled(out)))
    return 1 if any(f["level"] == ERROR for f in report["findings"]) else 0
