"""The state's private files: 0600 in 0700 folders, never written or read through a link."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from wrapagent.history.private_files import create_private, open_private_read, private_dir


def test_a_new_folder_is_private_and_an_open_one_is_closed(tmp_path: Path) -> None:
    made = private_dir(str(tmp_path / "a" / "b"))
    assert stat.S_IMODE(os.stat(made).st_mode) == 0o700
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    private_dir(str(loose))
    assert stat.S_IMODE(loose.stat().st_mode) == 0o700


def test_a_link_in_place_of_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "state").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError, match="not a folder"):
        private_dir(str(tmp_path / "state"))


def test_a_new_file_is_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        fd = create_private(str(tmp_path / "rec.cast"))
    finally:
        os.umask(old)
    os.close(fd)
    assert stat.S_IMODE((tmp_path / "rec.cast").stat().st_mode) == 0o600


def test_an_existing_file_or_a_planted_link_is_not_written_through(tmp_path: Path) -> None:
    (tmp_path / "there").write_text("keep")
    with pytest.raises(FileExistsError):
        create_private(str(tmp_path / "there"))
    target = tmp_path / "victim"
    target.write_text("theirs")
    (tmp_path / "planted").symlink_to(target)
    with pytest.raises(FileExistsError):
        create_private(str(tmp_path / "planted"))
    assert target.read_text() == "theirs" and (tmp_path / "there").read_text() == "keep"


def test_reading_goes_through_no_link(tmp_path: Path) -> None:
    (tmp_path / "ours").write_text("data")
    fd = open_private_read(str(tmp_path / "ours"))
    try:
        assert os.read(fd, 10) == b"data"
    finally:
        os.close(fd)
    (tmp_path / "link").symlink_to(tmp_path / "ours")
    with pytest.raises(OSError):
        open_private_read(str(tmp_path / "link"))
