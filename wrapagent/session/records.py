"""Session records: one directory per wrapped run, in a per-project git repository.

The record is JSON written atomically (temp file + rename), so a crash, a
SIGHUP or a second wrapagent never leaves half a file. It is saved when the
session starts, again when the tool exits (before post_run), and after each
hook, so nothing the user did is lost even if wrapagent is killed later.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import time
from pathlib import Path
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator, Mapping, Sequence

from wrapagent import paths, portable
from wrapagent.session.ids import new_session_id

RECORD_NAME = "session.json"
LOG_NAME = "session.log"
RUNNING_DIR = ".running"
"""`<sessions root>/.running/<id>.lock`: one marker per live session, removed when it ends.

A killed wrapagent leaves its marker behind, so the next session finds the
candidates with one listdir of this tiny folder (not a git call, not a scan of
every record). `*.lock` is in the repository's .gitignore, so markers are never committed.
"""
START_TIME_TOLERANCE = 0.01  # seconds; both sides use the same clock-tick arithmetic


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat()


def iso_from_epoch(seconds: float) -> str:
    return _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc).isoformat()


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write via a temp file + rename: readers see the old or the new record, never half.

    `durable` fsyncs first; the record written before the tool starts skips
    it (it is rewritten when the tool exits) to keep disk waits off start-up.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


class Session:
    """One wrapped run of a tool: its directory, record and log."""

    def __init__(self, root: Path, session_id: str, record: dict[str, Any]) -> None:
        self.root = root
        self.id = session_id
        self.dir = root / session_id
        self.record = record
        self._log = None
        self._t0 = time.monotonic()
        self.uncommitted = False
        """The default session_complete could not commit: the running marker stays, so the
        next session's sweep commits this record (its wrapagent gone by then)."""

    @classmethod
    def create(cls, *, tool: str, transport: str, argv: Sequence[str], executable: str,
               cwd: str | Path, project_root: str | Path, env: Mapping[str, str],
               mode: str, session_id: str | None = None,
               started_at: float | None = None) -> "Session":
        """Create the session's folder, first record and running marker.

        `session_id` and `started_at` (epoch seconds) are given when the
        tool was started first and the record is written while it starts.
        """
        root = paths.sessions_root(project_root, env)
        session_id = session_id or new_session_id()
        paths.make_session_dir(root, session_id)
        parent = env.get("WRAPAGENT_SESSION_ID") or None
        record: dict[str, Any] = {
            "id": session_id,
            "tool": tool,
            "transport": transport,
            "argv": list(argv),
            "executable": executable,
            "cwd": str(cwd),
            "project_root": str(project_root),
            "parent_session": parent,
            "depth": int(env.get("WRAPAGENT_DEPTH", "0") or 0),
            "mode": mode,
            "started_at": now_iso() if started_at is None else iso_from_epoch(started_at),
            "ended_at": None,
            "duration_s": None,
            "exit_code": None,
            "signal": None,
            "peak_rss_bytes": None,
            "cpu_seconds": None,
            "hooks": [],
            "injection": {"status": "none", "path": None, "text": None, "at": None,
                          "attempts": 0, "notes": []},
            "injections": [],
            "turns": [],
            "warnings": [],
            "state": "running",
            "checkpoints": None,  # session/checkpoints.py
            "native_session_id": None,  # session/transcripts.py
            "native_sessions": [],
            "pid": os.getpid(),
            "pid_started_at": portable.process_start_time(os.getpid()),
        }
        session = cls(root, session_id, record)
        if started_at is not None:  # the duration counts from the tool's start
            session._t0 -= max(0.0, time.time() - started_at)
        session.save(durable=False)
        session._mark_running()
        return session

    @property
    def running_marker(self) -> Path:
        return self.root / RUNNING_DIR / f"{self.id}.lock"

    def _mark_running(self) -> None:
        """Written after the first record, so whoever sees the marker can read the pid."""
        try:
            self.running_marker.parent.mkdir(exist_ok=True)
            self.running_marker.touch()
        except OSError:
            pass  # a read-only root loses crash detection, not the session

    @property
    def record_path(self) -> Path:
        return self.dir / RECORD_NAME

    @property
    def log_path(self) -> Path:
        return self.dir / LOG_NAME

    def save(self, *, durable: bool = True) -> None:
        data = json.dumps(self.record, indent=2, ensure_ascii=False).encode() + b"\n"
        atomic_write(self.record_path, data, durable=durable)

    def log(self, message: str) -> None:
        """Append to the session log. Never to the terminal: the tool's screen is up."""
        if self._log is None:
            self._log = open(self.log_path, "a", encoding="utf-8", errors="replace")
        stamp = _dt.datetime.now().strftime("%H:%M:%S.%f")[:-3]
        for line in message.rstrip("\n").split("\n"):
            self._log.write(f"{stamp} {line}\n")
        self._log.flush()

    def warn(self, message: str) -> None:
        self.record["warnings"].append(message)
        self.log(f"WARNING: {message}")

    def add_hook(self, outcome: Mapping[str, Any]) -> None:
        self.record["hooks"].append(dict(outcome))

    def finish(self, *, exit_code: int, signal: int | None, cpu_seconds: float,
               peak_rss_bytes: int) -> None:
        self.record.update(
            ended_at=now_iso(),
            duration_s=round(time.monotonic() - self._t0, 3),
            exit_code=exit_code,
            signal=signal,
            cpu_seconds=round(cpu_seconds, 3),
            peak_rss_bytes=peak_rss_bytes,
            state="finished",
        )
        self.save()

    def block(self, reason: str) -> None:
        """pre_run refused the launch: the tool never ran, so no exit code or resources."""
        self.record.update(ended_at=now_iso(), duration_s=round(time.monotonic() - self._t0, 3),
                           state="blocked", blocked_reason=reason)
        self.save()

    def close(self) -> None:
        """The session is over (whatever its state): close the log and drop the running marker
        (kept when the record could not be committed: the next session's sweep commits it)."""
        if self._log is not None:
            self._log.close()
            self._log = None
        if not self.uncommitted:
            with contextlib.suppress(OSError):
                self.running_marker.unlink()


def load_record(session_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((session_dir / RECORD_NAME).read_text())
    except (OSError, ValueError):
        return None


def iter_records(roots: Sequence[Path]) -> list[dict[str, Any]]:
    """All readable records under the given sessions roots, newest first (ULIDs sort by time)."""
    out = []
    for root in roots:
        try:
            children = list(root.iterdir())
        except OSError:
            continue
        for child in children:
            if child.is_dir() and not child.name.startswith("."):
                rec = load_record(child)
                if rec is not None:
                    rec.setdefault("_dir", str(child))
                    out.append(rec)
    out.sort(key=lambda r: r.get("id", ""), reverse=True)
    return out


# --------------------------------------------------------------------------- abandoned sessions


def owner_alive(record: Mapping[str, Any]) -> bool:
    """Whether the wrapagent that wrote `record` still runs: same pid, same start time."""
    pid = record.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    started = portable.process_start_time(pid)
    if started is None:
        return False
    recorded = record.get("pid_started_at")
    if not isinstance(recorded, (int, float)):
        return True  # no start time to compare: a live pid is given the benefit of the doubt
    return abs(started - recorded) <= START_TIME_TOLERANCE


def running_markers(root: Path, own_id: str) -> list[str]:
    """Session ids with a running marker other than `own_id`: one listdir, usually of an empty folder."""
    try:
        names = os.listdir(root / RUNNING_DIR)
    except OSError:
        return []
    return [n[: -len(".lock")] for n in names if n.endswith(".lock") and n != f"{own_id}.lock"]


def mark_abandoned(session_dir: Path, record: dict[str, Any], *, by: str) -> None:
    """`running` → `abandoned`, ended when its log (else its record) was last written."""
    stamps = []
    for name in (LOG_NAME, RECORD_NAME):
        with contextlib.suppress(OSError):
            stamps.append((session_dir / name).stat().st_mtime)
    ended = max(stamps) if stamps else time.time()
    duration = None
    with contextlib.suppress(TypeError, ValueError):
        duration = round(max(0.0, ended - _dt.datetime.fromisoformat(record["started_at"]).timestamp()), 3)
    record.update(state="abandoned", ended_at=iso_from_epoch(ended), duration_s=duration)
    record.setdefault("warnings", []).append(
        f"wrapagent (pid {record.get('pid')}) ended without closing this session (killed?); "
        f"marked abandoned by session {by}; ended_at is the last write of its files")
    data = json.dumps(record, indent=2, ensure_ascii=False).encode() + b"\n"
    atomic_write(session_dir / RECORD_NAME, data)


def sweep_abandoned(root: Path, own_id: str, *, log: Callable[[str], None] = lambda m: None) -> list[str]:
    """Mark and commit the sessions whose wrapagent died without ending them; their ids.

    Under the commit lock, so two sessions starting at once do not both
    commit the same record, and no session_complete commits half of it.
    A `finished` (or `blocked`) record whose wrapagent died before its
    session_complete commit (SIGKILL during the commit) is committed here;
    one whose wrapagent still runs is left to it. Either way its marker goes.
    """
    candidates = running_markers(root, own_id)
    if not candidates:
        return []
    from wrapagent.session import sessions_repo

    found: list[str] = []
    ended: list[str] = []
    drop: list[str] = []
    with sessions_repo.commit_lock(root):
        for sid in candidates:
            session_dir = root / sid
            record = load_record(session_dir)
            state = record.get("state") if record is not None else None
            if state == "running":
                if owner_alive(record):
                    continue
                mark_abandoned(session_dir, record, by=own_id)
                log(f"session {sid}: its wrapagent is gone; marked abandoned")
                found.append(sid)
            elif state == "abandoned":
                found.append(sid)  # marked by a sweep that could not commit it
            elif state in ("finished", "blocked") and not owner_alive(record):
                ended.append(sid)
            else:
                drop.append(sid)
        committed = sessions_repo.uncommitted(root, ended) if ended else []
        if committed:
            plural = "s" if len(committed) > 1 else ""
            sessions_repo.commit_sessions(
                root, committed, f"session{plural} {', '.join(committed)} complete "
                                 f"(committed by session {own_id}: its wrapagent ended before committing)")
            log(f"session{plural} {', '.join(committed)}: ended but not committed; committed now")
        if found:
            sessions_repo.commit_sessions(root, found, f"session{'s' if len(found) > 1 else ''} "
                                                       f"{', '.join(found)} abandoned")
        for sid in (*drop, *ended, *found):
            with contextlib.suppress(OSError):
                (root / RUNNING_DIR / f"{sid}.lock").unlink()
    return found + committed
