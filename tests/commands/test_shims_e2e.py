"""Shims with the real wrapagent: odd PATHs never loop, nested agents get nested sessions."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from wrapagent.commands import shims

REAL = """#!/bin/sh
echo "REAL $1 depth=$WRAPAGENT_DEPTH session=$WRAPAGENT_SESSION_ID"
if [ "$1" = nest ]; then codex inner; fi
"""


@pytest.fixture
def layout(tmp_path: Path):
    folder, real = tmp_path / "shims", tmp_path / "real"
    real.mkdir()
    (real / "codex").write_text(REAL)
    (real / "codex").chmod(0o755)
    shims.install_shims(["codex"], shim_dir=folder)
    linked = tmp_path / "linked-shims"
    linked.symlink_to(folder)
    return folder, real, linked


@pytest.mark.parametrize("order", ["shims-first", "shims-last", "twice", "symlinked", "relative"])
def test_no_loop_whatever_the_path(layout, order, tmp_path) -> None:
    folder, real, linked = layout
    paths = {
        "shims-first": [folder, real],
        "shims-last": [real, folder],
        "twice": [folder, folder, real, folder],
        "symlinked": [linked, folder, real],
        "relative": ["shims", folder, real],
    }[order]
    env = {**os.environ, "PATH": os.pathsep.join(map(str, paths)) + os.pathsep + "/usr/bin:/bin"}
    proc = subprocess.run([str(linked / "codex"), "hello"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("REAL hello depth=1 session=")


def test_nested_agent_through_the_shim_is_wrapped_with_a_parent(layout, tmp_path) -> None:
    folder, real, _ = layout
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{real}{os.pathsep}/usr/bin:/bin"}
    proc = subprocess.run(["codex", "nest"], env=env, cwd=tmp_path, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == 0, proc.stderr
    outer, inner = proc.stdout.splitlines()
    assert outer.startswith("REAL nest depth=1 session=")
    assert inner.startswith("REAL inner depth=2 session=")
    outer_id, inner_id = outer.split("session=")[1], inner.split("session=")[1]
    state = Path(os.environ["XDG_STATE_HOME"])
    records = {r["id"]: r for r in (json.loads(p.read_text())
                                    for p in state.glob("wrapagent/projects/*/*/session.json"))}
    assert records[inner_id]["parent_session"] == outer_id
    assert records[outer_id]["parent_session"] is None


def test_shim_without_real_tool_is_one_line(layout, tmp_path) -> None:
    folder, _, _ = layout
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}/usr/bin:/bin"}
    proc = subprocess.run([str(folder / "codex")], env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == 127
    assert proc.stderr.count("\n") == 1 and "codex: command not found" in proc.stderr
