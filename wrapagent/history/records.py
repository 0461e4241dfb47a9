"""Session records: one directory per wrapped run, in a per-project git repository.

The record is JSON written atomically (temp file + rename), so a crash, a
SIGHUP or a second wrapagent never leaves half a file. It is saved when the
session starts, again when the tool exits (before post_run), and after each
hook, so nothing the user did is lost even if wrapagent is killed later.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import time
from pathlib import Path
TYPE_CHECKING = False  # typing costs ~10 ms to import; annotations are strings
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator, Mapping, Sequence

from wrapagent import paths, portable
from wrapagent.history.ids import new_session_id
from wrapagent.history.record_json import ESCAPED_KEY, dumps, escape_bytes, loads, unescape_bytes  # noqa: F401

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
    A failed write (a full disk) leaves no temp file behind: it would hold
    the space the next write needs.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)  # a killed writer's: never written through
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with open(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def overwrite_in_place(path: Path, data: bytes) -> None:
    """Write `data` over the existing file's own blocks, when it fits; OSError otherwise.

    The fallback of a full disk: the temp file of `atomic_write` needs new
    blocks, rewriting a file no longer than it already is does not (tmpfs,
    ext4, xfs; a copy-on-write filesystem may still refuse). Not atomic: a
    crash in the middle leaves half a record, which is still better than
    one that says `running` forever.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        if os.fstat(fd).st_size < len(data):
            import errno

            raise OSError(errno.ENOSPC, "the record grew and the disk is full")
        view = memoryview(data)
        offset = 0
        while offset < len(data):
            offset += os.pwrite(fd, view[offset:], offset)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)


_ESSENTIAL = ("id", "tool", "transport", "argv", "executable", "cwd", "project_root", "parent_session",
              "depth", "mode", "started_at", "ended_at", "duration_s", "exit_code", "signal", "state",
              "blocked_reason", "pid", "pid_started_at")
"""What a record keeps when a full disk leaves room only for less than the first record's size."""


class Session:
    """One wrapped run of a tool: its directory, record and log.

    Once the tool runs, nothing written here may end the session or change
    its exit code: every write is best effort. A write that fails (a full
    disk, a state folder gone read-only) is noted in `lost` and said once,
    at the end (`loss_note`). A record whose folder cannot even be made
    (`unavailable`) lives in memory only: the tool still runs, with its
    hooks, and wrapagent says so once before it starts.
    """

    def __init__(self, root: Path, session_id: str, record: dict[str, Any]) -> None:
        self.root = root
        self.id = session_id
        self.dir = root / session_id
        self.record = record
        self._log = None
        self._t0 = time.monotonic()
        self.unavailable: str | None = None
        """Why this session has no folder (then nothing is written), else None."""
        self.lost: dict[str, str] = {}
        """What could not be written ("the record", "log lines") → the last error."""
        self._lost_lines = 0
        self._saved = False  # the latest state of the record is on disk
        self.uncommitted = False
        """The default session_complete could not commit: the running marker stays, so the
        next session's sweep commits this record (its wrapagent gone by then)."""

    @classmethod
    def create(cls, *, tool: str, transport: str, argv: Sequence[str], executable: str,
               cwd: str | Path, project_root: str | Path, env: Mapping[str, str],
               mode: str, session_id: str | None = None,
               started_at: float | None = None, without_folder: bool = False,
               depth: int = 0) -> "Session":
        """Create the session's folder, first record and running marker.

        `session_id` and `started_at` (epoch seconds) are given when the
        tool was started first and the record is written while it starts.
        A folder that cannot be made raises WrapagentError, or with
        `without_folder` gives a session that writes nothing (`unavailable`
        says why); a first record that cannot be written (a full disk) gives
        that session in any case.
        """
        from wrapagent.errors import WrapagentError

        root = paths.sessions_root(project_root, env)
        session_id = session_id or new_session_id()
        unavailable = None
        try:
            paths.make_session_dir(root, session_id, env)
        except WrapagentError as exc:
            if not without_folder:
                raise
            unavailable = exc.message
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
            "depth": depth,  # WRAPAGENT_DEPTH, garbage counted as 0 by the caller (`launch` warned)
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
            "tool_version": None,  # session/tool_version.py, filled in at the end
            "turns": [],
            "warnings": [],
            "state": "running",
            "checkpoints": None,  # history/checkpoints.py
            "native_session_id": None,  # history/transcripts.py
            "native_sessions": [],
            "pid": os.getpid(),
            "pid_started_at": portable.process_start_time(os.getpid()),
            "pid_start": portable.process_start_key(os.getpid()),  # what owner_alive compares
        }
        session = cls(root, session_id, record)
        session.unavailable = unavailable
        if started_at is not None:  # the duration counts from the tool's start
            session._t0 -= max(0.0, time.time() - started_at)
        if unavailable is None:
            session.save(durable=False)
            if session._saved:
                session._mark_running()
            else:  # already full at start: say so before the tool, like a folder that cannot be made
                what = session.lost.get("the record", "")
                session.unavailable = f"cannot write the session record in {session.dir}: {what}"
                with contextlib.suppress(OSError):
                    os.rmdir(session.dir)  # empty: no folder left behind for nothing
        return session

    @property
    def running_marker(self) -> Path:
        return self.root / RUNNING_DIR / f"{self.id}.lock"

    def _mark_running(self) -> None:
        """Written after the first record, so whoever sees the marker can read the pid."""
        try:
            self.running_marker.parent.mkdir(mode=0o700, exist_ok=True)
            os.close(os.open(self.running_marker, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
        except OSError:
            pass  # a read-only root loses crash detection, not the session

    @property
    def record_path(self) -> Path:
        return self.dir / RECORD_NAME

    @property
    def log_path(self) -> Path:
        return self.dir / LOG_NAME

    def save(self, *, durable: bool = True) -> None:
        """Write the record (best effort: see the class); on a full disk, over the old one in place."""
        if self.unavailable is not None:
            return
        data = dumps(self.record).encode() + b"\n"
        try:
            atomic_write(self.record_path, data, durable=durable)
        except OSError as exc:
            why = exc.strerror or str(exc)
            try:
                overwrite_in_place(self.record_path, dumps(self.record, indent=None).encode())
            except OSError:
                # Smaller still: how the session ended, without its details.
                # The first record (indented) always holds these fields.
                essential = {k: self.record[k] for k in _ESSENTIAL if k in self.record}
                essential["warnings"] = [f"the disk was full ({why}): this record keeps only how "
                                         "the session ended; its details were lost"]
                try:
                    overwrite_in_place(self.record_path, dumps(essential, indent=None).encode())
                except OSError:
                    self._saved = False
                    self.lost["the record"] = why
                    return
                self.lost["the record's details"] = why
                self._saved = True
                return
        self._saved = True
        self.lost.pop("the record", None)
        self.lost.pop("the record's details", None)

    def log(self, message: str) -> None:
        """Append to the session log (best effort). Never to the terminal: the tool's screen is up."""
        lines = message.rstrip("\n").split("\n")
        if self.unavailable is not None:
            return
        stamp = _dt.datetime.now().strftime("%H:%M:%S.%f")[:-3]
        try:
            if self._log is None:
                fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o600)
                self._log = open(fd, "a", encoding="utf-8", errors="backslashreplace")
            self._log.write("".join(f"{stamp} {line}\n" for line in lines))
            self._log.flush()
        except (OSError, ValueError) as exc:
            self._lost_lines += len(lines)
            self.lost["log lines"] = getattr(exc, "strerror", None) or str(exc)
            self._drop_log()

    def _drop_log(self) -> None:
        """Close the log after a failed write: its buffer holds lines the disk did not take."""
        log, self._log = self._log, None
        if log is not None:
            with contextlib.suppress(OSError, ValueError):
                log.close()  # closes the file even when its last flush fails

    def loss_note(self) -> str | None:
        """One line for the end of the session: what of the record could not be written, and why."""
        if self.unavailable is not None:
            return None  # said before the tool started
        parts = []
        if "the record" in self.lost:
            parts.append("the session record")
        elif "the record's details" in self.lost:
            parts.append("the session record's details")
        if self._lost_lines:
            parts.append(f"{self._lost_lines} log line{'s' if self._lost_lines != 1 else ''}")
        if not parts:
            return None
        why = self.lost.get("the record") or self.lost.get("the record's details") or self.lost.get("log lines")
        note = f"{' and '.join(parts)} could not be written to {self.dir} ({why})"
        if "the record" in self.lost and self.running_marker.exists():
            note += "; the next session there will close it as abandoned"
        return note

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
        """The session is over (whatever its state): close the log and drop the running marker.

        The marker stays when the record could not be committed (the next
        session's sweep commits it) or its last state could not be written
        (the next session closes it as abandoned instead of leaving it
        `running` forever).
        """
        if self._log is not None:
            try:
                self._log.close()  # closes the file even when its last flush fails
            except (OSError, ValueError) as exc:
                self.lost["log lines"] = getattr(exc, "strerror", None) or str(exc)
                self._lost_lines += 1
            self._log = None
        if (self._saved or self.unavailable is not None) and not self.uncommitted:
            with contextlib.suppress(OSError):
                self.running_marker.unlink()


def load_record(session_dir: Path) -> dict[str, Any] | None:
    try:
        record = loads((session_dir / RECORD_NAME).read_bytes())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


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
    """Whether the wrapagent that wrote `record` still runs: same pid, same start.

    The start is compared as boot-relative ticks (`portable.process_start_key`):
    epoch times move with the wall clock, and a step would mark live sessions
    abandoned. Records written before that key existed compare epoch times.
    """
    pid = record.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    key = record.get("pid_start")
    if isinstance(key, str):
        return portable.process_start_key(pid) == key
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
    atomic_write(session_dir / RECORD_NAME, dumps(record).encode() + b"\n")


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
    from wrapagent.history import sessions_repo

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
