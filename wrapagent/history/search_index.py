"""The search index over every session's messages and replies, all projects and tools in one file.

`$XDG_STATE_HOME/wrapagent/search.sqlite3` (0600, created new, never
through a link). SQLite's FTS5 with the `trigram` tokenizer: a search for
TEXT finds every message containing it as a substring, case-insensitively,
as `grep -i` would, from the index rather than by reading every
transcript. Text shorter than three characters (which trigrams cannot
index) and an SQLite built without FTS5 fall back to `LIKE` over the same
rows (a scan; the mode is kept in the file's `meta` table).

Each session is indexed when it ends (`index_record`); a search first adds
the finished sessions it does not know yet (recorded before the index
existed, or whose indexing failed), so the index never misses one.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from pathlib import Path
    from typing import Any, Iterable, Mapping

INDEX_NAME = "search.sqlite3"
BUSY_SECS = 5.0
MIN_TRIGRAM = 3
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS sessions(id TEXT PRIMARY KEY, project TEXT, tool TEXT, started_at TEXT,
                                    dir TEXT, source TEXT);
CREATE TABLE IF NOT EXISTS messages(rowid INTEGER PRIMARY KEY, id TEXT, turn INTEGER, who TEXT, text TEXT);
CREATE INDEX IF NOT EXISTS messages_id ON messages(id);
"""
FTS_SCHEMA = ("CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(text, content='messages', "
              "content_rowid='rowid', tokenize='trigram')")


def index_path(env: Mapping[str, str] | None = None) -> str:
    from wrapagent.paths import state_dir_str

    return os.path.join(state_dir_str(env), INDEX_NAME)


def _ensure_file(path: str) -> None:
    """The index file exists, 0600, a regular file of ours (created with O_EXCL | O_NOFOLLOW)."""
    from wrapagent.history.private_files import create_private, private_dir

    private_dir(os.path.dirname(path))
    try:
        os.close(create_private(path))
    except FileExistsError:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise OSError(f"{path} is not a regular file of yours: the search index is not used") from None


def connect(env: Mapping[str, str] | None = None) -> sqlite3.Connection:
    """The index, created on first use; its mode (`fts5` or `like`) in `meta`."""
    import sqlite3

    path = index_path(env)
    _ensure_file(path)
    conn = sqlite3.connect(path, timeout=BUSY_SECS)
    conn.executescript(SCHEMA)
    if mode(conn) is None:
        try:
            conn.execute(FTS_SCHEMA)
            chosen = "fts5"
        except sqlite3.OperationalError:  # an SQLite without FTS5 or its trigram tokenizer
            chosen = "like"
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('mode', ?)", (chosen,))
        conn.commit()
    return conn


def mode(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'mode'").fetchone()
    return row[0] if row else None


def _delete(conn: sqlite3.Connection, session_id: str, fts: bool) -> None:
    if fts:
        rows = conn.execute("SELECT rowid, text FROM messages WHERE id = ?", (session_id,)).fetchall()
        conn.executemany("INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', ?, ?)", rows)
    conn.execute("DELETE FROM messages WHERE id = ?", (session_id,))
    conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))


def add(conn: sqlite3.Connection, record: Mapping[str, Any], session_dir: Path | str, conv: Mapping[str, Any]) -> None:
    """Put one session's conversation into the index (replacing what it held for it); no commit."""
    session_id = str(record.get("id"))
    fts = mode(conn) == "fts5"
    _delete(conn, session_id, fts)
    conn.execute("INSERT INTO sessions(id, project, tool, started_at, dir, source) VALUES (?, ?, ?, ?, ?, ?)",
                 (session_id, record.get("project_root"), record.get("tool"), record.get("started_at"),
                  str(session_dir), conv.get("source")))
    for turn in conv.get("turns") or []:
        for who in ("user", "agent"):
            text = turn.get(who) or ""
            if not text:
                continue
            cur = conn.execute("INSERT INTO messages(id, turn, who, text) VALUES (?, ?, ?, ?)",
                               (session_id, turn.get("n"), who, text))
            if fts:
                conn.execute("INSERT INTO messages_fts(rowid, text) VALUES (?, ?)", (cur.lastrowid, text))


def index_record(record: Mapping[str, Any], session_dir: Path, env: Mapping[str, str] | None = None) -> None:
    """At a session's end: its conversation (transcripts, else the recording) into the index."""
    from wrapagent.history.export import conversation

    conv = conversation(record, session_dir, env, with_files=False, screens=False)
    conn = connect(env)
    try:
        with conn:
            add(conn, record, session_dir, conv)
    finally:
        conn.close()


def catch_up(conn: sqlite3.Connection, session_dirs: Iterable[Path], env: Mapping[str, str] | None = None) -> int:
    """Index the finished sessions among `session_dirs` the index does not hold; how many were added."""
    from wrapagent.history.export import conversation

    known = {row[0] for row in conn.execute("SELECT id FROM sessions")}
    added = 0
    for folder in session_dirs:
        if folder.name in known:
            continue
        record = _load_record(folder)
        if record is None or record.get("state") == "running" or record.get("id") != folder.name:
            continue
        with conn:
            add(conn, record, folder, conversation(record, folder, env, with_files=False, screens=False))
        added += 1
    return added


def _load_record(folder: Path) -> dict | None:
    import json

    try:
        with open(folder / "session.json", encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


class Hit:
    """One matching message: its session and the first line holding the text."""

    __slots__ = ("id", "project", "tool", "started_at", "turn", "who", "line")

    def __init__(self, row: tuple, needle: str) -> None:
        self.id, self.project, self.tool, self.started_at, self.turn, self.who, text = row
        self.line = matching_line(text, needle)


def matching_line(text: str, needle: str) -> str:
    """The first line of `text` holding `needle` (case-insensitive), else its first line."""
    low = needle.casefold()
    for line in text.splitlines():
        if low in line.casefold():
            return line
    return text.splitlines()[0] if text else ""


def search(conn: sqlite3.Connection, text: str, *, tool: str | None = None,
           project: str | None = None) -> list[Hit]:
    """Messages containing `text` (case-insensitive), newest session first."""
    where, args = [], []
    if mode(conn) == "fts5" and len(text) >= MIN_TRIGRAM:
        phrase = '"' + text.replace('"', '""') + '"'
        where.append("m.rowid IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?)")
        args.append(phrase)
    else:
        escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        where.append("m.text LIKE ? ESCAPE '\\'")
        args.append(f"%{escaped}%")
    if tool is not None:
        where.append("s.tool = ?")
        args.append(tool)
    if project is not None:
        where.append("s.project = ?")
        args.append(project)
    sql = ("SELECT s.id, s.project, s.tool, s.started_at, m.turn, m.who, m.text FROM messages m "
           "JOIN sessions s ON s.id = m.id WHERE " + " AND ".join(where) +
           " ORDER BY s.started_at DESC, m.rowid")
    hits = [Hit(row, text) for row in conn.execute(sql, args)]
    # LIKE is case-insensitive for ASCII only; trigram matching folds case: keep what grep -i keeps.
    low = text.casefold()
    return [h for h in hits if low in h.line.casefold()]
