"""`sessions search TEXT [--tool T] [--project P | --all]`: the sessions where something was said.

Searches the messages and the agents' replies of every recorded session
(all projects unless `--project`), through the search index
(`history/search_index.py`): one line per matching message, newest session
first: short id, project, tool, date, turn and who said it, and the line that
holds TEXT. Exit 1 when nothing matches, as grep does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Iterator, Mapping

from wrapagent import paths
from wrapagent.commands.sessions_find import SessionsError, _resolve_project

LINE_CHARS = 160
"""A matching line longer than this is cut around the match."""


def session_dirs(env: Mapping[str, str]) -> Iterator[Path]:
    """Every session folder of every project (names only: no record is read here)."""
    for root in paths.all_sessions_roots(env):
        try:
            names = os.listdir(root)
        except OSError:
            continue
        for name in names:
            if not name.startswith(".") and len(name) == 26:
                yield root / name


def cmd_search(ns, out: IO[str], env: Mapping[str, str], err: IO[str]) -> int:
    import sqlite3

    from wrapagent.commands.sessions_ids import unique_prefixes
    from wrapagent.commands.sessions_show import format_time
    from wrapagent.history import search_index
    from wrapagent.visible import visible

    if not ns.text:
        raise SessionsError("nothing to search for")
    project = None if ns.all or ns.project is None else str(_resolve_project(ns.project))
    try:
        conn = search_index.connect(env)
    except (OSError, sqlite3.Error) as exc:
        raise SessionsError(f"cannot open the search index {search_index.index_path(env)}: {exc}") from None
    try:
        search_index.catch_up(conn, session_dirs(env), env)
        hits = search_index.search(conn, ns.text, tool=ns.tool, project=project)
        short = unique_prefixes(row[0] for row in conn.execute("SELECT id FROM sessions"))
    except sqlite3.Error as exc:
        raise SessionsError(f"the search index failed: {exc}") from None
    finally:
        conn.close()
    home = os.path.expanduser("~")
    for hit in hits:
        where = hit.project or "-"
        if where == home or where.startswith(home + os.sep):
            where = "~" + where[len(home):]
        who = "you" if hit.who == "user" else (hit.tool or "agent")
        line = _around(hit.line.strip(), ns.text)
        out.write(visible(f"{short.get(hit.id, hit.id)}  {where}  {hit.tool}  {format_time(hit.started_at)}"
                          f"  turn {hit.turn} {who}: {line}") + "\n")
    return 0 if hits else 1


def _around(line: str, needle: str) -> str:
    """The line, cut to LINE_CHARS around the first match."""
    if len(line) <= LINE_CHARS:
        return line
    at = max(line.casefold().find(needle.casefold()), 0)
    start = max(0, min(at - LINE_CHARS // 3, len(line) - LINE_CHARS))
    cut = line[start:start + LINE_CHARS]
    return ("…" if start else "") + cut + ("…" if start + LINE_CHARS < len(line) else "")
