"""One config file read in one pass: a regular file only, bounded, and a project's never through a link.

(A hostile repository's `/dev/zero`, FIFO and terminal links are in
tests/security/test_config_read_bounded.py.)
"""

from __future__ import annotations

import os
from pathlib import Path

from wrapagent.hooks.config_read import (PROJECT_DIR, PROJECT_FILE, project_root_of_hooks_file, read_config_file,
                                         read_project_hooks)


def _project(root: Path, text: str = 'x = 1\n') -> Path:
    (root / PROJECT_DIR).mkdir(parents=True)
    (root / PROJECT_DIR / PROJECT_FILE).write_text(text)
    return root


def test_a_missing_file_is_no_file_and_no_error(tmp_path: Path) -> None:
    assert read_config_file(str(tmp_path / "hooks.toml")) == (False, None, None)
    assert read_project_hooks(str(tmp_path)) == (False, None, None)


def test_the_bytes_are_read_as_they_are(tmp_path: Path) -> None:
    (tmp_path / "hooks.toml").write_bytes(b'a = "\xc3\xa9"\n')
    assert read_config_file(str(tmp_path / "hooks.toml")) == (True, b'a = "\xc3\xa9"\n', None)
    assert read_project_hooks(str(_project(tmp_path / "p"))) == (True, b"x = 1\n", None)


def test_a_file_over_the_limit_is_refused_not_cut(tmp_path: Path) -> None:
    (tmp_path / "hooks.toml").write_text("#" * 100)
    exists, data, error = read_config_file(str(tmp_path / "hooks.toml"), limit=10)
    assert (exists, data) == (True, None) and error


def test_a_global_file_may_be_a_link_a_projects_may_not(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "hooks.toml"
    real.parent.mkdir()
    real.write_text("y = 2\n")
    (tmp_path / "linked.toml").symlink_to(real)
    assert read_config_file(str(tmp_path / "linked.toml")) == (True, b"y = 2\n", None)
    good = _project(tmp_path / "good")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / PROJECT_DIR).symlink_to(good / PROJECT_DIR)
    exists, data, error = read_project_hooks(str(tmp_path / "bad"))
    assert (exists, data) == (True, None) and "symbolic link" in error
    (tmp_path / "bad2" / PROJECT_DIR).mkdir(parents=True)
    os.symlink(good / PROJECT_DIR / PROJECT_FILE, tmp_path / "bad2" / PROJECT_DIR / PROJECT_FILE)
    exists, data, error = read_project_hooks(str(tmp_path / "bad2"))
    assert (exists, data) == (True, None) and "symbolic link" in error


def test_a_folder_in_place_of_the_file_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "hooks.toml").mkdir()
    exists, data, error = read_config_file(str(tmp_path / "hooks.toml"))
    assert (exists, data) == (True, None) and error


def test_the_project_of_a_hooks_file_is_found_from_its_path(tmp_path: Path) -> None:
    assert project_root_of_hooks_file(str(tmp_path / PROJECT_DIR / PROJECT_FILE)) == str(tmp_path)
    assert project_root_of_hooks_file(str(tmp_path / "hooks.toml")) is None
