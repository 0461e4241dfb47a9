"""The argument schema of the built-in guards, and its validation.

Its own module because the config loader validates `args` of every
`builtin = "..."` guard at load time (so `config check` reports mistakes),
without importing the guards themselves: loading a config costs the schema,
not git parsing or directory walks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

BUILTIN_NAMES: tuple[str, ...] = (
    "branch_protection",
    "dirty_tree",
    "git_status",
    "git_diff",
    "recent_commits",
    "environment",
    "date",
    "directory_listing",
    "prompt_files",
)

_REQUIRED = object()


class _Opt:
    """One option: a plain class (a NamedTuple class costs ~0.3 ms of import time each)."""

    __slots__ = ("kind", "default", "choices")
    kind: str  # "pos_int" | "bool" | "str_list" | "path_list" | "choice"
    default: object
    choices: tuple[str, ...]

    def __init__(self, kind: str, default: object, choices: tuple[str, ...] = ()) -> None:
        self.kind, self.default, self.choices = kind, default, choices


_SCHEMA: dict[str, dict[str, _Opt]] = {
    "branch_protection": {
        "branches": _Opt("str_list", ("main", "master", "dev", "develop")),
    },
    "dirty_tree": {
        "always": _Opt("bool", False),
        "max_bytes": _Opt("pos_int", 4000),
    },
    "git_status": {
        "max_bytes": _Opt("pos_int", 4000),
    },
    "git_diff": {
        "mode": _Opt("choice", "stat", ("stat", "full")),
        "max_bytes": _Opt("pos_int", 8000),
    },
    "recent_commits": {
        "count": _Opt("pos_int", 10),
        "max_bytes": _Opt("pos_int", 4000),
    },
    "environment": {},
    "date": {},
    "directory_listing": {
        "depth": _Opt("pos_int", 2),
        "max_entries": _Opt("pos_int", 200),
    },
    "prompt_files": {
        "files": _Opt("path_list", _REQUIRED),
        "max_bytes": _Opt("pos_int", 16000),
    },
}


def _show(value: object) -> str:
    """A value as the user wrote it in TOML (strings quoted, booleans lower case)."""
    import json

    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _check(key: str, opt: _Opt, value: object) -> object:
    """One option, converted to its canonical form; ValueError names the key."""
    where = f"args.{key}"
    if opt.kind == "pos_int":
        # bool is an int subclass; `max_bytes = true` is a mistake, not 1.
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{where}: expected a positive integer, got {_show(value)}")
        return value
    if opt.kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"{where}: expected true or false, got {_show(value)}")
        return value
    if opt.kind == "choice":
        if value not in opt.choices:
            wanted = " or ".join(f'"{c}"' for c in opt.choices)
            raise ValueError(f"{where}: expected {wanted}, got {_show(value)}")
        return value
    # Lists of strings.
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"{where}: expected a list of strings, got {_show(value)}")
    items: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise ValueError(f"{where}[{i}]: expected a non-empty string, got {_show(item)}")
        if opt.kind == "path_list" and not is_inside_path(item):
            raise ValueError(
                f"{where}[{i}]: expected a path relative to the project root "
                f"(no leading / and no ..), got {_show(item)}"
            )
        items.append(item)
    if opt.kind == "path_list" and not items:
        raise ValueError(f"{where}: expected at least one file name")
    return tuple(items)


def is_inside_path(name: str) -> bool:
    """True for a relative path that cannot climb out of its base by itself."""
    if os.path.isabs(name) or name.startswith("~"):
        return False
    return ".." not in name.replace("\\", "/").split("/")


def validate_args(name: str, args: Mapping[str, object]) -> dict[str, object]:
    """Return args with defaults filled; raise ValueError naming the bad key.

    Called by the config loader so mistakes surface in `config check`, not in
    the middle of a session; `run_builtin` calls it again so it never works on
    unchecked input. Lists come back as tuples (the config is frozen).
    """
    schema = _SCHEMA.get(name)
    if schema is None:
        raise ValueError(f'unknown built-in guard "{name}"; known: {", ".join(BUILTIN_NAMES)}')
    if not isinstance(args, Mapping):
        raise ValueError(f"args: expected a table, got {_show(args)}")
    for key in args:
        if key not in schema:
            known = ", ".join(schema) if schema else "none"
            raise ValueError(f'args.{key}: unknown option for built-in "{name}"; known: {known}')
    result: dict[str, object] = {}
    for key, opt in schema.items():
        if key in args:
            result[key] = _check(key, opt, args[key])
        elif opt.default is _REQUIRED:
            raise ValueError(f'args.{key}: required by built-in "{name}"')
        else:
            result[key] = opt.default
    return result
