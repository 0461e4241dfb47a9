"""Session ids: ULIDs, made before anything else of a session exists.

The id names the session's record folder and is needed before the tool
starts (the tool's environment carries WRAPAGENT_SESSION_ID), so it is
made in `paths` (`new_session_id`, re-exported here), which a full-mode
start loads anyway: this package and module would be two more to load
before the tool (~0.3 ms). What reads ids (`looks_like_id`) lives here.
"""

from wrapagent.paths import CROCKFORD, new_session_id  # noqa: F401 - re-exported: one import point


_ID_CHARS = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-")


def looks_like_id(text: str) -> bool:
    """Whether `text` can be a session id (a parent's, from WRAPAGENT_SESSION_ID).

    Not only ULIDs (tests and older versions used other names), but nothing
    that could act as a path (`/`, `..`), reach a terminal (controls) or
    fill a record: 1 to 64 ASCII letters, digits, `_` and `-`.
    """
    return 0 < len(text) <= 64 and all(ch in _ID_CHARS for ch in text)


def ulid_seconds(session_id: str) -> "float | None":
    """Seconds since the epoch in a ULID's first 10 characters; None when `session_id` is not a
    ULID (26 Crockford base-32 characters), so that an odd folder name never reads as a date."""
    if len(session_id) != 26:
        return None
    value = 0
    for ch in session_id[:10].upper():
        index = CROCKFORD.find(ch)
        if index < 0:
            return None
        value = value * 32 + index
    return value / 1000.0
