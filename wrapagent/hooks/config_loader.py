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
once), then its tables are checked by `config_tables`. Loading is cheap when
no file exists (the common case): three failed opens, no tomllib import, no
table parsers.
"""

from __future__ import annotations

import os
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:  # pathlib too (~20 ms): paths are plain strings until a file exists
    from pathlib import Path
    from types import ModuleType
    from typing import Any, Callable, Mapping

    from wrapagent.hooks.config_tables import HooksFile

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
    RecordSettings,
    default_session_complete,
    _frozen_map,
)

# --------------------------------------------------------------------------- TOML


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



# --------------------------------------------------------------------------- loading


def parse_hooks_bytes(path: str | Path, data: bytes, *, is_project: bool) -> tuple[HooksFile | None, tuple[Problem, ...]]:
    """What a hooks.toml's bytes define, and its problems: the ONE parse.

    The loader and `wrapagent trust`'s review both call this, so the review
    shows exactly what the loader would use (the same BOM handling, the same
    keys taken, the same errors).
    """
    check = _FileCheck(path)
    parsed = _parse(check, data)
    if parsed is None:
        return None, tuple(check.reported())
    from wrapagent.hooks.config_tables import parse_hooks_file

    value = parse_hooks_file(check, parsed, is_project=is_project)
    return value, tuple(check.reported())


def _tables() -> ModuleType:
    """The table parsers (`config_tables`), imported only once a file exists and parsed."""
    from wrapagent.hooks import config_tables

    return config_tables


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
    layer = Layer(kind, str(path), True, used, trusted, tuple(in_line_order), state,
                  getattr(value, "stop_check", None), getattr(value, "send", None))
    return layer, (value if used else None)


def extend_guards(base: tuple[GuardSpec, ...], more: tuple[GuardSpec, ...]) -> tuple[GuardSpec, ...]:
    """`base` then `more`; a guard of `more` named as one of `base` takes that one's place."""
    by_name = {guard.name: guard for guard in more}
    kept = tuple(by_name.pop(guard.name, guard) for guard in base)
    return kept + tuple(guard for guard in more if guard.name in by_name)


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
        lambda c, d: _tables().parse_hooks_file(c, d, is_project=False),
    )
    config_layer, pre_session = _load_layer(
        LAYER_GLOBAL_CONFIG, config_path, lambda: _read_global(config_path),
        lambda c, d: _tables().parse_config_file(c, d)
    )

    # The project layer is read first, then trust is asked about those bytes:
    # no look before the read that a file appearing meanwhile could slip past.
    root = os.fspath(project_root)
    project_layer, project_hooks = _load_layer(
        LAYER_PROJECT_HOOKS, project_hooks_path(root), lambda: _read_project(root),
        lambda c, d: _tables().parse_hooks_file(c, d, is_project=True),
        is_trusted if is_trusted is not None else (lambda p, d: _default_trust(env)(p, d)),
    )

    return _merged((global_layer, config_layer, project_layer), global_hooks, pre_session, project_hooks)


def config_without_files(project_root: str | Path, *, env: Mapping[str, str] | None = None) -> Config:
    """What `load_config` returns when none of the files exists, without looking for them again.

    For a launch that checked there is none (`planning.config_can_wait`) and
    started the tool on that: a file appearing since must not change what
    that decision was made on.
    """
    from wrapagent.paths import global_config_path, global_hooks_path, project_hooks_path

    env = os.environ if env is None else env
    layers = tuple(Layer(kind, path, False, False, None, ()) for kind, path in (
        (LAYER_GLOBAL_HOOKS, global_hooks_path(env)), (LAYER_GLOBAL_CONFIG, global_config_path(env)),
        (LAYER_PROJECT_HOOKS, project_hooks_path(os.fspath(project_root)))))
    return _merged(layers, None, None, None)


def _merged(layers: tuple[Layer, ...], global_hooks: HooksFile | None, pre_session: PreSessionHook | None,
            project_hooks: HooksFile | None) -> Config:
    """The layers' values as one Config: project entries over global ones (module docstring)."""
    lifecycle: dict[str, LifecycleHook] = {}
    guards: tuple[GuardSpec, ...] = ()
    checkpoints: dict[str, Any] = {}
    stop_check: Any = None
    send = False
    agents = global_hooks.agents if global_hooks is not None else ()
    record: dict[str, Any] = {}
    for hooks_file in (global_hooks, project_hooks):
        if hooks_file is None:
            continue
        lifecycle.update(hooks_file.lifecycle)
        if hooks_file.guards is not None:
            guards = extend_guards(guards, hooks_file.guards) if hooks_file.extend_guards else hooks_file.guards
        checkpoints.update(hooks_file.checkpoints)
        record.update(hooks_file.record)
        if hooks_file.stop_check is not None:
            stop_check = hooks_file.stop_check  # a project's [stop_check] replaces the global one
        if hooks_file.send is not None:
            send = hooks_file.send
    return Config(
        lifecycle=_frozen_map(lifecycle),
        guards=guards,
        pre_session=pre_session,
        layers=layers,
        checkpoints=CheckpointSettings(**checkpoints),
        stop_check=stop_check or None,
        send=send,
        agents=agents,
        record=RecordSettings(**record),
    )
