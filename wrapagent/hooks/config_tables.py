"""What one hooks.toml or config.toml says: its tables checked key by key into frozen values.

Every wrong type, missing required key or unknown key becomes a problem on
the file's `FileCheck` (with its line, best effort); the loader
(`config_loader.py`) decides from them whether the file is used, and merges
the layers. Imported only when a config file exists: most starts have none.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Any, Mapping

    from wrapagent.hooks.file_check import FileCheck as _FileCheck

from wrapagent.hooks import events
from wrapagent.hooks.config_model import (
    CheckpointSettings,
    DEFAULT_GUARD_TIMEOUT,
    DEFAULT_PRE_SESSION_TIMEOUT,
    DEFAULT_SESSION_COMPLETE,
    EVENTS,
    GuardSpec,
    KNOWN_TOOLS,
    LifecycleHook,
    PreSessionHook,
    WAITING_FOR_INPUT,
    normalize_tool,
)

_EVENT_KEYS = ("enabled", "command", "timeout_secs")
_STOP_CHECK_KEYS = ("enabled", "command", "timeout_secs", "max_continues", "quiet_secs")
_GUARD_KEYS = ("name", "command", "builtin", "args", "timeout_secs", "every_message")
_PRE_SESSION_KEYS = ("command", "enabled", "transports", "timeout_seconds")
_CHECKPOINT_KEYS = ("enabled", "budget_secs", "transcripts", "max_transcript_bytes", "keep_days", "max_file_mb")
_RECORD_KEYS = ("enabled", "max_bytes")



# --------------------------------------------------------------------------- types


def _type_name(value: Any) -> str:
    return {
        bool: "boolean",
        int: "integer",
        float: "float",
        str: "string",
        list: "array",
        dict: "table",
    }.get(type(value), type(value).__name__)


# --------------------------------------------------------------------------- value checks


def _check_bool(check: _FileCheck, table: Mapping, key: str, default: bool, prefix: str, parts: tuple) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        check.error(f"{prefix}{key}", f"expected a boolean, got {_type_name(value)}", (*parts, key))
        return default
    return value


def _check_timeout(check: _FileCheck, table: Mapping, key: str, default: float, prefix: str, parts: tuple) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        check.error(f"{prefix}{key}", f"expected a number of seconds, got {_type_name(value)}", (*parts, key))
        return default
    if not value > 0 or value != value or value == float("inf"):
        check.error(f"{prefix}{key}", f"must be a positive number of seconds, got {value}", (*parts, key))
        return default
    return float(value)


def _check_str(
    check: _FileCheck, table: Mapping, key: str, prefix: str, parts: tuple, *, required: bool
) -> str | None:
    if key not in table:
        if required:
            check.error(f"{prefix}{key}", "missing required key", parts)
        return None
    value = table[key]
    if not isinstance(value, str):
        check.error(f"{prefix}{key}", f"expected a string, got {_type_name(value)}", (*parts, key))
        return None
    if not value.strip():
        check.error(f"{prefix}{key}", "must not be empty", (*parts, key))
        return None
    return value


def _check_table(check: _FileCheck, value: Any, key: str, parts: tuple) -> dict | None:
    if not isinstance(value, dict):
        check.error(key, f"expected a table, got {_type_name(value)}", parts)
        return None
    return value


# --------------------------------------------------------------------------- hooks.toml


class HooksFile:
    """What one hooks.toml defines (before merging). A plain class: every
    dataclass costs ~1 ms of start-up, and this one is internal."""

    __slots__ = ("lifecycle", "guards", "checkpoints", "stop_check", "send", "extend_guards", "agents", "record")

    def __init__(self, lifecycle: dict[str, LifecycleHook], guards: tuple[GuardSpec, ...] | None) -> None:
        self.lifecycle = lifecycle
        self.guards = guards  # None: the file does not define prompt_guard
        self.checkpoints: dict[str, Any] = {}  # the [checkpoints] keys this file sets
        self.record: dict[str, Any] = {}  # the [record] keys this file sets
        self.stop_check: Any = None  # None: not in this file; False: `enabled = false`; else a StopCheckSpec
        self.send: bool | None = None  # [send] enabled, when this file says
        self.agents: tuple[str, ...] = ()  # [agents] programs: more programs wrapagent types into
        self.extend_guards = False  # [extend] prompt_guard = true: add to the global guards, not replace


def _parse_event(check: _FileCheck, event: str, value: Any) -> LifecycleHook | None:
    table = _check_table(check, value, event, (event,))
    if table is None:
        return None
    parts, prefix = (event,), f"{event}."
    waiting = event == WAITING_FOR_INPUT
    check.unknown_keys(table, (*_EVENT_KEYS, *events.get(event).extra_keys), prefix, parts)
    enabled = _check_bool(check, table, "enabled", True, prefix, parts)
    default_timeout = events.default_timeout(event)
    timeout = _check_timeout(check, table, "timeout_secs", default_timeout, prefix, parts)
    quiet: float | None = None
    if waiting and "quiet_secs" in table:
        quiet = _check_timeout(check, table, "quiet_secs", 0.0, prefix, parts) or None
    # A disabled event needs no command; session_complete without one keeps the default command.
    required = enabled and event != "session_complete"
    command = _check_str(check, table, "command", prefix, parts, required=required)
    if command is None:
        if event == "session_complete" and "command" not in table:
            command = DEFAULT_SESSION_COMPLETE
        else:
            command = ""
    return LifecycleHook(event, command, enabled, timeout, str(check.path), quiet_secs=quiet)


def _builtin_names() -> tuple[str, ...] | None:
    try:
        from wrapagent.hooks.builtins import BUILTIN_NAMES
    except ImportError:
        return None  # not available yet: accept any name, run_builtin reports later
    return tuple(BUILTIN_NAMES)


def _validate_builtin_args(name: str, args: dict) -> dict:
    try:
        from wrapagent.hooks.builtins import validate_args
    except ImportError:
        return args
    return validate_args(name, args)


def _args_error(check: _FileCheck, prefix: str, parts: tuple, message: str) -> None:
    """validate_args says `args.KEY: why`; report it under `prompt_guard[i].args.KEY`."""
    import re

    match = re.match(r"args\.([\w-]+):\s*(.*)", message, re.S)
    if match:
        sub, message = match.group(1), match.group(2)
        check.error(f"{prefix}args.{sub}", message, (*parts, "args", sub))
    else:
        check.error(f"{prefix}args", message, (*parts, "args"))


def _parse_guard(check: _FileCheck, index: int, value: Any) -> GuardSpec | None:
    label = f"prompt_guard[{index}]"
    parts = ("prompt_guard", index)
    table = _check_table(check, value, label, parts)
    if table is None:
        return None
    prefix = f"{label}."
    check.unknown_keys(table, _GUARD_KEYS, prefix, parts)
    errors_before = check.errors
    name = _check_str(check, table, "name", prefix, parts, required=True)
    command = _check_str(check, table, "command", prefix, parts, required=False)
    builtin = _check_str(check, table, "builtin", prefix, parts, required=False)
    timeout = _check_timeout(check, table, "timeout_secs", DEFAULT_GUARD_TIMEOUT, prefix, parts)
    every_message = _check_bool(check, table, "every_message", False, prefix, parts)
    has_command, has_builtin = "command" in table, "builtin" in table
    if has_command == has_builtin:
        what = "both" if has_command else "neither"
        check.error(label, f"exactly one of 'command' or 'builtin' is required ({what} given)", parts)
    args: dict = {}
    if "args" in table:
        raw = table["args"]
        if not isinstance(raw, dict):
            check.error(f"{prefix}args", f"expected a table, got {_type_name(raw)}", (*parts, "args"))
        elif has_command and not has_builtin:
            check.warning(f"{prefix}args", "only used by built-in guards; ignored", (*parts, "args"))
        else:
            args = raw
    if builtin is not None:
        known = _builtin_names()
        if known is not None and builtin not in known:
            hint = check.did_you_mean(builtin, known) or f" (known: {', '.join(known)})"
            check.error(f"{prefix}builtin", f"unknown built-in guard {builtin!r}{hint}", (*parts, "builtin"))
        else:
            try:
                args = _validate_builtin_args(builtin, dict(args))
            except ValueError as exc:
                _args_error(check, prefix, parts, str(exc))
    if check.errors > errors_before or name is None:
        return None
    return GuardSpec(
        name=name,
        command=command if not has_builtin else None,
        builtin=builtin,
        args=tuple(args.items()),
        timeout_secs=timeout,
        source=str(check.path),
        every_message=every_message,
    )


def _parse_guards(check: _FileCheck, value: Any) -> tuple[GuardSpec, ...]:
    if not isinstance(value, list):
        check.error("prompt_guard", f"expected an array of tables ([[prompt_guard]]), got {_type_name(value)}", ("prompt_guard",))
        return ()
    guards = []
    for i, item in enumerate(value):
        check.in_entry = True  # an error here skips that entry only; the rest of the file stays in use
        try:
            guard = _parse_guard(check, i, item)
        finally:
            check.in_entry = False
        if guard is not None:
            guards.append(guard)
    seen: set[str] = set()
    for index, guard in enumerate(guards):
        if guard.name in seen:
            check.warning(f"prompt_guard[{index}].name", f"duplicate guard name {guard.name!r}", ("prompt_guard", index, "name"))
        seen.add(guard.name)
    return tuple(guards)


def parse_hooks_file(check: _FileCheck, data: dict, *, is_project: bool) -> HooksFile:
    lifecycle: dict[str, LifecycleHook] = {}
    guards: tuple[GuardSpec, ...] | None = None
    checkpoints: dict[str, Any] = {}
    stop_check: Any = None
    send: bool | None = None
    agents: tuple[str, ...] = ()
    extend_guards = False
    record: dict[str, Any] = {}
    where = "it is global-only: put it in config.toml" if is_project else "it belongs in config.toml"
    for key, value in data.items():
        if key in EVENTS:
            hook = _parse_event(check, key, value)
            if hook is not None:
                lifecycle[key] = hook
        elif key == "prompt_guard":
            guards = _parse_guards(check, value)
        elif key == "checkpoints":
            checkpoints = _parse_checkpoints(check, value)
        elif key == "stop_check":
            stop_check = _parse_stop_check(check, value)
        elif key == "send":
            table = _check_table(check, value, "send", ("send",))
            if table is not None:
                check.unknown_keys(table, ("enabled",), "send.", ("send",))
                send = _check_bool(check, table, "enabled", True, "send.", ("send",))
        elif key == "agents":
            agents = _parse_agents(check, value, is_project=is_project)
        elif key == "extend":
            extend_guards = _parse_extend(check, value, is_project=is_project)
        elif key == "record":
            record = _parse_record(check, value)
        elif key == "pre_session":
            check.warning("pre_session", f"ignored: {where} under [hooks.pre_session]", ("pre_session",))
        elif key == "hooks" and isinstance(value, dict):
            for sub in value:
                if sub == "pre_session":
                    check.warning("hooks.pre_session", f"ignored: {where}", ("hooks", "pre_session"))
                else:
                    hint = f" (did you mean [{sub}]?)" if sub in EVENTS else ""
                    check.warning(f"hooks.{sub}", f"unknown key, ignored{hint}", ("hooks", sub))
        else:
            hint = check.did_you_mean(key, (*EVENTS, "prompt_guard", "checkpoints", "stop_check", "send",
                                            "extend", "agents", "record"))
            check.warning(key, f"unknown key, ignored{hint}", (key,))
    parsed = HooksFile(lifecycle, guards)
    parsed.checkpoints = checkpoints
    parsed.stop_check = stop_check
    parsed.send = send
    parsed.extend_guards = extend_guards
    parsed.agents = agents
    parsed.record = record
    return parsed


def _parse_agents(check: _FileCheck, value: Any, *, is_project: bool) -> tuple[str, ...]:
    """`[agents] programs = ["mytui", …]`: programs to type into beside the known agents.

    Global only: a project's file naming `bash` an agent would have the guards' text typed
    into the user's shell."""
    parts = ("agents",)
    if is_project:
        check.warning("agents", "ignored: it is global-only (it decides which programs get typed input)", parts)
        return ()
    table = _check_table(check, value, "agents", parts)
    if table is None:
        return ()
    check.unknown_keys(table, ("programs",), "agents.", parts)
    programs = table.get("programs", [])
    if not isinstance(programs, list) or not all(isinstance(p, str) and p.strip() for p in programs):
        check.error("agents.programs", f"expected a list of program names, got {programs!r}", (*parts, "programs"))
        return ()
    return tuple(p.strip() for p in programs)


def _parse_extend(check: _FileCheck, value: Any, *, is_project: bool) -> bool:
    """`[extend] prompt_guard = true` (a project file): its guards come after the global ones.

    Without it a project's [[prompt_guard]] list replaces the global list. In
    the global file there is nothing below it to extend: a warning, ignored.
    """
    table = _check_table(check, value, "extend", ("extend",))
    if table is None:
        return False
    check.unknown_keys(table, ("prompt_guard",), "extend.", ("extend",))
    extend = _check_bool(check, table, "prompt_guard", False, "extend.", ("extend",))
    if extend and not is_project:
        check.warning("extend.prompt_guard", "ignored: only a project's hooks.toml extends the global guards",
                      ("extend", "prompt_guard"))
        return False
    return extend


def _parse_record(check: _FileCheck, value: Any) -> dict[str, Any]:
    """The `[record]` keys this file sets (validated), for merging key by key."""
    parts, prefix = ("record",), "record."
    table = _check_table(check, value, "record", parts)
    if table is None:
        return {}
    check.unknown_keys(table, _RECORD_KEYS, prefix, parts)
    out: dict[str, Any] = {}
    if "enabled" in table:
        out["enabled"] = _check_bool(check, table, "enabled", True, prefix, parts)
    if "max_bytes" in table:
        size = table["max_bytes"]
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            check.error(f"{prefix}max_bytes", f"expected a whole number of bytes >= 0 (0 = no cap), got {size!r}",
                        (*parts, "max_bytes"))
        else:
            out["max_bytes"] = size
    if out:
        out["source"] = str(check.path)
    return out


def _parse_stop_check(check: _FileCheck, value: Any):
    """The file's `[stop_check]`: a StopCheckSpec, False when `enabled = false`, None when invalid."""
    from wrapagent.hooks.config_model import DEFAULT_MAX_CONTINUES, DEFAULT_STOP_CHECK_TIMEOUT, StopCheckSpec

    parts, prefix = ("stop_check",), "stop_check."
    table = _check_table(check, value, "stop_check", parts)
    if table is None:
        return None
    check.unknown_keys(table, _STOP_CHECK_KEYS, prefix, parts)
    enabled = _check_bool(check, table, "enabled", True, prefix, parts)
    command = _check_str(check, table, "command", prefix, parts, required=enabled)
    timeout = _check_timeout(check, table, "timeout_secs", DEFAULT_STOP_CHECK_TIMEOUT, prefix, parts)
    quiet = _check_timeout(check, table, "quiet_secs", 1.0, prefix, parts) if "quiet_secs" in table else None
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


def _parse_checkpoints(check: _FileCheck, value: Any) -> dict[str, Any]:
    """The `[checkpoints]` keys this file sets (validated), for merging key by key."""
    table = _check_table(check, value, "checkpoints", ("checkpoints",))
    if table is None:
        return {}
    parts, prefix = ("checkpoints",), "checkpoints."
    check.unknown_keys(table, _CHECKPOINT_KEYS, prefix, parts)
    defaults = CheckpointSettings()
    out: dict[str, Any] = {}
    for key in ("enabled", "transcripts"):
        if key in table:
            out[key] = _check_bool(check, table, key, getattr(defaults, key), prefix, parts)
    if "budget_secs" in table:
        out["budget_secs"] = _check_timeout(check, table, "budget_secs", defaults.budget_secs, prefix, parts)
    if "max_file_mb" in table:
        mb = table["max_file_mb"]
        if isinstance(mb, bool) or not isinstance(mb, (int, float)) or mb < 0:
            check.error(f"{prefix}max_file_mb", f"expected a size in MB >= 0 (0 = no cap), got {mb!r}",
                        (*parts, "max_file_mb"))
        else:
            out["max_file_mb"] = float(mb)
    if "keep_days" in table:
        days = table["keep_days"]
        if isinstance(days, bool) or not isinstance(days, (int, float)) or days < 0:
            check.error(f"{prefix}keep_days", f"expected a number of days >= 0 (0 = keep all), got {days!r}",
                        (*parts, "keep_days"))
        else:
            out["keep_days"] = float(days)
    if "max_transcript_bytes" in table:
        size = table["max_transcript_bytes"]
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            check.error(f"{prefix}max_transcript_bytes", f"expected a whole number of bytes >= 0, got {size!r}",
                        (*parts, "max_transcript_bytes"))
        else:
            out["max_transcript_bytes"] = size
    if out:
        out["source"] = str(check.path)
    return out


# --------------------------------------------------------------------------- config.toml


def _parse_pre_session(check: _FileCheck, value: Any) -> PreSessionHook | None:
    key = "hooks.pre_session"
    parts = ("hooks", "pre_session")
    table = _check_table(check, value, key, parts)
    if table is None:
        return None
    prefix = f"{key}."
    check.unknown_keys(table, _PRE_SESSION_KEYS, prefix, parts)
    enabled = _check_bool(check, table, "enabled", True, prefix, parts)
    command = _check_str(check, table, "command", prefix, parts, required=enabled)
    timeout = _check_timeout(check, table, "timeout_seconds", DEFAULT_PRE_SESSION_TIMEOUT, prefix, parts)
    transports: list[str] = []
    raw = table.get("transports", [])
    if not isinstance(raw, list) or not all(isinstance(t, str) for t in raw):
        check.error(f"{prefix}transports", "expected an array of strings", (*parts, "transports"))
    else:
        for name in raw:
            canonical = normalize_tool(name)
            if canonical not in KNOWN_TOOLS:
                check.warning(
                    f"{prefix}transports",
                    f"{name!r} is not a known tool ({', '.join(KNOWN_TOOLS)}); it matches only a tool of exactly that name",
                    (*parts, "transports"),
                )
            if canonical not in transports:
                transports.append(canonical)
    return PreSessionHook(command or "", enabled, tuple(transports), timeout, str(check.path))


def parse_config_file(check: _FileCheck, data: dict) -> PreSessionHook | None:
    pre_session = None
    for key, value in data.items():
        if key != "hooks":
            check.warning(key, "unknown key, ignored", (key,))
            continue
        table = _check_table(check, value, "hooks", ("hooks",))
        if table is None:
            continue
        for sub, sub_value in table.items():
            if sub == "pre_session":
                pre_session = _parse_pre_session(check, sub_value)
            else:
                hint = " (lifecycle hooks and prompt guards belong in hooks.toml)" if sub in (*EVENTS, "prompt_guard") else ""
                check.warning(f"hooks.{sub}", f"unknown key, ignored{hint}", ("hooks", sub))
    return pre_session
