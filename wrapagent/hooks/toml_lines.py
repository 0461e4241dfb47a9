"""Line numbers for config problems: where a key sits in a TOML text.

tomllib reports no positions for values, so a problem's line is found by
scanning the text. Imported only when there is a problem to report: a clean
config never loads it (nor `re`).
"""

from __future__ import annotations


def key_pattern(key: str) -> str:
    import re

    k = re.escape(key)
    return rf"""(?:{k}|"{k}"|'{k}')"""


def find_line(text: str, parts: tuple, *, lines: list[str] | None = None) -> int | None:
    """Best-effort line number of a key, given its path like ("prompt_guard", 2, "command").

    tomllib does not report positions for values, so this scans the text: the
    parent's table header (the n-th `[[array]]` header for an index), then the
    first `key =` before the next header. A path naming a table finds its
    header. Falls back to any `key =` line (dotted keys, inline tables), then
    to the parent's header. `lines` is `text.splitlines()` when the caller has it.
    """
    import re

    if not text or not parts:
        return None
    if lines is None:
        lines = text.splitlines()
    any_header = re.compile(r"^\s*\[")

    def header_line(table_parts: tuple) -> int | None:
        names = [p for p in table_parts if isinstance(p, str)]
        index = next((p for p in table_parts if isinstance(p, int)), None)
        if not names:
            return None
        dotted = r"\s*\.\s*".join(key_pattern(p) for p in names)
        header = re.compile(rf"^\s*\[\[?\s*{dotted}\s*\]\]?\s*(#.*)?$")
        seen = -1
        for number, line in enumerate(lines):
            if header.match(line):
                seen += 1
                if index is None or seen == index:
                    return number
        return None

    key = parts[-1]
    if isinstance(key, int):
        found = header_line(parts)
        return None if found is None else found + 1
    parent = parts[:-1]
    start = header_line(parent) if parent else -1
    if start is not None:
        assign = re.compile(rf"^\s*{key_pattern(key)}\s*=")
        for number in range(start + 1, len(lines)):
            if any_header.match(lines[number]):
                break
            if assign.match(lines[number]):
                return number + 1
    own = header_line(parts)
    if own is not None:
        return own + 1
    if parent and start is None and isinstance(parent[-1], str):
        # The parent is no table header: an inline table, `args = { key = … }`.
        found = find_line(text, parent, lines=lines)
        if found is not None:
            return found
    loose = re.compile(rf"(^|[\s{{,.]){key_pattern(key)}\s*=")
    for number, line in enumerate(lines):
        if loose.search(line):
            return number + 1
    return start + 1 if start is not None and start >= 0 else None


def toml_error_line(exc: Exception) -> int | None:
    """The line of a TOMLDecodeError (attribute on 3.14+, else parsed from the message)."""
    import re

    line = getattr(exc, "lineno", None)
    if isinstance(line, int):
        return line
    match = re.search(r"line (\d+)", str(exc))
    return int(match.group(1)) if match else None
