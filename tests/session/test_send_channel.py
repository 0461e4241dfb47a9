"""The send channel's socket path: always short enough for AF_UNIX, whatever $TMPDIR is."""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

import pytest

from wrapagent.session.send_channel import SHORT_ENOUGH, short_path


def long_folder(root: Path, length: int) -> Path:
    folder = root
    while len(os.fsencode(str(folder))) < length:
        folder = folder / ("d" * 20)
    folder.mkdir(parents=True)
    return folder


def test_a_short_path_is_used_as_it_is(tmp_path: Path) -> None:
    path = "/tmp/wa.sock"
    with short_path(path) as usable:
        assert usable == path


@pytest.mark.parametrize("tmpdir_length", [0, 150])
def test_a_long_path_is_reached_through_a_short_link_and_the_link_goes(tmp_path: Path, monkeypatch,
                                                                       tmpdir_length: int) -> None:
    if tmpdir_length:  # a $TMPDIR that is itself too long (as in a deep test folder)
        monkeypatch.setenv("TMPDIR", str(long_folder(tmp_path / "tmp", tmpdir_length)))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read $TMPDIR
    folder = long_folder(tmp_path / "state", 160)
    path = str(folder / "send.sock")
    with short_path(path) as usable:
        assert len(os.fsencode(usable)) < SHORT_ENOUGH
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.bind(usable)  # the socket lands in the real folder, through the link
        finally:
            server.close()
        assert os.path.exists(path)
        link_folder = os.path.dirname(os.path.dirname(usable))
        assert (os.stat(link_folder).st_mode & 0o777) == 0o700
    assert not os.path.exists(link_folder)
