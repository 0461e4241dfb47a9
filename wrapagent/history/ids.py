"""Session ids: ULIDs, made before anything else of a session exists.

A module of its own because the id is needed before the tool starts (the
tool's environment carries WRAPAGENT_SESSION_ID) while the record module
(json, datetime, pathlib) is imported only once the tool runs.
"""

import os
import time

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_session_id() -> str:
    """A ULID: sortable by creation time, so `ls` and `git log` list sessions in order.

    48 bits of milliseconds + 80 random bits, Crockford base32, 26 characters
    (https://github.com/ulid/spec). Written here rather than imported:
    python-ulid pulls in importlib.metadata, ~70 ms on every aliased start.
    """
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


_ID_CHARS = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-")


def looks_like_id(text: str) -> bool:
    """Whether `text` can be a session id (a parent's, from WRAPAGENT_SESSION_ID).

    Not only ULIDs (tests and older versions used other names), but nothing
    that could act as a path (`/`, `..`), reach a terminal (controls) or
    fill a record: 1 to 64 ASCII letters, digits, `_` and `-`.
    """
    return 0 < len(text) <= 64 and all(ch in _ID_CHARS for ch in text)
