"""TOML text for a value: what `config check`, `doctor` and the trust review print for guard args.

A user reads these lines to copy them back into hooks.toml, so they must be
TOML (`["main", "master"]`, `false`, `{ max_bytes = 4000 }`), not Python
reprs (`('main', 'master')`, `False`, `{'max_bytes': 4000}`).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Iterable

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else toml_value(key)


def toml_value(value: Any) -> str:
    """An inline TOML value (strings as basic strings, tables inline)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        # JSON string escapes are valid TOML basic-string escapes (\uXXXX included); JSON leaves
        # DEL as it is, which TOML does not take raw in a string.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, dict):
        return toml_table(value.items())
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return toml_value(str(value))


def toml_table(items: Iterable[tuple[str, Any]]) -> str:
    """`{ key = value, … }`: an inline table, as `args = …` takes it."""
    body = ", ".join(f"{toml_key(str(k))} = {toml_value(v)}" for k, v in items)
    return "{ " + body + " }" if body else "{}"
