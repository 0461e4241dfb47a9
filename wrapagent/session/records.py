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
COMMIT_LOCK_NAME = ".commit.lock"
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
            "pid_start": portable.process_start_key(os.getpid()),  # what owner_alive compares
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
        """The session is over (whatever its state): close the log and drop the running marker."""
        if self._log is not None:
            self._log.close()
            self._log = None
        with contextlib.suppress(OSError):
            self.running_marker.unlink()


def ensure_repo(root: Path) -> None:
    """Make the sessions root a git repository with its own committer identity.

    The default session_complete hook commits there; a machine without a
    global git identity must not make that fail.
    """
    root.mkdir(parents=True, exist_ok=True)
    if (root / ".git").exists():
        return
    import subprocess  # ~10 ms: at exit, not before the tool starts

    env = git_env()
    subprocess.run(["git", "init", "-q", str(root)], check=True, env=env,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    for key, value in (("user.name", "wrapagent"), ("user.email", "wrapagent@localhost"),
                       ("commit.gpgsign", "false"), ("core.hooksPath", "/dev/null")):
        subprocess.run(["git", "-C", str(root), "config", key, value], check=True, env=env,
                       stdin=subprocess.DEVNULL)
    (root / ".gitignore").write_text("*.lock\n.*.tmp\n")
    # Commit it at once, so the repository starts clean and `git status`
    # there only ever shows sessions.
    for cmd in (["add", ".gitignore"], ["commit", "-q", "-m", "sessions repository"]):
        subprocess.run(["git", "-C", str(root), *cmd], check=True, env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def amend_session_commit(root: Path, session_id: str) -> None:
    """Add the final record to the commit the default session_complete just made.

    Called under the commit lock right after that hook succeeded, so HEAD is
    this session's commit; `--amend -- <dir>` takes the session's files as
    they are now, in one git call (this runs after the tool exited, while
    the user waits for their prompt).
    """
    import subprocess

    subprocess.run(["git", "-C", str(root), "commit", "-q", "--amend", "--no-edit", "--",
                    f"{session_id}/"], env=git_env(), stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def git_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env.update(GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", PAGER="cat")
    return env


@contextlib.contextmanager
def commit_lock(root: Path, timeout: float = 60.0) -> Iterator[None]:
    """Serialises session_complete across wrapagent processes: two sessions ending at once both commit.

    A plain `flock(2)` on a file in the sessions root (released by the kernel
    if wrapagent dies). Not the `filelock` package here: importing it costs
    ~50 ms (it pulls in asyncio and typing), paid after every session while
    the user waits for their prompt; the trust store, off the hot path, uses it.
    """
    import fcntl

    fd = os.open(root / COMMIT_LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"{root / COMMIT_LOCK_NAME} is held by another session") from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # closing the fd releases the lock


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
    data = json.dumps(record, indent=2, ensure_ascii=False).encode() + b"\n"
    atomic_write(session_dir / RECORD_NAME, data)


def sweep_abandoned(root: Path, own_id: str, *, log: Callable[[str], None] = lambda m: None) -> list[str]:
    """Mark and commit the sessions whose wrapagent died without ending them; their ids.

    Under the commit lock, so two sessions starting at once do not both
    commit the same record, and no session_complete commits half of it.
    A marker whose record already ended (wrapagent killed after saving it)
    is simply dropped.
    """
    candidates = running_markers(root, own_id)
    if not candidates:
        return []
    found: list[str] = []
    with commit_lock(root):
        for sid in candidates:
            session_dir = root / sid
            record = load_record(session_dir)
            if record is not None and record.get("state") == "running":
                if owner_alive(record):
                    continue
                mark_abandoned(session_dir, record, by=own_id)
                log(f"session {sid}: its wrapagent is gone; marked abandoned")
                found.append(sid)
            elif record is not None and record.get("state") == "abandoned":
                found.append(sid)  # marked by a sweep that could not commit it
            else:
                with contextlib.suppress(OSError):
                    (root / RUNNING_DIR / f"{sid}.lock").unlink()
        if found:
            _commit_sessions(root, found, f"session{'s' if len(found) > 1 else ''} "
                                          f"{', '.join(found)} abandoned")
            for sid in found:
                with contextlib.suppress(OSError):
                    (root / RUNNING_DIR / f"{sid}.lock").unlink()
    return found


def _commit_sessions(root: Path, session_ids: Sequence[str], message: str) -> None:
    """Commit exactly these session folders (not whatever else is staged); raises on a git failure."""
    import subprocess

    ensure_repo(root)
    dirs = [f"{sid}/" for sid in session_ids]
    env = git_env()
    subprocess.run(["git", "-C", str(root), "add", "--", *dirs], check=True, env=env,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", message, "--", *dirs],
                   env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # "nothing to commit" (an earlier sweep committed, then died) is fine; anything left is not.
    left = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", *dirs], check=True,
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True).stdout
    if left.strip():
        raise RuntimeError(f"could not commit {', '.join(dirs)} in {root}")
