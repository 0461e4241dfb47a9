"""`sessions resume` and `wrapagent demo` start wrapagent's own code, never the current folder's.

Before: resume entered the session's folder and ran `python -m wrapagent`, and the
demo ran `python -m wrapagent.commands.demo_agent`: a cloned repository shipping
`wrapagent/__main__.py` (or `wrapagent/commands/demo_agent.py`) ran its own code.
Here that code writes a marker file; it must never appear.

The first process is started without the current folder on `sys.path` (as the
installed `wrapagent` script is), so only the processes wrapagent starts are tested.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import wrapagent
from checkpoint_world import isolated_env, save_record, session_id

PACKAGE_PARENT = str(Path(wrapagent.__file__).resolve().parent.parent)
FIRST = ("import sys; sys.path.insert(0, sys.argv.pop(1)); from wrapagent.__main__ import main; "
         "sys.exit(main())")


def wrapagent_from(cwd: Path, env: dict[str, str], *args: str, input: bytes | None = None):
    return subprocess.run([sys.executable, "-I", "-c", FIRST, PACKAGE_PARENT, *args], cwd=cwd, env=env,
                          input=input, stdin=None if input is not None else subprocess.DEVNULL,
                          capture_output=True, timeout=60)


def hostile_checkout(folder: Path, marker: Path, *modules: str) -> None:
    """A cloned repository whose `wrapagent` package writes `marker` when any of `modules` runs."""
    payload = f"open({str(marker)!r}, 'w').write('the repository ran its own code')\n"
    for module in modules:
        parts = module.split(".")
        for depth in range(1, len(parts)):
            init = folder.joinpath(*parts[:depth], "__init__.py")
            init.parent.mkdir(parents=True, exist_ok=True)
            init.touch()
        target = folder.joinpath(*parts[:-1], f"{parts[-1]}.py") if parts[-1] != "__main__" \
            else folder.joinpath(*parts[:-1], "__main__.py")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(payload)
    (folder / "wrapagent.py").write_text(payload)


def test_resume_in_a_folder_shipping_wrapagent_runs_wrapagents_own_code(tmp_path: Path) -> None:
    env = isolated_env(tmp_path / "iso")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    codex = bin_dir / "codex"
    codex.write_text('#!/bin/sh\necho "codex args: $*"\n')
    codex.chmod(0o755)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    repo = tmp_path / "cloned"
    marker = tmp_path / "MARKER"
    hostile_checkout(repo, marker, "wrapagent.__main__")
    record = {"id": session_id(), "tool": "codex", "transport": "codex", "cwd": str(repo.resolve()),
              "project_root": str(repo.resolve()), "native_session_id": "NATIVE-7", "state": "finished",
              "depth": 0, "parent_session": None}
    save_record(record, env)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = wrapagent_from(elsewhere, env, "sessions", "resume", record["id"])
    assert not marker.exists(), "resume ran the repository's wrapagent/__main__.py"
    assert proc.returncode == 0, proc.stderr
    assert b"codex args: resume NATIVE-7" in proc.stdout


def test_demo_in_a_folder_shipping_wrapagent_runs_the_real_demo_agent(tmp_path: Path) -> None:
    env = isolated_env(tmp_path / "iso")
    repo = tmp_path / "cloned"
    marker = tmp_path / "MARKER"
    hostile_checkout(repo, marker, "wrapagent.commands.demo_agent", "wrapagent.__main__")
    proc = wrapagent_from(repo, env, "demo", "-p", input=b"hello\n")
    assert not marker.exists(), "the demo ran the repository's wrapagent/commands/demo_agent.py"
    assert proc.returncode == 0, proc.stderr
    assert b"--- end of message 1 ---" in proc.stdout and b"reply: MOCK-REPLY-1" in proc.stdout


def test_a_shim_of_a_wrapagent_run_from_a_checkout_never_runs_the_current_folders_code(
        tmp_path: Path, monkeypatch) -> None:
    """`wrapagent shims install` from an interpreter with no `wrapagent` script (a checkout run
    without installing) wrote shims running `python -m wrapagent`: typed in a cloned repository
    shipping `wrapagent/__main__.py`, `codex` ran that repository's code."""
    from wrapagent.commands import shims

    env = isolated_env(tmp_path / "iso")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "mytool"
    tool.write_text('#!/bin/sh\necho "the real tool: $*"\n')
    tool.chmod(0o755)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: os.path.basename(path) != "wrapagent"
                        and real_access(path, mode, **kw))
    report = shims.install_shims(["mytool"], shim_dir=tmp_path / "shims", env=env)
    monkeypatch.undo()
    assert report.created == ["mytool"]
    env["PATH"] = os.pathsep.join([str(tmp_path / "shims"), str(bin_dir), env["PATH"]])
    repo = tmp_path / "cloned"
    marker = tmp_path / "MARKER"
    hostile_checkout(repo, marker, "wrapagent.__main__")
    proc = subprocess.run(["mytool", "hello"], cwd=repo, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=60)
    assert not marker.exists(), "the shim ran the repository's wrapagent/__main__.py"
    assert proc.returncode == 0, proc.stderr
    assert b"the real tool: hello" in proc.stdout
