"""The channel `wrapagent send` talks to: a Unix socket in the session's folder, mode 0600.

Local to the user by construction: a socket file in a folder of theirs, that
only its owner may connect to (no network port). An agent inside the session
runs as the same user, so it can send to its own session too. One request per
connection, one JSON line: `{"text": "...", "guard": null | "NAME", "wait": bool}`;
the answer is `{"queued": N}` at once and, with `wait`, later one line
`{"delivered_at": "..."}` or `{"error": "why"}`. The socket is removed when the
session ends, and every sender still waiting hears "the session ended".

Socket paths are limited to ~104 bytes; a session folder can be deeper. Both
ends then reach the folder through a symlink in a fresh private temporary
folder (`short_path`).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterator

    from wrapagent.session.live import Live
    from wrapagent.session.stop_gate import StopGate

SOCKET_NAME = "send.sock"
MAX_REQUEST_BYTES = 1024 * 1024
SHORT_ENOUGH = 100


@contextlib.contextmanager
def short_path(path: str) -> Iterator[str]:
    """`path`, or the same file through a short symlink to its folder when `path` is too long."""
    if len(os.fsencode(path)) < SHORT_ENOUGH:
        yield path
        return
    import shutil
    import tempfile

    tmp = tempfile.mkdtemp(prefix="wa-")  # 0700, ours
    try:
        link = os.path.join(tmp, "d")
        os.symlink(os.path.dirname(path), link)
        yield os.path.join(link, os.path.basename(path))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def guard_wrap(name: str, text: str) -> str:
    """`--guard NAME`: the text as a block, the way guards' blocks are written."""
    from wrapagent.inject.blocks import escape_attr, neutralize_tags

    return f'<prompt-guard name="{escape_attr(name)}">\n{neutralize_tags(text.strip())}\n</prompt-guard>'


class SendServer:
    """Accepts `wrapagent send` requests for one session and hands them to the stop gate."""

    def __init__(self, live: Live, gate: StopGate) -> None:
        self.live = live
        self.gate = gate
        self.path = os.path.join(str(live.record.dir), SOCKET_NAME)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        with short_path(self.path) as where:
            self._sock.bind(where)
        os.chmod(self.path, 0o600)
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
                with contextlib.suppress(OSError):
                    conn.close()

    def _handle(self, conn: socket.socket) -> None:
        import json
        import time

        from wrapagent.session.records import now_iso
        from wrapagent.session.stop_gate import Send

        conn.settimeout(5.0)
        data = b""
        while not data.endswith(b"\n") and len(data) <= MAX_REQUEST_BYTES:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        request = json.loads(data.decode("utf-8"))
        text = request.get("text")
        if not isinstance(text, str) or not text.strip():
            _answer(conn, {"error": "nothing to send (empty text)"})
            conn.close()
            return
        guard = request.get("guard")
        if guard:
            text = guard_wrap(str(guard), text)
        wait = bool(request.get("wait"))
        with self._lock:
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
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            os.write(self._stop_w, b"x")
        self._thread.join(timeout=5.0)
        with contextlib.suppress(OSError):
            self._sock.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
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
