"""A checkpoint per turn: the work tree when a message is submitted and when the agent stops.

Turn N's changes are what changed between its `start` and its `stop` (the
agent went quiet, waiting). Its start is the work tree as the turn before
left it (the session's `before` for turn 1): a snapshot at the submission
itself would run while the agent already writes (it is off the key's path,
so it cannot come first), and would miss what the agent did at once. Edits
of the user between two turns therefore count as the next turn's, as edits
made while a session runs count as the session's. Each is a commit of the
project's store (history/store.py) under

    refs/sessions/<session>/turn-<N>-start, …/turn-<N>-stop

so `wrapagent undo` finds them while the session still runs (the record is
only written at its end). Snapshots are taken in a thread of their own:
the proxy's thread only puts a request in a queue, so no key and no byte of
the tool's output waits for git. At the end, `record_into` adds to each turn
of the record its two commits and the files the turn changed.

A `wrapagent undo`/`redo` run while the session runs is itself a checkpoint:
it points `refs/sessions/<session>/next-start` at the tree it left, and the
next turn starts there (taken and removed by this thread). Otherwise the turn
after an undo would count the undo as its own change, and the next undo would
put back what the first one removed.
"""

from __future__ import annotations

import queue
import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping

TURN_BUDGET_SECS = 30.0
"""A turn snapshot runs beside the tool, never in its way: a generous budget (the session one is 2 s)."""


NOTICE_NAME = "undo-notice.json"
"""In a running session's folder: what the last `wrapagent undo`/`redo` put back, for its next message."""


def leave_notice(session_dir: str, what: str, files: list[str]) -> None:
    """Written by `wrapagent undo`/`redo` (0600, by rename); read once by the session (`take_notice`)."""
    import json
    import os

    from wrapagent.history.store import write_private

    write_private(os.path.join(session_dir, NOTICE_NAME), json.dumps({"what": what, "files": files}).encode())


def take_notice(session_dir: str) -> tuple[str, list[str]] | None:
    """The notice (`undo`/`redo`, the files), removed as it is read; None when there is none."""
    import json
    import os

    path = os.path.join(session_dir, NOTICE_NAME)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            data = json.loads(f.read(1 << 20))
        os.unlink(path)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    files = [str(f) for f in data.get("files") or [] if isinstance(f, str)]
    return ("redo" if data.get("what") == "redo" else "undo"), files


def turn_ref(session_id: str, n: int, which: str) -> str:
    return f"refs/sessions/{session_id}/turn-{n}-{which}"


def next_start_ref(session_id: str) -> str:
    """Where `wrapagent undo`/`redo` leave the tree they made, for the running session's next turn."""
    return f"refs/sessions/{session_id}/next-start"


def take_next_start(repo, session_id: str) -> str | None:
    """The commit an undo/redo left for the next turn, its ref removed; None when there is none.

    The removal names the commit read, so an undo that lands in between is
    not lost: its ref stays for the turn after.
    """
    ref = next_start_ref(session_id)
    found = repo.run(["rev-parse", "--verify", "-q", ref + "^{commit}"], check=False)
    commit = found.text().strip() if found.ok else ""
    if not commit:
        return None
    gone = repo.run(["update-ref", "-d", ref, commit], check=False)
    return commit if gone.ok else None


class TurnCheckpoints:
    """Snapshots of turns, in order, in one background thread."""

    def __init__(self, project_root: str, session_id: str, env: Mapping[str, str] | None,
                 max_file_bytes: int | None, log: Callable[[str], None] = lambda m: None,
                 before: str | None = None) -> None:
        self.project_root = project_root
        self.session_id = session_id
        self.env = env
        self.max_file_bytes = max_file_bytes
        self.log = log
        self.taken: dict[int, dict[str, Any]] = {}
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._last: str | None = before  # the tree the next turn starts from
        self._thread = threading.Thread(target=self._work, name="wrapagent-turn-checkpoints", daemon=True)
        self._thread.start()

    # -- told on the proxy's thread: never blocks ------------------------------------

    def started(self, n: int) -> None:
        self._queue.put(("start", n))

    def stopped(self, n: int) -> None:
        self._queue.put(("stop", n))

    # -- the worker -----------------------------------------------------------------

    def _work(self) -> None:
        from wrapagent.history.checkpoints import CheckpointError, Repo

        repo = None
        while True:
            item = self._queue.get()
            if item is None:
                return
            which, n = item
            started = time.monotonic()
            try:
                if repo is None:
                    repo = Repo.find(self.project_root, self.env)
                    if repo is None:
                        raise CheckpointError("not a git repository any more")
                    repo.open_store()
                repo._config = None  # the user may change a setting between turns
                self._after_undo(repo, which == "start" or self.taken.get(n, {}).get("start") is None)
                if which == "start":
                    self._start(repo, n)
                    continue
                left_out: dict[str, int] = {}
                if self.taken.get(n, {}).get("start") is None and self._last:
                    self._start(repo, n)  # a stop with no submission seen (a stop check's continuation)
                commit = repo.snapshot(turn_ref(self.session_id, n, which),
                                       f"wrapagent session {self.session_id}: turn {n} {which}", self._last,
                                       started + TURN_BUDGET_SECS, self.max_file_bytes, left_out)
                self._last = commit
                entry = self.taken.setdefault(n, {})
                entry[which] = commit
                entry[f"{which}_ms"] = round((time.monotonic() - started) * 1000, 1)
                if left_out:
                    entry.setdefault("left_out", {}).update(left_out)
            except CheckpointError as exc:
                self.taken.setdefault(n, {})["note"] = f"turn {n} {which} snapshot: {exc}"
                self.log(f"turns: turn {n} {which} snapshot failed: {exc}")
            except Exception as exc:  # a bug here must not end the session
                self.log(f"turns: turn {n} {which} snapshot failed: {exc!r}")

    def _after_undo(self, repo, starts: bool) -> None:
        """An undo/redo since the last snapshot: the turn about to start starts from the tree it left.

        Seen at the stop of a turn already started (an undo while the turn
        ran), it is only dropped: the stop snapshot, taken after it, is newer.
        """
        commit = take_next_start(repo, self.session_id)
        if commit and starts:
            self._last = commit
            self.log(f"turns: the next turn starts from the undo/redo checkpoint {commit[:12]}")

    def _start(self, repo, n: int) -> None:
        """Turn `n` starts from the tree the turn before left: its ref names that commit."""
        if not self._last:
            return
        repo.store.write_ref(turn_ref(self.session_id, n, "start"), self._last)
        self.taken.setdefault(n, {})["start"] = self._last

    def close(self, timeout: float = TURN_BUDGET_SECS + 5.0) -> None:
        """Let the queued snapshots finish (at the session's end, before its `after` snapshot)."""
        self._queue.put(None)
        self._thread.join(timeout)

    def record_into(self, turns: list[dict[str, Any]]) -> None:
        """Each turn's checkpoints (`start`, `stop`) and the files it changed, into the record's turns."""
        from wrapagent.history.checkpoints import CheckpointError, Repo

        repo = None
        for turn in turns:
            taken = self.taken.get(int(turn.get("n", 0)))
            if not taken:
                continue
            turn["checkpoint"] = dict(taken)
            if taken.get("start") and taken.get("stop"):
                try:
                    if repo is None:
                        repo = Repo.find(self.project_root, self.env).open_store(create=False)
                    turn["files"] = [path for _, path in repo.changes(taken["start"], taken["stop"])][:200]
                except (CheckpointError, AttributeError):
                    pass


def turn_info(record: Mapping[str, Any], info: Mapping[str, Any], n: int,
              env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The session's checkpoints narrowed to turn `n`: its `start` as `before`, its `stop` as `after`.

    From the record's turns (an ended session), else from the store's refs
    (a running one: its record is written at its end). A CheckpointError
    says why there is no such turn.
    """
    from wrapagent.history.checkpoint_access import open_repo
    from wrapagent.history.checkpoints import CheckpointError

    taken: Mapping[str, Any] = {}
    for turn in record.get("turns") or []:
        if isinstance(turn, dict) and turn.get("n") == n and isinstance(turn.get("checkpoint"), dict):
            taken = turn["checkpoint"]
    start, stop = taken.get("start"), taken.get("stop")
    if not (start and stop) and info.get("store"):
        repo = open_repo(info, env)
        sid = record.get("id")
        listed = repo.run(["for-each-ref", "--format=%(refname) %(objectname)", f"refs/sessions/{sid}/"])
        refs = dict(line.split(" ", 1) for line in listed.text().splitlines() if " " in line)
        start, stop = refs.get(turn_ref(str(sid), n, "start")), refs.get(turn_ref(str(sid), n, "stop"))
    if not (start and stop):
        raise CheckpointError(f"turn {n} of this session has no checkpoints (no such turn, or it has not "
                              "ended yet)")
    narrowed = {k: v for k, v in info.items() if k not in ("undone_at", "left_out_before", "left_out_after")}
    narrowed.update(status="taken", before=start, after=stop, left_out_after=dict(taken.get("left_out") or {}))
    return narrowed
