"""hooks.toml / config.toml layers → one validated, frozen `Config`.

Layers, lowest first:

* global hooks   `$XDG_CONFIG_HOME/wrapagent/hooks.toml`  lifecycle hooks, prompt guards
* global config  `$XDG_CONFIG_HOME/wrapagent/config.toml` `[hooks.pre_session]` (global only)
* project hooks  `<project root>/.wrapagent/hooks.toml`   lifecycle hooks, prompt guards;
  used only when trusted (path + content hash in the trust store); never
  through a link, and trust is decided on the very bytes that are parsed

Project entries replace global ones per event; a project `[[prompt_guard]]`
list (if the key is present at all) replaces the global list entirely.

Validation is fail-open per file: a file with an error (invalid TOML, wrong
type, missing required key) is not used at all, but the tool still runs and
the other layers still apply. Unknown keys are warnings. Every problem names
the file, the line (best effort) and the key. `--strict` is the caller's
decision, from `Config.has_errors`.

Every file is read bounded (`config_read`: a regular file, at most 1 MiB,
once). Loading is cheap when no file exists (the common case): three failed
opens, no tomllib import.
"""

from __future__ import annotations

import os
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:  # pathlib too (~20 ms): paths are plain strings until a file exists
    from pathlib import Path
    from typing import Any, Callable, Mapping

from wrapagent.hooks.file_check import MAX_KEY_PARTS, FileCheck as _FileCheck, too_many_key_parts
from wrapagent.hooks.config_model import (  # noqa: F401  (re-exported: one import point for callers)
    EVENTS,
    DEFAULT_SESSION_COMPLETE,
    DEFAULT_LIFECYCLE_TIMEOUT,
    DEFAULT_WAITING_TIMEOUT,
    WAITING_FOR_INPUT,
    DEFAULT_GUARD_TIMEOUT,
    DEFAULT_PRE_SESSION_TIMEOUT,
    DEFAULT_SOURCE,
    KNOWN_TOOLS,
    TOOL_ALIASES,
    LAYER_GLOBAL_HOOKS,
    LAYER_GLOBAL_CONFIG,
    LAYER_PROJECT_HOOKS,
    normalize_tool,
    Problem,
    LifecycleHook,
    GuardSpec,
    PreSessionHook,
    Layer,
    Config,
    CheckpointSettings,
    default_session_complete,
    _frozen_map,
)

_EVENT_KEYS = ("enabled", "command", "timeout_secs")
_STOP_CHECK_KEYS = ("enabled", "command", "timeout_secs", "max_continues", "quiet_secs")
_GUARD_KEYS = ("name", "command", "builtin", "args", "timeout_secs", "every_message")
_PRE_SESSION_KEYS = ("command", "enabled", "transports", "timeout_seconds")
_CHECKPOINT_KEYS = ("enabled", "budget_secs", "transcripts", "max_transcript_bytes", "keep_days")


# --------------------------------------------------------------------------- parsing helpers


def _type_name(value: Any) -> str:
    return {
        bool: "boolean",
        int: "integer",
        float: "float",
        str: "string",
        list: "array",
        dict: "table",
    }.get(type(value), type(value).__name__)


def _parse(check: _FileCheck, data: bytes) -> dict | None:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        check.error(None, f"not valid UTF-8: {exc}")
        return None
    check.text = text
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            check.error(None, "cannot parse TOML on this Python: install tomli")
            return None
    deep = too_many_key_parts(text)
    if deep is not None:
        check.error(None, f"invalid TOML: a key or table name of more than {MAX_KEY_PARTS} dotted parts "
                          "(wrapagent does not parse it)", line=deep)
        return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        from wrapagent.hooks.toml_lines import toml_error_line

        message = str(exc)
        check.error(None, f"invalid TOML: {message}", line=toml_error_line(exc))
        return None
    except RecursionError:  # `a = [[[[…` or `{b = {c = …`: tomllib recurses per level
        check.error(None, "invalid TOML: arrays or inline tables nested too deeply")
        return None



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

    __slots__ = ("lifecycle", "guards", "checkpoints", "stop_check", "send")

    def __init__(self, lifecycle: dict[str, LifecycleHook], guards: tuple[GuardSpec, ...] | None) -> None:
        self.lifecycle = lifecycle
        self.guards = guards  # None: the file does not define prompt_guard
        self.checkpoints: dict[str, Any] = {}  # the [checkpoints] keys this file sets
        self.stop_check: Any = None  # None: not in this file; False: `enabled = false`; else a StopCheckSpec
        self.send: bool | None = None  # [send] enabled, when this file says


def _parse_event(check: _FileCheck, event: str, value: Any) -> LifecycleHook | None:
    table = _check_table(check, value, event, (event,))
    if table is None:
        return None
    parts, prefix = (event,), f"{event}."
    waiting = event == WAITING_FOR_INPUT
    check.unknown_keys(table, (*_EVENT_KEYS, "quiet_secs") if waiting else _EVENT_KEYS, prefix, parts)
    enabled = _check_bool(check, table, "enabled", True, prefix, parts)
    default_timeout = DEFAULT_WAITING_TIMEOUT if waiting else DEFAULT_LIFECYCLE_TIMEOUT
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


def _parse_hooks_file(check: _FileCheck, data: dict, *, is_project: bool) -> HooksFile:
    lifecycle: dict[str, LifecycleHook] = {}
    guards: tuple[GuardSpec, ...] | None = None
    checkpoints: dict[str, Any] = {}
    stop_check: Any = None
    send: bool | None = None
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
            hint = check.did_you_mean(key, (*EVENTS, "prompt_guard", "checkpoints", "stop_check", "send"))
            check.warning(key, f"unknown key, ignored{hint}", (key,))
    parsed = HooksFile(lifecycle, guards)
    parsed.checkpoints = checkpoints
    parsed.stop_check = stop_check
    parsed.send = send
    return parsed


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


def _parse_config_file(check: _FileCheck, data: dict) -> PreSessionHook | None:
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


# --------------------------------------------------------------------------- loading


def parse_hooks_bytes(path: str | Path, data: bytes, *, is_project: bool) -> tuple[HooksFile | None, tuple[Problem, ...]]:
    """What a hooks.toml's bytes define, and its problems: the ONE parse.

    The loader and `wrapagent trust`'s review both call this, so the review
    shows exactly what the loader would use (the same BOM handling, the same
    keys taken, the same errors).
    """
    check = _FileCheck(path)
    parsed = _parse(check, data)
    value = _parse_hooks_file(check, parsed, is_project=is_project) if parsed is not None else None
    return value, tuple(check.reported())


def _default_trust(env: Mapping[str, str]) -> Callable[[Path, bytes], object]:
    from wrapagent.hooks.trust import TrustStore

    return TrustStore(env=env).check


def _trust_state(trust: Callable[[Path, bytes], object], path: str, data: bytes, check: _FileCheck) -> str:
    """trusted, changed or untrusted, for exactly `data`; anything unsure is untrusted."""
    from pathlib import Path

    try:
        answer = trust(Path(path), data)
    except Exception as exc:  # a broken trust store must not run untrusted hooks
        check.warning(None, f"could not check trust ({exc}); project hooks skipped")
        return "untrusted"
    if answer is True or answer == "trusted":
        return "trusted"
    return "changed" if answer == "changed" else "untrusted"


def _read_global(path: str) -> tuple[bool, bytes | None, str | None]:
    if not os.path.lexists(path):  # the common case, without importing the reader
        return False, None, None
    from wrapagent.hooks.config_read import read_config_file

    return read_config_file(path)


def _read_project(root: str) -> tuple[bool, bytes | None, str | None]:
    # Safe to look first: a file missing here is simply not used; one that is
    # there is read once and trusted (or not) on the bytes read.
    if not os.path.lexists(os.path.join(root, ".wrapagent")):
        return False, None, None
    from wrapagent.hooks.config_read import read_project_hooks

    return read_project_hooks(root)


def _load_layer(kind: str, path: str, read: Callable[[], tuple], parse: Callable[[_FileCheck, dict], Any],
                trust=None):
    """(Layer, parsed value or None). `trust` (project files only) sees the bytes that are then parsed.

    With `trust` given, only "trusted" uses the file: a file that could not be
    checked, or appeared between two looks, is not used.
    """
    exists, data, read_error = read()
    check = _FileCheck(path)
    if not exists:
        return Layer(kind, str(path), False, False, None, ()), None
    if read_error is not None:
        check.error(None, read_error)
        return Layer(kind, str(path), True, False, None, tuple(check.problems)), None
    state = None if trust is None else _trust_state(trust, path, data, check)
    trusted = None if state is None else state == "trusted"
    parsed_data = _parse(check, data)
    value = parse(check, parsed_data) if parsed_data is not None else None
    used = not check.has_errors and trusted is not False
    in_line_order = sorted(check.problems, key=lambda p: p.line or 0)  # stable: unlined ones keep their place
    in_line_order += check.reported()[len(check.problems):]  # "N more, not listed" closes the list
    layer = Layer(kind, str(path), True, used, trusted, tuple(in_line_order), state)
    return layer, (value if used else None)


def load_config(
    project_root: str | Path,
    *,
    env: Mapping[str, str] | None = None,
    is_trusted: Callable[[Path, bytes], bool | str] | None = None,
) -> Config:
    """Read, validate and merge every layer for `project_root`. Never raises for file contents."""
    from wrapagent.paths import global_config_path, global_hooks_path, project_hooks_path

    env = os.environ if env is None else env
    hooks_path, config_path = global_hooks_path(env), global_config_path(env)
    global_layer, global_hooks = _load_layer(
        LAYER_GLOBAL_HOOKS, hooks_path, lambda: _read_global(hooks_path),
        lambda c, d: _parse_hooks_file(c, d, is_project=False),
    )
    config_layer, pre_session = _load_layer(
        LAYER_GLOBAL_CONFIG, config_path, lambda: _read_global(config_path), _parse_config_file
    )

    # The project layer is read first, then trust is asked about those bytes:
    # no look before the read that a file appearing meanwhile could slip past.
    root = os.fspath(project_root)
    project_layer, project_hooks = _load_layer(
        LAYER_PROJECT_HOOKS, project_hooks_path(root), lambda: _read_project(root),
        lambda c, d: _parse_hooks_file(c, d, is_project=True),
        is_trusted if is_trusted is not None else (lambda p, d: _default_trust(env)(p, d)),
    )

    lifecycle: dict[str, LifecycleHook] = {}
    guards: tuple[GuardSpec, ...] = ()
    checkpoints: dict[str, Any] = {}
    stop_check: Any = None
    send = False
    for hooks_file in (global_hooks, project_hooks):
        if hooks_file is None:
            continue
        lifecycle.update(hooks_file.lifecycle)
        if hooks_file.guards is not None:
            guards = hooks_file.guards
        checkpoints.update(hooks_file.checkpoints)
        if hooks_file.stop_check is not None:
            stop_check = hooks_file.stop_check  # a project's [stop_check] replaces the global one
        if hooks_file.send is not None:
            send = hooks_file.send
    return Config(
        lifecycle=_frozen_map(lifecycle),
        guards=guards,
        pre_session=pre_session,
        layers=(global_layer, config_layer, project_layer),
        checkpoints=CheckpointSettings(**checkpoints),
        stop_check=stop_check or None,
        send=send,
    )
