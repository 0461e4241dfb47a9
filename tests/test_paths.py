"""paths: XDG folders and the per-project sessions root."""

from __future__ import annotations

import hashlib
from pathlib import Path

from wrapagent import paths


def test_sessions_root_name_is_project_name_and_sha256_prefix(tmp_path):
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    project = Path("/srv/some project")
    digest = hashlib.sha256(b"/srv/some project").hexdigest()[:8]
    assert paths.sessions_root(project, env) == tmp_path / "state/wrapagent/projects" / f"some project-{digest}"


def test_builtin_sha256_agrees_with_hashlib():
    for data in (b"", b"/", "/home/é/projet".encode(), bytes(range(256)) * 3):
        assert paths._sha256_hex(data) == hashlib.sha256(data).hexdigest()


def test_sessions_root_override(tmp_path):
    env = {"WRAPAGENT_SESSIONS_ROOT": str(tmp_path / "x")}
    assert paths.sessions_root(Path("/p"), env) == tmp_path / "x"
