"""Reading one config file: a regular file only, at most `MAX_CONFIG_BYTES`, in one pass.

A config file is read before the tool starts, so whatever sits at its path
must not be able to stop, stall or starve the start: a committed symlink
`.wrapagent/hooks.toml -> /dev/zero` would otherwise eat memory until
killed, `-> /dev/stdin` would swallow the prompt piped to the tool, and
`-> /dev/tty` or a FIFO would block. So the file is opened with
`O_NONBLOCK` (a FIFO or a terminal cannot block the open), checked with
`fstat` on that descriptor (only a regular file is read; no race between
the check and the read), bounded in size, and read once: the caller checks
trust on exactly the bytes it then parses.

The project layer never follows a link: `.wrapagent` and `hooks.toml` are
opened with `O_NOFOLLOW` (`hooks.toml` relative to the opened folder), so
trust given to one project's file cannot be borrowed by another through
`.wrapagent -> ../good/.wrapagent` (see `wrapagent.hooks.trust`). A global
file may be a link (dotfile managers link `~/.config` files; it is the
user's own choice): it is followed, and what it reaches must still be a
regular file within the size limit.

Every function returns `(exists, data, error)`: a missing file is
`(False, None, None)` after one failed open, as before; a file that exists
but is not used is `(True, None, "why, one line")`.
"""

from __future__ import annotations

import errno
import os

MAX_CONFIG_BYTES = 1024 * 1024
PROJECT_DIR, PROJECT_FILE = ".wrapagent", "hooks.toml"

_BASE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


def _kind(mode: int) -> str:
    import stat

    for test, name in ((stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _link_refusal(what: str, target: str | None) -> str:
    to = f" (to {target!r})" if target is not None else ""
    return (f"{what} is a symbolic link{to}: wrapagent never follows a link in a project's "
            f".wrapagent (it could borrow another project's trust); make it a real {'folder' if what == PROJECT_DIR else 'file'}")


def _readlink(name: str, dir_fd: int | None) -> str | None:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except (OSError, ValueError):
        return None


def read_fd(fd: int, limit: int = MAX_CONFIG_BYTES) -> tuple[bytes | None, str | None]:
    """(data, None), or (None, why) when `fd` is not a regular file of at most `limit` bytes."""
    st = os.fstat(fd)
    import stat

    if stat.S_ISDIR(st.st_mode):
        return None, "is a directory, not a file"
    if not stat.S_ISREG(st.st_mode):
        return None, f"is {_kind(st.st_mode)}, not a regular file; not read"
    too_big = f"is larger than {limit // 1024 // 1024} MiB ({limit} bytes), the most wrapagent reads of a config file; not read"
    if st.st_size > limit:
        return None, too_big
    os.set_blocking(fd, True)
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = os.read(fd, limit + 1 - total)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > limit:  # it grew after the fstat
        return None, too_big
    return b"".join(chunks), None


def _open_and_read(name: str, *, follow: bool, dir_fd: int | None = None,
                   limit: int = MAX_CONFIG_BYTES) -> tuple[bool, bytes | None, str | None]:
    flags = _BASE_FLAGS | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return False, None, None
    except OSError as exc:
        if not follow and exc.errno == errno.ELOOP:  # O_NOFOLLOW met a link
            return True, None, _link_refusal(PROJECT_FILE, _readlink(name, dir_fd))
        return True, None, f"cannot read: {exc.strerror or exc}"
    try:
        data, error = read_fd(fd, limit)
    except OSError as exc:
        return True, None, f"cannot read: {exc.strerror or exc}"
    finally:
        os.close(fd)
    return True, data, error


def read_config_file(path: str, *, limit: int = MAX_CONFIG_BYTES) -> tuple[bool, bytes | None, str | None]:
    """A global config file: a link is followed; what it reaches must be a regular file."""
    return _open_and_read(path, follow=True, limit=limit)


def read_project_hooks(project_root: str, *, limit: int = MAX_CONFIG_BYTES) -> tuple[bool, bytes | None, str | None]:
    """`<project_root>/.wrapagent/hooks.toml`, neither part a link (`project_root` itself may be one)."""
    folder = os.path.join(project_root, PROJECT_DIR)
    flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        dir_fd = os.open(folder, flags)
    except FileNotFoundError:
        return False, None, None
    except NotADirectoryError:
        target = _readlink(folder, None)  # some systems say ENOTDIR for a link under O_DIRECTORY
        if target is not None:
            return True, None, _link_refusal(PROJECT_DIR, target)
        return False, None, None  # `.wrapagent` is a plain file: no hooks file, as before
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return True, None, _link_refusal(PROJECT_DIR, _readlink(folder, None))
        return True, None, f"cannot read {PROJECT_DIR}: {exc.strerror or exc}"
    try:
        return _open_and_read(PROJECT_FILE, follow=False, dir_fd=dir_fd, limit=limit)
    finally:
        os.close(dir_fd)


def project_root_of_hooks_file(file: str) -> str | None:
    """`X` for `X/.wrapagent/hooks.toml` (lexically, made absolute), else None."""
    file = os.path.abspath(file)
    folder, name = os.path.split(file)
    root, dot = os.path.split(folder)
    return root if (name, dot) == (PROJECT_FILE, PROJECT_DIR) else None
