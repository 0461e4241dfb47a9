"""Reading a recording back: the asciicast v3 header and events, and the text its screen showed.

A recording is read whole (gzip, or the raw file of a session that never
ended; a gzip stream cut short by a crash is read as far as it goes). Lines
starting with `#` are comments (the format allows them). Events are
`[interval, code, data]` with `interval` relative to the previous event.
"""

from __future__ import annotations

import json
import os

from wrapagent.history.private_files import open_private_read

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterator

MAX_READ_BYTES = 512 * 1024 * 1024
"""A recording is capped far below this ([record] max_bytes); a bigger file is not one of ours."""


class CastError(Exception):
    """The file is not an asciicast v3 recording wrapagent can read."""


def read_bytes(path: str) -> bytes:
    """The recording's asciicast text, decompressed; a truncated gzip stream as far as it goes."""
    import zlib

    fd = open_private_read(path)
    with os.fdopen(fd, "rb") as f:
        raw = f.read(MAX_READ_BYTES)
    if not path.endswith(".gz"):
        return raw
    decomp = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        return decomp.decompress(raw, MAX_READ_BYTES)
    except zlib.error as exc:
        raise CastError(f"{path}: not a gzip file: {exc}") from None


def parse(data: bytes, only: str | None = None) -> tuple[dict, list[list]]:
    """(header, events); CastError when the header is not asciicast v3. A cut last line is dropped.

    `only`: the events of that code alone (the others are not even parsed: a big recording's
    markers are read in milliseconds).
    """
    lines = data.decode("utf-8", "replace").split("\n")
    if only is not None:
        needle = json.dumps(only)
        lines = lines[:1] + [line for line in lines[1:] if needle in line]
    try:
        header = json.loads(lines[0])
    except ValueError:
        raise CastError("the first line is not a JSON header") from None
    if not isinstance(header, dict) or header.get("version") != 3 or not isinstance(header.get("term"), dict):
        raise CastError("not an asciicast v3 header (version 3 with a `term` object)")
    events = []
    for line in lines[1:]:
        if not line or line.startswith("#"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue  # the last line of a recording cut short
        if isinstance(event, list) and len(event) == 3 and isinstance(event[0], (int, float)) \
                and isinstance(event[1], str) and isinstance(event[2], str) and only in (None, event[1]):
            events.append(event)
    return header, events


def load(path: str, only: str | None = None) -> tuple[dict, list[list]]:
    return parse(read_bytes(path), only)


def term_size(header: dict) -> tuple[int, int]:
    """(rows, cols) of the header's terminal (24x80 when it says nothing usable)."""
    term = header.get("term") or {}
    rows, cols = term.get("rows"), term.get("cols")
    if not isinstance(rows, int) or not isinstance(cols, int) or rows <= 0 or cols <= 0:
        return 24, 80
    return rows, cols


def timed(events: list[list], speed: float = 1.0, idle_limit: float | None = None) -> Iterator[tuple[float, list]]:
    """(seconds to wait before it, event) for playing: each interval capped at `idle_limit`, / `speed`."""
    for event in events:
        wait = max(float(event[0]), 0.0)
        if idle_limit is not None:
            wait = min(wait, idle_limit)
        yield wait / speed, event


# --------------------------------------------------------------------------- the screen's text


TAIL_CHARS = 32 * 1024
"""A turn's screen is rebuilt from at most this much of the output before its end (see `turns_from_screen`)."""


def _screen_text(text: str, rows: int, cols: int) -> str:
    """What a terminal of that size shows after `text` (pyte), blank lines around it dropped."""
    import pyte

    screen = pyte.Screen(cols, rows)
    pyte.Stream(screen).feed(text)
    lines = [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(lines)


def turns_from_screen(header: dict, events: list[list], *, screens: bool = True) -> list[dict[str, str]]:
    """Turns read off the recording: the marker's words, and what the screen showed at the turn's end.

    For a tool that keeps no transcript wrapagent can read: the message is
    the marker's first words (keys are never recorded), the reply is the
    screen's text just before the next turn (or the end). The screen is
    rebuilt by pyte from the last TAIL_CHARS of output before that moment:
    TUIs redraw whole screens often, and pyte reads ~50 KB/s here, so a
    whole hour of output would take minutes. `screens=False`: the messages
    only (cheap: what a session's end indexes).
    """
    rows, cols = term_size(header)
    turns: list[dict[str, str]] = []
    tail: list[str] = []
    size = 0
    for _interval, code, data in events:
        if code == "o" and screens:
            tail.append(data)
            size += len(data)
            while len(tail) > 1 and size - len(tail[0]) >= TAIL_CHARS:
                size -= len(tail.pop(0))
        elif code == "r":
            parsed = _parse_size(data)
            if parsed is not None:
                rows, cols = parsed
        elif code == "m" and data.startswith("turn "):
            if turns and screens:
                turns[-1]["agent"] = _screen_text("".join(tail)[-TAIL_CHARS:], rows, cols)
            _, _, words = data.partition(": ")
            turns.append({"user": words, "agent": ""})
    if turns and screens:
        turns[-1]["agent"] = _screen_text("".join(tail)[-TAIL_CHARS:], rows, cols)
    return turns


def _parse_size(data: str) -> tuple[int, int] | None:
    """`COLSxROWS` -> (rows, cols)."""
    cols, _, rows = data.partition("x")
    try:
        size = int(rows), int(cols)
    except ValueError:
        return None
    return size if size[0] > 0 and size[1] > 0 else None
