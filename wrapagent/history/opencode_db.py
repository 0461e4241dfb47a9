"""An opencode conversation read from opencode's own SQLite store, as `opencode export` prints it.

`opencode export <id>` starts the whole of opencode (a compiled Bun program:
~1.4 s and ~2 s of CPU on a 2-core machine) while the user waits for their
prompt after quitting opencode. The same document is in opencode's database
(`$XDG_DATA_HOME/opencode/opencode.db`), which wrapagent already reads to
find the run's conversations: a `session` row, `message` rows and `part`
rows whose `data` column holds each object's JSON without its ids. Read
here, read only, and put together the way `opencode export` does (checked
against its output on both pinned releases in integration/).

A store whose tables or columns are not the ones known here gives None: the
caller then runs `opencode export` as before, so a future release that
changes its store costs time, never the transcript.
"""

from __future__ import annotations

import json
import sqlite3

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

SESSION_COLUMNS = ("id", "project_id", "slug", "directory", "title", "version", "time_created", "time_updated")
"""Columns the session row must have for the document to be built here (the rest are optional)."""


def connect_read_only(db: Path | str) -> sqlite3.Connection:
    """opencode's database opened read only (a busy one waited on for 2 s).

    The path goes into a `file:` URI percent-encoded: a `?`, `#` or `%` in a
    folder name would otherwise end the path there and open another file.
    """
    from pathlib import Path

    return sqlite3.connect(Path(db).absolute().as_uri() + "?mode=ro", uri=True, timeout=2.0)


def _json_column(value: object) -> object:
    """A column holding JSON text (opencode's `model`, `revert`, …), parsed; other values as they are."""
    if isinstance(value, str):
        return json.loads(value)
    return value


def _drop_none(obj: dict) -> dict:
    """The object without its unset fields: `opencode export` leaves them out."""
    return {key: value for key, value in obj.items() if value is not None}


def session_info(row: sqlite3.Row) -> dict:
    """The `info` object of the export, from the session row's columns."""
    col = {key: row[key] for key in row.keys()}
    summary = _drop_none({
        "additions": col.get("summary_additions"),
        "deletions": col.get("summary_deletions"),
        "files": col.get("summary_files"),
        "diffs": _json_column(col.get("summary_diffs")),
    })
    tokens = None
    if col.get("tokens_input") is not None:
        tokens = {
            "input": col.get("tokens_input"),
            "output": col.get("tokens_output"),
            "reasoning": col.get("tokens_reasoning"),
            "cache": {"read": col.get("tokens_cache_read"), "write": col.get("tokens_cache_write")},
        }
    share = {"url": col["share_url"]} if col.get("share_url") else None
    return _drop_none({
        "id": col["id"],
        "slug": col["slug"],
        "projectID": col["project_id"],
        "workspaceID": col.get("workspace_id"),
        "directory": col["directory"],
        "path": col.get("path"),
        "parentID": col.get("parent_id"),
        "title": col["title"],
        "agent": col.get("agent"),
        "model": _json_column(col.get("model")),
        "version": col["version"],
        "share": share,
        "summary": summary or None,
        "cost": _number(col.get("cost")),
        "tokens": tokens,
        "metadata": _json_column(col.get("metadata")),
        "revert": _json_column(col.get("revert")),
        "permission": _json_column(col.get("permission")),
        "time": _drop_none({
            "created": col["time_created"],
            "updated": col["time_updated"],
            "compacting": col.get("time_compacting"),
            "archived": col.get("time_archived"),
        }),
    })


def _number(value: object) -> object:
    """opencode writes `cost` as a REAL; its export prints a whole number without `.0`."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def export_document(conn: sqlite3.Connection, session_id: str) -> dict | None:
    """The conversation `session_id` as `opencode export` prints it, or None if it is not there."""
    conn.row_factory = sqlite3.Row
    row = conn.execute("SELECT * FROM session WHERE id = ?", (session_id,)).fetchone()
    if row is None or any(name not in row.keys() for name in SESSION_COLUMNS):
        return None
    info = session_info(row)
    parts: dict[str, list[dict]] = {}
    for part_id, message_id, data in conn.execute(
            "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY id", (session_id,)):
        parts.setdefault(message_id, []).append(
            {**json.loads(data), "id": part_id, "sessionID": session_id, "messageID": message_id})
    messages = []
    for message_id, data in conn.execute(
            "SELECT id, data FROM message WHERE session_id = ? ORDER BY id", (session_id,)):
        messages.append({"info": {**json.loads(data), "id": message_id, "sessionID": session_id},
                         "parts": parts.get(message_id, [])})
    return {"info": info, "messages": messages}


def read_export(db: Path, session_id: str) -> bytes | None:
    """The export of `session_id` as JSON bytes (indented like opencode's), or None: run `opencode export`.

    None when the database cannot be read or is not laid out as known here.
    The database is opened read only; a busy one is waited on for 2 s.
    """
    try:
        conn = connect_read_only(db)
    except sqlite3.Error:
        return None
    try:
        document = export_document(conn, session_id)
    except (sqlite3.Error, ValueError, KeyError, TypeError):
        return None
    finally:
        conn.close()
    if document is None:
        return None
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
