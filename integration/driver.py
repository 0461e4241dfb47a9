"""Drive a program in a pseudo-terminal like a person at a 120x40 xterm would.

    term = Terminal([sys.executable, "-m", "wrapagent", "codex", "--no-daemon"], env=env, cwd=cwd)
    term.wait_for(r"Ask Codex", timeout=60)       # regex on the rendered screen
    term.wait_quiet(0.3)
    term.type("hello")                            # one key at a time, 20-40 ms apart
    term.enter()                                  # its own write, >= 0.25 s after the last key
    term.paste("block\\ntext")                     # ESC[200~ ... ESC[201~ in one write
    term.resize(100, 30)                          # TIOCSWINSZ on the pty -> SIGWINCH
    status = term.quit([b"\\x03"])                 # the tool's quit keys, then EOF + exit status
    term.close()

The child runs under `pexpect.spawn` (its own session, controlling terminal =
the pty). A reader thread drains the pty all the time (so the child never blocks
on a full pty buffer while the test sleeps) and feeds every byte into a `pyte`
screen of the current size. Nothing is answered to terminal queries. Every byte
read is also appended to `raw_log` if given.

Failures raise `TerminalError` (an AssertionError) whose message holds the
rendered screen and the tail of the raw output.
"""

from __future__ import annotations

import os
import random
import re
import select
import signal
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

import pexpect
import pyte

PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"

# Sequences pyte 0.8 does not parse and would print as text: CSI with a `<` or `=`
# parameter prefix (kitty keyboard pop/query), and DCS/APC/PM/SOS strings (XTGETTCAP,
# kitty graphics). They never change what is on screen, so they are dropped before pyte.
_UNPARSED = re.compile(rb"\x1b\[[<=][0-9;:]*[ -/]*[@-~]|\x1b[P_^X][\s\S]*?(?:\x1b\\|\x07)")
# An incomplete one of those at the end of a read: held back until the next read.
_PARTIAL = re.compile(rb"(?:\x1b\[?|\x1b\[[<=][0-9;:]*[ -/]*|\x1b[P_^X](?:(?!\x1b\\|\x07)[\s\S])*)\Z")


class _Sanitizer:
    def __init__(self) -> None:
        self.pending = b""

    def __call__(self, data: bytes) -> bytes:
        data = self.pending + data
        self.pending = b""
        m = _PARTIAL.search(data)
        if m and len(data) - m.start() < 65536:
            # a lone ESC / ESC[ might start anything: hold it only while it could be ours
            self.pending = data[m.start():]
            data = data[: m.start()]
        return _UNPARSED.sub(b"", data)


class TerminalError(AssertionError):
    pass


class Terminal:
    def __init__(
        self,
        argv: Sequence[str],
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        cols: int = 120,
        rows: int = 40,
        raw_log: str | Path | None = None,
        seed: int = 0,
    ):
        self.argv = list(argv)
        self.cols, self.rows = cols, rows
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self._sanitize = _Sanitizer()
        self.raw = bytearray()
        self.raw_log = Path(raw_log) if raw_log else None
        self._log_fh = open(self.raw_log, "wb") if self.raw_log else None
        self.eof = False
        self.started = time.monotonic()
        self.last_output = self.started
        self.last_input = 0.0
        self._rand = random.Random(seed)
        self.exitstatus: int | None = None
        self.signalstatus: int | None = None
        self.child = pexpect.spawn(
            self.argv[0], self.argv[1:], env=env, cwd=cwd, dimensions=(rows, cols), encoding=None, echo=False
        )
        # no sleeps in close()/terminate(): we wait for EOF and poll the exit status ourselves
        self.child.delayafterclose = 0
        self.child.delayafterterminate = 0
        self.child.ptyproc.delayafterclose = 0
        self.child.ptyproc.delayafterterminate = 0
        self.pid = self.child.pid
        self._fd = self.child.child_fd
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read_loop, name=f"pty-reader-{self.pid}", daemon=True)
        self._reader.start()

    # output ------------------------------------------------------------------------------
    def _read_loop(self) -> None:
        fd = self._fd
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([fd], [], [], 0.05)
            except (OSError, ValueError):
                break
            if not ready:
                continue
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the slave side is closed (child and its children gone)
                data = b""
            with self._lock:
                if not data:
                    self.eof = True
                    self._changed.notify_all()
                    break
                self.raw += data
                if self._log_fh:
                    self._log_fh.write(data)
                    self._log_fh.flush()
                try:
                    self.stream.feed(self._sanitize(data))
                except Exception as exc:  # pyte must never kill the reader
                    self.raw += f"\n[driver: pyte failed: {exc!r}]\n".encode()
                self.last_output = time.monotonic()
                self._changed.notify_all()

    def screen_text(self) -> str:
        """The rendered screen, one line per row, trailing blanks stripped."""
        with self._lock:
            return "\n".join(line.rstrip() for line in self.screen.display).rstrip("\n")

    def screen_lines(self) -> list[str]:
        with self._lock:
            return [line.rstrip() for line in self.screen.display]

    def output_bytes(self, since: int = 0) -> bytes:
        with self._lock:
            return bytes(self.raw[since:])

    @property
    def output_len(self) -> int:
        with self._lock:
            return len(self.raw)

    def dump(self, title: str = "") -> str:
        with self._lock:
            tail = bytes(self.raw[-1500:])
            elapsed = time.monotonic() - self.started
            state = "EOF" if self.eof else "running"
            lines = self.screen.display
            cursor = (self.screen.cursor.y, self.screen.cursor.x)
        body = "\n".join(f"{i:2d}|{line.rstrip()}" for i, line in enumerate(lines))
        return (
            f"{title}\n--- command: {self.argv}\n--- {state} after {elapsed:.1f} s, {len(self.raw)} bytes read, "
            f"screen {self.cols}x{self.rows}, cursor {cursor}, exit={self.exitstatus} signal={self.signalstatus}\n"
            f"--- screen:\n{body}\n--- last raw bytes:\n{tail!r}\n"
        )

    def _match(self, pattern: str | re.Pattern, text: str):
        if isinstance(pattern, re.Pattern):
            return pattern.search(text)
        return pattern if pattern in text else None

    def wait_for(self, pattern: str | re.Pattern, timeout: float = 30.0, raw: bool = False, since: int = 0):
        """Wait until the screen (or, with raw=True, the raw output after offset `since`) matches.

        A str is a substring, a compiled regex is searched. Returns the match (or the str).
        Raises TerminalError with the screen dumped on timeout or if the child hits EOF first.
        """
        def found():
            text = bytes(self.raw[since:]).decode("utf-8", "replace") if raw else self.screen_text()
            return self._match(pattern, text)

        return self._wait(found, f"{pattern!r}", timeout)

    def wait_until(self, predicate: Callable[[list[str]], bool], what: str, timeout: float = 30.0) -> None:
        """Wait until `predicate(screen lines)` is true; `what` names it in the error on timeout or EOF."""
        self._wait(lambda: predicate([line.rstrip() for line in self.screen.display]), what, timeout)

    def _wait(self, found: Callable[[], object], what: str, timeout: float):
        """Wait, the lock held between looks, until `found()` is truthy; returns it."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                result = found()
                if result:
                    return result
                if self.eof:
                    self._poll_exit(0.5)
                    raise TerminalError(self.dump(f"EOF before {what} appeared"))
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TerminalError(self.dump(f"timed out after {timeout:.0f} s waiting for {what}"))
                self._changed.wait(min(remaining, 0.2))

    def wait_gone(self, pattern: str | re.Pattern, timeout: float = 30.0) -> None:
        """Wait until the screen no longer matches `pattern`."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._match(pattern, self.screen_text()):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TerminalError(self.dump(f"timed out after {timeout:.0f} s waiting for {pattern!r} to go"))
                self._changed.wait(min(remaining, 0.2))

    def wait_quiet(self, quiet: float = 0.3, timeout: float = 10.0) -> bool:
        """Wait until no output arrived for `quiet` seconds. Returns False on timeout (never raises)."""
        deadline = time.monotonic() + timeout
        while True:
            now = time.monotonic()
            with self._lock:
                if self.eof or now - self.last_output >= quiet:
                    return True
            if now >= deadline:
                return False
            time.sleep(0.02)

    def wait_output(self, since: int, timeout: float = 10.0, min_bytes: int = 1) -> bytes:
        """Wait until at least `min_bytes` arrived after offset `since`; returns them."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self.raw) - since < min_bytes:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.eof:
                    raise TerminalError(self.dump(f"no output after offset {since} within {timeout:.0f} s"))
                self._changed.wait(min(remaining, 0.2))
            return bytes(self.raw[since:])

    # input -------------------------------------------------------------------------------
    def write(self, data: bytes | str) -> None:
        """One write to the pty, like one read() a terminal would deliver."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        self.last_input = time.monotonic()

    def type(self, text: str, gap: tuple[float, float] = (0.02, 0.04)) -> None:
        """Type `text` one key (character) per write, 20-40 ms apart. `\\n` is sent as a key too."""
        for i, ch in enumerate(text):
            if i:
                time.sleep(self._rand.uniform(*gap))
            self.write(ch.encode("utf-8"))

    def enter(self, after: float = 0.25) -> None:
        """Press Enter (`\\r`) as its own write, at least `after` seconds after the last input."""
        wait = self.last_input + after - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self.write(b"\r")

    def paste(self, text: str, after: float = 0.0) -> None:
        """A bracketed paste, as a terminal delivers it: one write ESC[200~ text ESC[201~.

        `after`: at least this many seconds after the previous input.
        """
        self.key(PASTE_START + text.encode("utf-8") + PASTE_END, after=after)

    def key(self, data: bytes, after: float = 0.0) -> None:
        wait = self.last_input + after - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self.write(data)

    def resize(self, cols: int, rows: int, blank: bool = False) -> int:
        """Change the window size: re-shape the pyte screen, then TIOCSWINSZ (-> SIGWINCH).

        With blank=True the rendered screen is erased first, so whatever shows afterwards
        was drawn by the program after the resize (a real terminal would keep the old
        content; this is for tests that must prove a redraw). Returns the output offset
        at the moment of the resize (for wait_output / wait_for(raw=True, since=…)).
        """
        with self._lock:
            self.cols, self.rows = cols, rows
            if blank:
                self.screen.erase_in_display(2)
            self.screen.resize(rows, cols)
            offset = len(self.raw)
        self.child.setwinsize(rows, cols)
        return offset

    # exit --------------------------------------------------------------------------------
    def _poll_exit(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            try:
                alive = self.child.isalive()
            except pexpect.ExceptionPexpect:
                alive = False
            if not alive:
                self.exitstatus = self.child.exitstatus
                self.signalstatus = self.child.signalstatus
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    def wait_exit(self, timeout: float = 30.0) -> int:
        """Wait for EOF on the pty and the child's exit; returns the exit status (-signal if killed)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not self.eof:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._changed.wait(min(remaining, 0.2))
        if not self._poll_exit(max(deadline - time.monotonic(), 0.5)):
            raise TerminalError(self.dump(f"did not exit within {timeout:.0f} s"))
        return self.status

    @property
    def status(self) -> int | None:
        if self.exitstatus is not None:
            return self.exitstatus
        if self.signalstatus is not None:
            return -self.signalstatus
        return None

    def quit(self, keys: Sequence[bytes], gap: float = 0.3, timeout: float = 30.0, after: float = 0.3) -> int:
        """Send the tool's quit keys (each its own write, `gap` s apart), wait for exit, return the status."""
        for i, k in enumerate(keys):
            self.key(k, after=after if i == 0 else gap)
        return self.wait_exit(timeout)

    def close(self) -> None:
        """Make sure the child is gone: SIGTERM its process group, then SIGKILL after 5 s. Idempotent."""
        if not self._poll_exit(0):
            for sig, wait in ((signal.SIGHUP, 2.0), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(self.pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
                if self._poll_exit(wait):
                    break
        self._stop.set()
        self._reader.join(timeout=2)
        try:
            self.child.close(force=True)
        except Exception:
            pass
        if self._log_fh:
            self._log_fh.close()
            self._log_fh = None

    def __enter__(self) -> "Terminal":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
