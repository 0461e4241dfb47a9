"""The session's side of `wrapagent send`: a Unix socket that queues messages for the next stop.

Why a socket in the session's folder: it is local to the user (mode 0600,
bound in a private 0700 folder first and only then moved into place, so it
is never reachable with wider rights), it needs no network port (the
product's rule), and it disappears with the session (removed when the tool
has ended; git ignores sockets, so a crashed session's stale one is never
committed). Anyone who can connect is the user: an agent inside the session
can send to its own session too.

Delivery is the stop check's (`inject.outgoing`): a queued message is posted
to the `Outgoing` queue only when the agent may take input, i.e. where
waiting_for_input fires (after the stop check, if any, let the agent stop),
or at once when a message arrives while the agent already waits. One message
per stop: its submission starts a turn, the next message waits for that
turn's stop. The user's keys win: a key typed since the stop (or text in the
composer, or no empty composer on the screen) makes `Outgoing` cancel the
delivery, and the message goes back to the head of the queue for the next
stop.

Protocol (one JSON line each way): the client sends `{"text", "guard",
"wait"}`, the session answers `{"ok": true, "position": n}` (or
`{"ok": false, "error": ...}`); with `wait` the connection stays open until
`{"status": "delivered" | "not delivered", "at", "reason"}`.
"""

from __future__ import annotations

import json
import os
import threading
from collections import deque

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from typing import Any, Callable

    from wrapagent.inject.outgoing import Outgoing
    from wrapagent.session.live import Live
    from wrapagent.session.turns import TurnTracker

SOCKET_NAME = "send.sock"
MAX_TEXT_BYTES = 256 * 1024
"""A message is typed into a composer: far more than anyone sends, small enough to hold in memory."""
MAX_SENDS_RECORDED = 500
READ_TIMEOUT_SECS = 5.0
"""A client that connects and says nothing is dropped after this (it never blocks the others)."""
SUN_PATH_MAX = 100
"""sockaddr_un holds 104 (macOS) or 108 (Linux) bytes; longer paths are bound another way."""


def socket_path(session_dir: str | os.PathLike[str]) -> str:
    return os.path.join(os.fspath(session_dir), SOCKET_NAME)


def wrap_text(text: str, guard: str | None) -> str:
    """What the model receives: the text verbatim, or in one prompt-guard block (`--guard NAME`).

    Verbatim as text: escape sequences and control characters go (an `ESC[201~`
    would end the paste, a `\r` would submit half the message); `\n` and `\t` stay.
    """
    from wrapagent.inject.blocks import strip_terminal_controls

    text = strip_terminal_controls(text)
    if not guard:
        return text
    from wrapagent.inject.blocks import escape_attr, neutralize_tags

    return f'<prompt-guard name="{escape_attr(guard)}">\n{neutralize_tags(text)}\n</prompt-guard>'


class _Send:
    __slots__ = ("entry", "waiters")

    def __init__(self, entry: dict[str, Any]) -> None:
        self.entry = entry
        self.waiters: list[socket.socket] = []


class SendChannel:
    """Queues `wrapagent send` messages and hands them, one per stop, to the `Outgoing` queue."""

    def __init__(self, live: Live, outgoing: Outgoing, tracker: TurnTracker) -> None:
        self.live = live
        self.outgoing = outgoing
        self.tracker = tracker
        self.path = socket_path(live.record.dir)
        self.sent: list[dict[str, Any]] = []
        self.error: str | None = None
        self._pending: deque[_Send] = deque()
        self._posted: _Send | None = None
        self._stopped_turn: int | None = None
        self._since = 0.0
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._wake_r = self._wake_w = -1
        self._closed = False
        self._opener: threading.Thread | None = None

    # -- setting up (the session's start) -------------------------------------------

    def start(self) -> None:
        """`open` in a thread: the tool's start never waits for the socket (nor its import)."""
        self._opener = threading.Thread(target=self.open, name="wrapagent-send-open", daemon=True)
        self._opener.start()

    def open(self) -> bool:
        """Create the socket and its accepting thread; False (and `error`) when it cannot be."""
        try:
            self._listener = _bind_private(self.path)
            self._listener.listen(8)
            self._wake_r, self._wake_w = os.pipe()
        except OSError as exc:
            self.error = f"no send channel: {exc}"
            self.live.record.log(f"send: {self.error}")
            if self._listener is not None:
                self._listener.close()
                self._listener = None
            return False
        threading.Thread(target=self._accept_loop, name="wrapagent-send", daemon=True).start()
        self.live.record.log(f"send: listening on {self.path}")
        return True

    def wrap_stop(self, fire: Callable[[int], None] | None) -> Callable[[int], None]:
        """The callback for "the agent may take input" (where waiting_for_input fires), with ours first."""

        def stopped(turn: int) -> None:
            self.on_stop(turn)
            if fire is not None:
                fire(turn)

        return stopped

    # -- any thread ------------------------------------------------------------------

    def on_stop(self, turn: int) -> None:
        """The agent stopped after `turn` and may take input: deliver the oldest queued message."""
        with self._lock:
            self._stopped_turn = turn
            self._since = self.tracker.quiet_since
            self._post_next()

    def _post_next(self) -> None:
        """Under the lock: post the head of the queue when the agent waits and nothing is in flight."""
        if self._posted is not None or not self._pending or self._closed:
            return
        if self._stopped_turn is None or self._stopped_turn != self.tracker.turn:
            return  # working (a turn started since that stop), or no stop yet
        from wrapagent.inject.outgoing import Request

        send = self._pending.popleft()
        self._posted = send

        def done(status: str, reason: str, at: str | None) -> None:
            self._done(send, status, reason, at)

        self.outgoing.post(Request(send.entry["text"], self._since, done))

    def _queue(self, text: str, guard: str | None, conn: socket.socket, wait: bool) -> int:
        from wrapagent.session.records import now_iso

        entry: dict[str, Any] = {"at": now_iso(), "text": wrap_text(text, guard), "delivered_at": None}
        if guard:
            entry["guard"] = guard
        send = _Send(entry)
        if wait:
            send.waiters.append(conn)
        with self._lock:
            if self._closed:
                raise _Refused("the session is ending")
            if len(self.sent) < MAX_SENDS_RECORDED:
                self.sent.append(entry)
            self._pending.append(send)
            position = len(self._pending) + (self._posted is not None)
            _reply(conn, {"ok": True, "position": position})
            self._post_next()
        self.live.record.log(f"send: message queued ({len(entry['text'])} chars, position {position})")
        return position

    # -- the proxy's thread (Outgoing calls `done`) ------------------------------------

    def _done(self, send: _Send, status: str, reason: str, at: str | None) -> None:
        entry = send.entry
        with self._lock:
            self._posted = None
            if status == "cancelled":
                # The user's keys win: this stop is theirs; the message waits for the next one.
                entry["deferred"] = entry.get("deferred", 0) + 1
                self._stopped_turn = None
                self._pending.appendleft(send)
                self.live.record.log(f"send: deferred to the next stop: {reason}")
                return
            if status == "delivered":
                entry["delivered_at"] = at
                entry["turn"] = self.tracker.turn + 1  # the submission that follows this call
                self.tracker.next_by = "send"
                self._stopped_turn = None  # one message per stop
                self.live.record.log(f"send: delivered as turn {entry['turn']}")
            else:
                entry["not_delivered"] = "the session ended" if reason == "the tool ended" else reason
        _notify(send, status, entry.get("not_delivered", ""), at)

    # -- the end ---------------------------------------------------------------------

    def close(self) -> None:
        """The tool has ended: remove the socket, tell every waiting sender, stop the thread."""
        if self._opener is not None:
            self._opener.join(timeout=5.0)
        with self._lock:
            if self._closed:
                return
            self._closed = True
            left = list(self._pending)
            if self._posted is not None:
                left.insert(0, self._posted)
            self._pending.clear()
            self._posted = None
        if self._listener is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass
        for send in left:
            send.entry["not_delivered"] = "the session ended"
            _notify(send, "not delivered", "the session ended", None)
        if self._wake_w >= 0:
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass

    def record_into(self, record: dict[str, Any]) -> None:
        record["sent"] = self.sent

    # -- the accepting thread -----------------------------------------------------------

    def _accept_loop(self) -> None:
        import select

        listener = self._listener
        assert listener is not None
        try:
            while True:
                ready, _, _ = select.select([listener, self._wake_r], [], [])
                if self._wake_r in ready:
                    return
                try:
                    conn, _ = listener.accept()
                except OSError:
                    continue
                self._serve(conn)
        finally:
            listener.close()
            for fd in (self._wake_r, self._wake_w):
                try:
                    os.close(fd)
                except OSError:
                    pass

    def _serve(self, conn: socket.socket) -> None:
        """Read one request, answer it; keep the connection for a `wait` (closed by `_notify`)."""
        keep = False
        try:
            conn.settimeout(READ_TIMEOUT_SECS)
            request = _read_request(conn)
            text = request.get("text")
            guard = request.get("guard")
            if not isinstance(text, str) or not wrap_text(text, None).strip():
                raise _Refused("empty message")
            if guard is not None and not isinstance(guard, str):
                raise _Refused("bad guard name")
            wait = bool(request.get("wait"))
            conn.settimeout(None)
            self._queue(text, guard, conn, wait)
            keep = wait
        except _Refused as exc:
            _reply(conn, {"ok": False, "error": str(exc)})
        except (OSError, ValueError) as exc:
            _reply(conn, {"ok": False, "error": f"bad request: {exc}"})
        finally:
            if not keep:
                _close(conn)


class _Refused(Exception):
    pass


def _read_request(conn: socket.socket) -> dict[str, Any]:
    data = bytearray()
    while b"\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > 4 * MAX_TEXT_BYTES:
            raise _Refused("message too long")
    request = json.loads(bytes(data).split(b"\n", 1)[0].decode("utf-8"))
    if not isinstance(request, dict):
        raise ValueError("not a JSON object")
    text = request.get("text")
    if isinstance(text, str) and len(text.encode("utf-8", "replace")) > MAX_TEXT_BYTES:
        raise _Refused(f"message too long (more than {MAX_TEXT_BYTES} bytes)")
    return request


def _reply(conn: socket.socket, message: dict[str, Any]) -> None:
    try:
        conn.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        pass  # the sender went away: its message stays queued


def _close(conn: socket.socket) -> None:
    try:
        conn.close()
    except OSError:
        pass


def _notify(send: _Send, status: str, reason: str, at: str | None) -> None:
    waiters, send.waiters = send.waiters, []
    for conn in waiters:
        _reply(conn, {"status": status, "at": at, "reason": reason})
        _close(conn)


def _bind_private(path: str) -> socket.socket:
    """A listening-ready socket at `path`, mode 0600 from the first moment anyone could reach it.

    bind() gives the socket file the umask's mode, so it is bound inside a
    fresh 0700 folder, chmod'ed, and only then renamed into place. A session
    folder too deep for sockaddr_un is reached through /proc on Linux; on
    macOS the private folder goes to the (short) temporary folder instead,
    on the same volume as the home folder, so the rename still works.
    """
    import tempfile

    folder = os.path.dirname(path)
    fits = len(os.fsencode(os.path.join(folder, ".send-12345678", "s"))) < SUN_PATH_MAX
    bases = [folder] if fits or _has_proc() else [tempfile.gettempdir(), folder]
    error: OSError | None = None
    for base in bases:
        try:
            return _bind_via(base, path)
        except OSError as exc:
            error = exc
    assert error is not None
    raise error


def _has_proc() -> bool:
    return os.path.isdir("/proc/self/fd")


def _bind_via(base: str, path: str) -> socket.socket:
    import socket
    import tempfile

    private = tempfile.mkdtemp(prefix=".send-", dir=base)  # mode 0700
    inner = os.path.join(private, "s")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        _bind(sock, inner)
        os.chmod(inner, 0o600)
        try:
            os.unlink(path)  # a stale socket of a crashed session with the same id: never expected
        except FileNotFoundError:
            pass
        os.rename(inner, path)
    except BaseException:
        sock.close()
        try:
            os.unlink(inner)
        except OSError:
            pass
        raise
    finally:
        try:
            os.rmdir(private)
        except OSError:
            pass
    return sock


def _bind(sock: socket.socket, path: str) -> None:
    if len(os.fsencode(path)) < SUN_PATH_MAX:
        sock.bind(path)
        return
    if not _has_proc():
        raise OSError(f"socket path too long ({len(path)} bytes): {path}")
    # A deep state folder: on Linux the folder is reachable through a short /proc path.
    fd = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        sock.bind(f"/proc/self/fd/{fd}/{os.path.basename(path)}")
    finally:
        os.close(fd)


def connect(session_dir: str | os.PathLike[str], timeout: float | None = None) -> socket.socket:
    """The client's side: a connection to a session's socket (raises OSError when there is none)."""
    import socket

    path = socket_path(session_dir)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        if len(os.fsencode(path)) < SUN_PATH_MAX:
            sock.connect(path)
        else:  # the CLI is single-threaded: a relative path from the folder itself
            here = os.getcwd()
            os.chdir(os.fspath(session_dir))
            try:
                sock.connect(SOCKET_NAME)
            finally:
                os.chdir(here)
    except BaseException:
        sock.close()
        raise
    return sock
