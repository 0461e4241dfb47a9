"""The channel `wrapagent send` talks to: a Unix socket in the session's folder, mode 0600.

Local to the user by construction: a socket file in a folder of theirs that
only its owner may connect to, and no network port (the product's rule). It
is bound inside a fresh 0700 folder, made 0600 there and only then renamed
into place, so it is never reachable with the umask's wider mode, not even
for an instant. An agent inside the session runs as the same user, so it can
send to its own session too. The socket is removed when the session ends
(git ignores sockets, so a crashed session's stale one is never committed),
and every sender still waiting hears "the session ended".

One request per connection, one JSON line: `{"text": "...", "guard": null |
"NAME", "wait": bool}`; the answer is `{"queued": N}` at once and, with
`wait`, later one line `{"delivered_at": "..."}` or `{"error": "why"}`. When
and how a message goes in is the stop gate's (`StopGate.enqueue`).

Socket paths are limited to ~104 bytes; a session folder can be deeper. Both
ends then reach the folder through a symlink in a fresh private temporary
folder (`short_path`).
"""

from __future__ import annotations

import contextlib
import os
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from typing import Iterator

    from wrapagent.session.live import Live
    from wrapagent.session.stop_gate import StopGate

SOCKET_NAME = "send.sock"
MAX_REQUEST_BYTES = 1024 * 1024
"""A message is typed into a composer: far more than anyone sends, small enough to hold."""
SHORT_ENOUGH = 100
READ_TIMEOUT_SECS = 5.0
"""A client that connects and says nothing is dropped after this (it never blocks the others)."""


@contextlib.contextmanager
def short_path(path: str) -> Iterator[str]:
    """`path`, or the same file through a short symlink to its folder when `path` is too long."""
    if len(os.fsencode(path)) < SHORT_ENOUGH:
        yield path
        return
    import shutil
    import tempfile

    # 0700, ours; under /tmp when $TMPDIR is itself long (macOS's is ~50 bytes, a test's more)
    base = tempfile.gettempdir()
    tmp = tempfile.mkdtemp(prefix="wa-", dir=base if len(os.fsencode(base)) <= 60 else "/tmp")
    try:
        link = os.path.join(tmp, "d")
        os.symlink(os.path.dirname(path), link)
        yield os.path.join(link, os.path.basename(path))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def clean_text(text: str) -> str:
    """The text as the model gets it: escape sequences and control characters go (an `ESC[201~`
    would end the paste, a `\\r` would submit half of it); newlines and tabs stay."""
    from wrapagent.inject.blocks import strip_terminal_controls

    return strip_terminal_controls(text)


def guard_wrap(name: str, text: str) -> str:
    """`--guard NAME`: the text as a block, the way guards' blocks are written (invisible
    characters dropped first, as from guard bodies: `<\u200b/prompt-guard>` reads as a close)."""
    from wrapagent.inject.blocks import drop_invisible, escape_attr, neutralize_tags

    return f'<prompt-guard name="{escape_attr(name)}">\n{neutralize_tags(drop_invisible(text).strip())}\n</prompt-guard>'


def bind_private(path: str) -> socket.socket:
    """A socket bound at `path`, mode 0600 from the first moment anyone could reach it.

    bind() gives the socket file the umask's mode, so it is bound inside a
    fresh 0700 folder beside `path`, chmod'ed there, then renamed into place.
    """
    import socket

    # Not tempfile (its imports would land on the tool's start): the session's
    # folder is its own, one name is enough. mkdir's mode is at most 0700 (the
    # umask only takes bits away); chmod makes sure the owner may use it.
    private = os.path.join(os.path.dirname(path), f".send-{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(private, "s"))
    with contextlib.suppress(FileNotFoundError, OSError):
        os.rmdir(private)
    os.mkdir(private, 0o700)
    os.chmod(private, 0o700)
    inner = os.path.join(private, "s")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with short_path(inner) as where:
            sock.bind(where)
        os.chmod(inner, 0o600)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a stale socket of a crashed session with the same id: never expected
        os.rename(inner, path)
    except BaseException:
        sock.close()
        with contextlib.suppress(OSError):
            os.unlink(inner)
        raise
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(private)
    return sock


def connect(path: str, timeout: float | None = None) -> socket.socket:
    """The client's side: a connection to a session's socket (OSError when there is none)."""
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        with short_path(path) as where:
            sock.connect(where)
    except BaseException:
        sock.close()
        raise
    return sock


class SendServer:
    """Accepts `wrapagent send` requests for one session and hands them to the stop gate."""

    def __init__(self, live: Live, gate: StopGate) -> None:
        self.live = live
        self.gate = gate
        self.path = os.path.join(str(live.record.dir), SOCKET_NAME)
        self._sock = bind_private(self.path)
        self._sock.listen(8)
        self._stop_r, self._stop_w = os.pipe()
        self._lock = threading.Lock()
        self._waiting: list[socket.socket] = []
        self._closed = False
        self._count = 0
        live.record.log(f"send: taking messages on {self.path}")
        self._thread = threading.Thread(target=self._serve, name="wrapagent-send", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        import select

        while True:
            readable, _, _ = select.select([self._sock, self._stop_r], [], [])
            if self._stop_r in readable:
                return
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            try:
                self._handle(conn)
            except Exception as exc:  # a bad request never ends the session
                self.live.record.log(f"send: request failed: {exc!r}")
                _answer(conn, {"error": f"bad request: {exc}"})
                with contextlib.suppress(OSError):
                    conn.close()

    def _handle(self, conn: socket.socket) -> None:
        import json
        import time

        from wrapagent.history.records import now_iso
        from wrapagent.session.stop_gate import Send

        conn.settimeout(READ_TIMEOUT_SECS)
        data = b""
        while not data.endswith(b"\n"):
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
            if len(data) > MAX_REQUEST_BYTES:
                raise ValueError(f"more than {MAX_REQUEST_BYTES} bytes")
        request = json.loads(data.decode("utf-8"))
        if not isinstance(request, dict):
            raise ValueError("not a JSON object")
        text = request.get("text")
        text = clean_text(text) if isinstance(text, str) else ""
        if not text.strip():
            _answer(conn, {"error": "nothing to send (empty text)"})
            conn.close()
            return
        guard = request.get("guard")
        if guard:
            text = guard_wrap(str(guard), text)
        wait = bool(request.get("wait"))
        conn.settimeout(None)
        with self._lock:
            if self._closed:
                _answer(conn, {"error": "the session is ending"})
                conn.close()
                return
            self._count += 1
            number = self._count
            if wait:
                self._waiting.append(conn)
        entry = {"n": number, "at": now_iso(), "text": text, "status": "queued"}
        _answer(conn, {"queued": number})

        def reply(message: dict) -> None:
            if not wait:
                return
            with self._lock:
                if conn not in self._waiting:
                    return
                self._waiting.remove(conn)
            _answer(conn, message)
            with contextlib.suppress(OSError):
                conn.close()

        if not wait:
            conn.close()
        self.live.record.log(f"send: message {number} queued ({len(text)} chars)")
        self.gate.enqueue(Send(text, time.monotonic(), entry, reply))

    def close(self) -> None:
        """The session ends: no new messages; waiting senders hear why; the socket file goes."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        with contextlib.suppress(OSError):
            os.unlink(self.path)  # first: nobody new connects
        with contextlib.suppress(OSError):
            os.write(self._stop_w, b"x")
        self._thread.join(timeout=5.0)
        with contextlib.suppress(OSError):
            self._sock.close()
        self.gate.close()
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for conn in waiting:
            _answer(conn, {"error": "the session ended"})
            with contextlib.suppress(OSError):
                conn.close()
        for fd in (self._stop_r, self._stop_w):
            with contextlib.suppress(OSError):
                os.close(fd)


def _answer(conn: socket.socket, message: dict) -> None:
    import json

    with contextlib.suppress(OSError):
        conn.sendall(json.dumps(message).encode("utf-8") + b"\n")
