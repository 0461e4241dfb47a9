"""The tool's own session(s) of one wrapped run, and copies of their transcripts.

Each CLI keeps its conversations its own way (measured on the pinned
versions, see integration/):

| tool     | where                                                             | id                       |
|----------|-------------------------------------------------------------------|--------------------------|
| codex    | `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`     | `session_meta.payload.id` |
| claude   | `$CLAUDE_CONFIG_DIR/projects/<cwd, / . _ as ->/<uuid>.jsonl`      | the file name            |
| gemini   | `~/.gemini/tmp/<project>/chats/session-*.jsonl` (`.project_root`) | first line's `sessionId` |
| opencode | SQLite `$XDG_DATA_HOME/opencode/opencode.db` (opencode_db.py)     | `ses_…`                  |

A run's sessions are those of the run's working directory written during
the run's time window (file mtime, or opencode's `time_updated`); never
"the newest file" alone, so another project's or an earlier run's
conversation is not picked up. A `/clear` or `/new` starts a new
conversation: all of them are kept, oldest first, and the last one is the
one `sessions resume` continues.

Everything here runs after the tool exited, while the user waits for their
prompt: reads are bounded (first lines only); an opencode conversation is
read from opencode's database, and only a store laid out in a way not known
here costs the one subprocess (`opencode export`, with a timeout).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Callable, Mapping, Sequence

TRANSCRIPT_DIR = "transcript"
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
EXPORT_TIMEOUT_SECS = 20.0
WINDOW_SLACK_SECS = 2.0  # file systems with coarse mtimes; clocks read by different processes
HEAD_BYTES = 64 * 1024  # enough of a transcript's start to find its id and cwd


class NativeSession:
    """One conversation of the tool: its id, when it was last written, and how to copy it."""

    def __init__(self, session_id: str, updated: float, *, path: Path | None = None,
                 export: Sequence[str] | None = None, suffix: str = ".jsonl",
                 read: Callable[[], bytes | None] | None = None, read_from: str = "") -> None:
        self.id = session_id
        self.updated = updated
        self.path = path
        self.export = list(export) if export else None
        self.suffix = suffix
        self.read = read  # the transcript without a subprocess, or None: run `export`
        self.read_from = read_from  # where `read` reads it (the record's `source` when it did)

    def __repr__(self) -> str:
        return f"NativeSession({self.id!r}, path={self.path!s})"


def _same_dir(a: str | None, b: str | Path) -> bool:
    if not a:
        return False
    try:
        return os.path.realpath(a) == os.path.realpath(str(b))
    except (OSError, ValueError):
        return False


def _head_lines(path: Path, limit: int = HEAD_BYTES) -> list[dict]:
    """The JSON objects on the first lines of a JSONL file (a cut last line is dropped)."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit)
    except OSError:
        return []
    from wrapagent.history.transcript_turns import jsonl_objects

    return jsonl_objects(data)


def _recent_files(pattern_root: Path, glob: str, started: float, ended: float) -> list[tuple[float, Path]]:
    """(mtime, path) of files matching `glob` under `pattern_root` written within the window."""
    out = []
    try:
        candidates = list(pattern_root.glob(glob))
    except OSError:
        return []
    for path in candidates:
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if started - WINDOW_SLACK_SECS <= mtime <= ended + WINDOW_SLACK_SECS:
            out.append((mtime, path))
    return out


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or os.path.expanduser("~"))


# --------------------------------------------------------------------------- per tool


def find_codex(cwd: Path, started: float, ended: float, env: Mapping[str, str]) -> list[NativeSession]:
    root = Path(env.get("CODEX_HOME") or _home(env) / ".codex") / "sessions"
    out = []
    for mtime, path in _recent_files(root, "*/*/*/rollout-*.jsonl", started, ended):
        for entry in _head_lines(path)[:3]:
            payload = entry.get("payload") if entry.get("type") == "session_meta" else None
            if isinstance(payload, dict) and _same_dir(payload.get("cwd"), cwd):
                out.append(NativeSession(str(payload.get("id") or payload.get("session_id")), mtime, path=path))
                break
    return out


def claude_slug(cwd: Path) -> str:
    """claude's folder name for a working directory: every `/`, `.` and `_` becomes `-`."""
    return "".join("-" if ch in "/._" else ch for ch in str(cwd))


def find_claude(cwd: Path, started: float, ended: float, env: Mapping[str, str]) -> list[NativeSession]:
    base = Path(env.get("CLAUDE_CONFIG_DIR") or _home(env) / ".claude") / "projects"
    out = []
    # The slug folder first; the others only when it is missing (a slug rule
    # that changed between releases), each file then checked for its cwd.
    folders = [base / claude_slug(cwd)]
    if not folders[0].is_dir():
        folders = [p for p in base.glob("*") if p.is_dir()] if base.is_dir() else []
    for folder in folders:
        for mtime, path in _recent_files(folder, "*.jsonl", started, ended):
            lines = _head_lines(path)
            if not any(_same_dir(e.get("cwd"), cwd) for e in lines):
                continue
            if not any(e.get("type") in ("user", "assistant") for e in lines):
                continue  # a file without a single message: nothing to resume
            out.append(NativeSession(path.stem, mtime, path=path))
    return out


def find_gemini(cwd: Path, started: float, ended: float, env: Mapping[str, str]) -> list[NativeSession]:
    base = Path(env.get("GEMINI_CLI_HOME") or _home(env)) / ".gemini" / "tmp"
    out = []
    try:
        projects = [p for p in base.iterdir() if p.is_dir()]
    except OSError:
        return []
    for project in projects:
        try:
            root = (project / ".project_root").read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if not _same_dir(root, cwd):
            continue
        for mtime, path in _recent_files(project / "chats", "session-*.json*", started, ended):
            head = _head_lines(path)
            session_id = head[0].get("sessionId") if head else None
            if session_id:
                out.append(NativeSession(str(session_id), mtime, path=path, suffix=path.suffix))
    return out


def _opencode_db(env: Mapping[str, str]) -> Path:
    data = env.get("XDG_DATA_HOME") or str(_home(env) / ".local" / "share")
    return Path(data) / "opencode" / "opencode.db"


def find_opencode(cwd: Path, started: float, ended: float, env: Mapping[str, str],
                  executable: str | None = None) -> list[NativeSession]:
    """Sessions in opencode's SQLite store (read only) for this directory, updated in the window."""
    import sqlite3

    db = _opencode_db(env)
    if not db.exists():
        return []
    try:
        from wrapagent.history.opencode_db import connect_read_only

        conn = connect_read_only(db)
        try:
            rows = conn.execute(
                "SELECT id, directory, time_updated FROM session WHERE time_updated >= ? "
                "AND time_updated <= ? ORDER BY time_updated",
                (int((started - WINDOW_SLACK_SECS) * 1000), int((ended + WINDOW_SLACK_SECS) * 1000)),
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise OSError(f"cannot read {db}: {exc}") from None
    binary = executable or "opencode"
    return [NativeSession(str(sid), updated / 1000.0, export=[binary, "export", str(sid)], suffix=".json",
                          read=_reader(db, str(sid)), read_from=str(db))
            for sid, directory, updated in rows if _same_dir(directory, cwd)]


def _reader(db: Path, session_id: str) -> Callable[[], bytes | None]:
    """Reads one opencode conversation from its database (opencode_db.py), as `opencode export` would."""
    def read() -> bytes | None:
        from wrapagent.history.opencode_db import read_export

        return read_export(db, session_id)
    return read


DEMO_TRANSCRIPTS = "demo-agent"
"""The demo agent keeps its conversations in `<wrapagent state>/demo-agent/<time>-<pid>-<n>.jsonl`:
first line `{"type": "session", "id", "cwd"}`, then `{"type": "user" | "assistant", "text"}`."""


def demo_transcripts_dir(env: Mapping[str, str]) -> Path:
    from wrapagent.paths import state_dir

    return state_dir(env) / DEMO_TRANSCRIPTS


def find_demo(cwd: Path, started: float, ended: float, env: Mapping[str, str]) -> list[NativeSession]:
    """The demo agent's conversations of this run: its folder, this cwd, the run's time window."""
    out = []
    for mtime, path in _recent_files(demo_transcripts_dir(env), "*.jsonl", started, ended):
        head = _head_lines(path)[:1]
        if head and head[0].get("type") == "session" and _same_dir(head[0].get("cwd"), cwd):
            out.append(NativeSession(str(head[0].get("id")), mtime, path=path))
    return out


FINDERS: dict[str, Callable[..., list[NativeSession]]] = {
    "demo": find_demo,
    "codex": find_codex,
    "claude": find_claude,
    "gemini": find_gemini,
    "opencode": find_opencode,
}


def resume_args(tool: str, native_id: str, extra: Sequence[str] = ()) -> list[str]:
    """The tool's own arguments that continue conversation `native_id` (from each pinned CLI's --help).

    codex: `codex [OPTIONS] resume <SESSION_ID>`; claude: `--resume <id>`;
    gemini: `--resume <uuid>`; opencode: `--session <id>`. `extra` (the
    user's own options) go before codex's subcommand, after the others' flag.
    """
    if tool == "codex":
        return [*extra, "resume", native_id]
    if tool in ("claude", "gemini"):
        return ["--resume", native_id, *extra]
    if tool == "opencode":
        return ["--session", native_id, *extra]
    raise KeyError(tool)


# --------------------------------------------------------------------------- copying


def _copy_capped(source: Path, dest: Path, budget: int) -> tuple[int, bool]:
    """Copy whole lines of `source` while they fit in `budget` bytes; (bytes written, truncated)."""
    written = 0
    truncated = False
    with contextlib.suppress(FileNotFoundError):
        os.unlink(dest)  # written anew, never through a link left there
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    with open(source, "rb") as src, open(fd, "wb") as out:
        for line in src:
            if written + len(line) > budget:
                truncated = True
                break
            out.write(line)
            written += len(line)
    return written, truncated


def run_bounded(argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of argv, killed with everything it started after `timeout` s.

    `opencode` is a node launcher whose native child would otherwise keep
    the pipes open past the timeout: it runs in its own group (child_process.py).
    """
    from wrapagent import child_process

    try:
        done = child_process.run(argv, timeout=timeout, env=env, cwd=cwd)
        return done.code, done.stdout, done.stderr
    except TimeoutError:
        raise OSError(f"`{' '.join(argv[1:])}` timed out after {timeout:.1f} s") from None


def _export(session: NativeSession, dest: Path, budget: int, cwd: Path,
            env: Mapping[str, str], timeout: float, entry: dict) -> tuple[int, bool]:
    data = session.read() if session.read is not None else None
    if data is not None:
        entry["source"] = session.read_from
    else:
        code, data, err = run_bounded(session.export, cwd, env, timeout)
        if code != 0:
            tail = err.decode("utf-8", "replace").strip().splitlines()
            raise OSError(f"`{' '.join(session.export[1:])}` failed: {tail[-1] if tail else code}")
    truncated = len(data) > budget
    with contextlib.suppress(FileNotFoundError):
        os.unlink(dest)
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    with open(fd, "wb") as out:
        out.write(data[:budget] if truncated else data)
    return min(len(data), budget), truncated


def _safe_name(tool: str, session: NativeSession, index: int) -> str:
    stem = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in session.id)[:80] or str(index)
    return f"{tool}-{stem}{session.suffix}"


def claimed_by_children(sessions_root: Path, session_id: str) -> set[str]:
    """Native ids recorded by sessions nested in this one (a `claude -p` the agent ran).

    They share the cwd and the time window, but they are the sub-agent's
    conversations, not this session's. Only folders named after this
    session's id are read: ULIDs sort by time, so children come later.
    """
    out: set[str] = set()
    try:
        names = [n for n in os.listdir(sessions_root) if n > session_id and not n.startswith(".")]
    except OSError:
        return out
    for name in names:
        try:
            with open(sessions_root / name / "session.json", encoding="utf-8") as f:
                child = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(child, dict) and child.get("parent_session") == session_id:
            out.update(str(s.get("id")) for s in child.get("native_sessions") or [] if isinstance(s, dict))
    return out


def collect(tool: str, record: dict, session_dir: Path, *, cwd: Path, started: float, ended: float,
            env: Mapping[str, str], executable: str | None = None,
            max_bytes: int = DEFAULT_MAX_BYTES, timeout: float = EXPORT_TIMEOUT_SECS,
            exclude: set[str] | frozenset[str] = frozenset()) -> None:
    """Find this run's native sessions, copy their transcripts, and note them in `record`.

    Sets `native_session_id` and `native_sessions`; problems go to
    `record["warnings"]`. Sessions whose id is in `exclude` (nested
    sessions' own) are left out. Never raises (the record must survive).
    """
    finder = FINDERS.get(tool)
    if finder is None:
        return
    warnings = record.setdefault("warnings", [])
    deadline = time.monotonic() + timeout
    try:
        if tool == "opencode":
            found = finder(cwd, started, ended, env, executable)
        else:
            found = finder(cwd, started, ended, env)
    except Exception as exc:
        warnings.append(f"transcripts: cannot look for {tool}'s sessions: {exc}")
        return
    found = sorted((s for s in found if s.id not in exclude), key=lambda s: s.updated)
    entries = []
    budget = max_bytes
    folder = session_dir / TRANSCRIPT_DIR
    for index, session in enumerate(found):
        entry: dict = {"id": session.id, "source": str(session.path) if session.path else "opencode export"}
        entries.append(entry)
        if budget <= 0:
            entry["note"] = f"not copied: the transcripts' size cap ({max_bytes} bytes) was reached"
            continue
        name = _safe_name(tool, session, index)
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            if session.path is not None:
                size, truncated = _copy_capped(session.path, folder / name, budget)
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    entry["note"] = "not copied: out of time"
                    continue
                size, truncated = _export(session, folder / name, budget, cwd, env, left, entry)
        except Exception as exc:
            entry["note"] = f"not copied: {exc}"
            warnings.append(f"transcripts: {session.id}: {exc}")
            continue
        budget -= size
        entry.update(transcript=f"{TRANSCRIPT_DIR}/{name}", bytes=size)
        if truncated:
            entry["note"] = f"truncated at the transcripts' size cap ({max_bytes} bytes)"
            warnings.append(f"transcripts: {session.id} truncated at {max_bytes} bytes")
    record["native_sessions"] = entries
    record["native_session_id"] = entries[-1]["id"] if entries else None
