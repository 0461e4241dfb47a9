"""Session records as JSON that keeps bytes: paths and arguments that are not UTF-8 round-trip.

`dumps` writes what `loads` reads back exactly, as UTF-8 any JSON reader
takes; `records` writes every record with it, and the commands print their
JSON documents with it (`doctor`, `sessions list|show --json`). Only
`json`, loaded with the record module anyway.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping

ESCAPED_KEY = "escaped"
"""A record's list of JSON pointers (RFC 6901) to the strings stored escaped.

Paths and arguments are bytes on POSIX; Python reads the bytes that are not
UTF-8 (a Latin-1 directory or prompt) as lone surrogates (`surrogateescape`),
which UTF-8 cannot encode and strict JSON readers refuse. Such a string is
stored as text in which each of those bytes is `\\xNN` and a backslash is
`\\\\`, and its pointer is listed here, e.g. `"escaped": ["/cwd", "/argv/2"]`:
the file stays UTF-8 that every JSON reader takes (jq shows the escapes),
`loads` gives back the same str and `os.fsencode` the same bytes. A record
with only UTF-8 strings has no such key and is stored exactly as before.
Dictionary keys are escaped too but not listed (records have no keys that
come from the user).
"""


def _needs_escape(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def escape_bytes(text: str) -> str:
    """`text` with each undecodable byte as `\\xNN` (other lone surrogates `\\uNNNN`), `\\` doubled."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def unescape_bytes(text: str) -> str:
    """The inverse of `escape_bytes`; a malformed escape is kept as it is."""
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            width = {"\\": 0, "x": 2, "u": 4}.get(nxt)
            digits = text[i + 2:i + 2 + width] if width else ""
            if width == 0:
                out.append("\\")
                i += 2
                continue
            if width and len(digits) == width and all(c in "0123456789abcdefABCDEF" for c in digits):
                code = int(digits, 16)
                out.append(chr(0xDC00 + code) if nxt == "x" else chr(code))
                i += 2 + width
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def _pointer_part(key: object) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def _escape_tree(value: Any, pointer: str, escaped: list[str]) -> Any:
    if isinstance(value, str):
        if _needs_escape(value):
            escaped.append(pointer)
            return escape_bytes(value)
        return value
    if isinstance(value, dict):
        return {(escape_bytes(k) if isinstance(k, str) and _needs_escape(k) else k):
                _escape_tree(v, f"{pointer}/{_pointer_part(k)}", escaped) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_escape_tree(v, f"{pointer}/{i}", escaped) for i, v in enumerate(value)]
    return value


def dumps(record: Mapping[str, Any], *, indent: int | None = 2, default: Callable[[Any], Any] | None = None) -> str:
    """`record` as JSON text that UTF-8 can always encode (see `ESCAPED_KEY`).

    Also for the other documents wrapagent prints (`doctor --json`), so a
    byte that is not UTF-8 is written one way everywhere; `default` as for `json.dumps`.
    """
    if default is not None:  # objects json cannot write become what `default` makes of them first
        record = json.loads(json.dumps(record, default=default))
    escaped: list[str] = []
    clean = _escape_tree({k: v for k, v in record.items() if k != ESCAPED_KEY}, "", escaped)
    if escaped:
        clean[ESCAPED_KEY] = escaped
    separators = None if indent is not None else (",", ":")
    return json.dumps(clean, indent=indent, ensure_ascii=False, separators=separators)


def loads(data: bytes | str) -> Any:
    """A record from `dumps`' JSON: the escaped strings back to what they were."""
    obj = json.loads(data)
    if isinstance(obj, dict) and isinstance(obj.get(ESCAPED_KEY), list):
        for pointer in obj.pop(ESCAPED_KEY):
            if isinstance(pointer, str):
                _unescape_at(obj, pointer)
    return obj


def _unescape_at(obj: Any, pointer: str) -> None:
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    if not parts:
        return
    parent = obj
    for part in parts[:-1]:
        parent = _child(parent, part)
        if parent is None:
            return
    last = parts[-1]
    if isinstance(parent, dict) and isinstance(parent.get(last), str):
        parent[last] = unescape_bytes(parent[last])
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent) \
            and isinstance(parent[int(last)], str):
        parent[int(last)] = unescape_bytes(parent[int(last)])


def _child(obj: Any, part: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(part)
    if isinstance(obj, list) and part.isdigit() and int(part) < len(obj):
        return obj[int(part)]
    return None
