"""The user's terminal: raw mode that is always undone, and window sizes.

Restoring the terminal is the one thing a wrapper must never get wrong: the
settings are saved before anything else and put back in a `finally`, which
covers normal exit, child crash, wrapagent exceptions, and SIGTERM/SIGHUP
(those are turned into loop events by the proxy, so the `finally` runs).
"""

import os
import sys
import termios

_WINSIZE_BYTES = 8
"""struct winsize: four unsigned shorts (rows, cols, xpixel, ypixel), native byte order.

Packed by hand: `struct` is a shared library to load on every start (~0.5 ms)."""


def _pack(size: "tuple[int, int, int, int]") -> bytes:
    return b"".join(int(v).to_bytes(2, sys.byteorder) for v in size)


def _unpack(packed: bytes) -> "tuple[int, int, int, int]":
    rows, cols, xpix, ypix = (int.from_bytes(packed[i:i + 2], sys.byteorder) for i in (0, 2, 4, 6))
    return rows, cols, xpix, ypix


def get_winsize(fd: int) -> "tuple[int, int, int, int] | None":
    """(rows, cols, xpixels, ypixels) of the terminal on `fd`, or None if it is not one."""
    import fcntl  # not at module level: loaded once the copy loop runs, not before the tool starts

    try:
        packed = fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * _WINSIZE_BYTES)
    except OSError:
        return None
    return _unpack(packed)


def set_winsize(fd: int, size: "tuple[int, int, int, int]") -> None:
    """Set the size on a PTY master; the kernel then sends SIGWINCH to its foreground group."""
    import fcntl

    try:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, _pack(size))
    except OSError:
        pass


def copy_winsize(src_fd: int, dst_fd: int) -> None:
    size = get_winsize(src_fd)
    if size is not None and size[0] and size[1]:
        set_winsize(dst_fd, size)


def make_raw(attrs: list) -> list:
    """cfmakeraw(3), as `script(1)` does: every byte (Ctrl-C, Ctrl-Z, Ctrl-\\) reaches the child."""
    new = [list(a) if isinstance(a, list) else a for a in attrs]
    iflag, oflag, cflag, lflag = new[0], new[1], new[2], new[3]
    iflag &= ~(termios.IGNBRK | termios.BRKINT | termios.PARMRK | termios.ISTRIP
               | termios.INLCR | termios.IGNCR | termios.ICRNL | termios.IXON)
    oflag &= ~termios.OPOST
    lflag &= ~(termios.ECHO | termios.ECHONL | termios.ICANON | termios.ISIG | termios.IEXTEN)
    cflag &= ~(termios.CSIZE | termios.PARENB)
    cflag |= termios.CS8
    new[0], new[1], new[2], new[3] = iflag, oflag, cflag, lflag
    new[6][termios.VMIN] = 1
    new[6][termios.VTIME] = 0
    return new


class raw_mode:  # noqa: N801 - used as `with raw_mode(fd) as saved:`, like a function
    """Put the terminal on `fd` in raw mode for the duration; `as` gives the saved settings.

    TCSADRAIN (not TCSAFLUSH) on restore: flushing would throw away keys the
    user typed while the child was exiting. A class, not a
    `contextlib.contextmanager`: contextlib costs ~1-2 ms of every start-up.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.saved: list | None = None
        self.entered = False

    def __enter__(self) -> "list | None":
        if self.entered:  # entered early (`output_start`): the user's settings were saved then
            return self.saved
        self.entered = True
        try:
            saved = termios.tcgetattr(self.fd)
        except termios.error:
            return None  # not a terminal: nothing to set, nothing to restore
        try:
            termios.tcsetattr(self.fd, termios.TCSANOW, make_raw(saved))
        except termios.error as exc:
            if not exc.args or exc.args[0] != 4:  # EINTR
                raise
            # Started in the background (`wrapagent … &`): the kernel sent SIGTTOU, which the
            # proxy's job control handles: it stops, and takes the terminal raw once in the foreground.
        self.saved = saved
        return saved

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None:
            restore(self.fd, self.saved)


def restore(fd: int, saved: list) -> None:
    """Put the saved settings back, even if the terminal is going away."""
    try:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
    except (termios.error, OSError):
        pass


def is_tty(fd: int) -> bool:
    """Whether `fd` is a terminal; False for a closed fd too."""
    try:
        return os.isatty(fd)
    except OSError:
        return False
