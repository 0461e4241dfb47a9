"""The recordings kept on disk: where a session's is, its compression at the end, expiry, removal.

The recorder (`recording.py`) writes `<state>/recordings/<session id>.cast` while the session
runs, with `<id>.cast.spool` beside it during a burst; what happens to the files after that
lives here: `Recorder.close` compresses, a later session's end expires, `sessions prune`
drops, `sessions replay` and `sessions export` find. The recorder imports this module, so it
imports nothing at load beyond `os` and `time` (the recorder loads once the tool's first
bytes are on the screen).
"""

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping

RECORDINGS_DIR = "recordings"
SPOOL_SUFFIX = ".spool"
COMPRESS_LEVEL = 1
"""gzip's fastest level: terminal output still shrinks 5-10x, and a recording at its 64 MiB cap
is compressed in well under a second while the user waits for their prompt."""
EXPIRE_EVERY_SECS = 24 * 3600
EXPIRE_MARK = ".expired"


def recordings_dir(env: "Mapping[str, str] | None" = None) -> str:
    """`$XDG_STATE_HOME/wrapagent/recordings`: outside the sessions repositories (never committed)."""
    from wrapagent.paths import state_dir_str

    return os.path.join(state_dir_str(env), RECORDINGS_DIR)


def recording_path(session_id: str, env: "Mapping[str, str] | None" = None) -> "str | None":
    """The session's recording on disk (compressed, else the raw one of a session that never ended)."""
    base = os.path.join(recordings_dir(env), session_id)
    for path in (base + ".cast.gz", base + ".cast"):
        if os.path.isfile(path) and not os.path.islink(path):
            return path
    return None



def compress(path: str) -> dict:
    """`X.cast` -> `X.cast.gz` (0600, never through a link), the raw file removed; the record's fields."""
    import gzip
    import shutil

    from wrapagent.history.private_files import create_private

    target = path + ".gz"
    try:
        fd = create_private(target)
        with open(path, "rb") as src, os.fdopen(fd, "wb") as raw, \
                gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=COMPRESS_LEVEL, mtime=0) as gz:
            shutil.copyfileobj(src, gz, 1024 * 1024)
        os.unlink(path)
    except OSError as exc:
        try:
            os.unlink(target)
        except OSError:
            pass
        return {"file": path, "note": f"not compressed: {exc}"}
    return {"file": target, "gz_bytes": os.path.getsize(target)}



def expire(keep_days: float, env: "Mapping[str, str]", *, now: "float | None" = None,
           force: bool = False) -> "list[str]":
    """Delete recordings of sessions older than `keep_days` (0 = keep all); the ids deleted.

    At most once a day (a mark file's mtime) unless `force`: one `stat` per session end.
    Session ids are ULIDs: the age is in the name, no file is opened.
    """
    from wrapagent.history.ids import ulid_seconds

    if keep_days <= 0:
        return []
    folder = recordings_dir(env)
    now = time.time() if now is None else now
    mark = os.path.join(folder, EXPIRE_MARK)
    try:
        if not force and now - os.stat(mark).st_mtime < EXPIRE_EVERY_SECS:
            return []
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    except OSError:
        return []
    cutoff = now - keep_days * 86400
    gone = []
    for name in names:
        session_id = name.split(".", 1)[0]
        stamp = ulid_seconds(session_id)
        if stamp is None or stamp >= cutoff or not name.startswith(session_id + ".cast"):
            continue
        try:
            os.unlink(os.path.join(folder, name))
            gone.append(session_id)
        except OSError:
            pass
    try:
        with open(mark, "w", encoding="utf-8") as f:
            f.write(f"wrapagent drops recordings older than {keep_days:g} days ([checkpoints] keep_days)\n")
    except OSError:
        pass
    return gone


def drop(session_ids: "list[str]", env: "Mapping[str, str]") -> int:
    """Delete these sessions' recordings (`sessions prune` dropped their checkpoints); how many."""
    from wrapagent.history.ids import ulid_seconds

    folder = recordings_dir(env)
    gone = 0
    for session_id in session_ids:
        if ulid_seconds(session_id) is None:
            continue  # not an id: never a path of its own
        for suffix in (".cast.gz", ".cast", ".cast" + SPOOL_SUFFIX):
            try:
                os.unlink(os.path.join(folder, session_id + suffix))
                gone += 1
            except OSError:
                pass
    return gone
