"""Files only the user can read, created where wrapagent keeps its state, never through a link.

A recording holds everything the tool showed (code, secrets it printed); the
search index holds every message. Both are created 0600 with
`O_EXCL | O_NOFOLLOW` (an existing file or a planted link fails the open
instead of being written through), in a folder made 0700 that must be a real
folder owned by the user.
"""

from __future__ import annotations

import os
import stat

CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def private_dir(path: str) -> str:
    """Make `path` (and its parents) as 0700 folders; OSError unless it is a real folder of ours."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise OSError(f"{path} is not a folder (a link?): not written through")
    if info.st_uid != os.getuid():
        raise OSError(f"{path} belongs to another user: not written into")
    if info.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def create_private(path: str) -> int:
    """A new file at `path`, 0600, opened for writing (fd); FileExistsError if anything is there."""
    return os.open(path, CREATE_FLAGS, 0o600)


def open_private_read(path: str) -> int:
    """Open a file of ours for reading, never through a link at its last component."""
    return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
