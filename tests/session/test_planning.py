"""The tool starts first when nothing of the session has to come before it.

Then the record, the sweep and the hook context are made while the tool
starts; the session must be exactly as complete as in the usual order.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from wrapagent.hooks.config_loader import load_config
from wrapagent.session.launch import RunOptions
from wrapagent.session.lifecycle import Session


def write_hooks(text: str) -> None:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def session_in(folder: Path, *, interactive: bool = True, env: dict | None = None) -> Session:
    env = dict(os.environ if env is None else env)
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        return Session(RunOptions(tool="sh", args=[]), env, dict(env), "/bin/sh", ["/bin/sh"], interactive)
    finally:
        os.chdir(cwd)


def goes_first(folder: Path, **kw) -> bool:
    session = session_in(folder, **kw)
    return session.tool_goes_first(load_config(str(folder), env=session.env))


def test_default_config_outside_git_starts_the_tool_first(tmp_path: Path) -> None:
    assert goes_first(tmp_path)


@pytest.mark.parametrize("hooks", [
    '[pre_run]\ncommand = "true"\n',
    '[waiting_for_input]\ncommand = "true"\n',
    '[[prompt_guard]]\nname = "status"\nbuiltin = "git_status"\n',
])
def test_what_must_come_before_the_tool_keeps_the_usual_order(tmp_path: Path, hooks: str) -> None:
    write_hooks(hooks)
    assert not goes_first(tmp_path)


def test_a_post_run_hook_does_not_hold_the_tool_back(tmp_path: Path) -> None:
    write_hooks('[post_run]\ncommand = "true"\n')
    assert goes_first(tmp_path)


def test_a_git_project_takes_its_before_checkpoint_first(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert not goes_first(tmp_path)
    write_hooks("[checkpoints]\nenabled = false\n")
    assert goes_first(tmp_path)


def test_pipe_mode_keeps_the_usual_order(tmp_path: Path) -> None:
    assert not goes_first(tmp_path, interactive=False)


def only_record() -> tuple[dict, Path]:
    (path,) = Path(os.environ["XDG_STATE_HOME"]).glob("wrapagent/projects/*/*/session.json")
    return json.loads(path.read_text()), path


def test_a_tool_first_session_is_complete(tmp_path: Path, run_wrapagent) -> None:
    """Record, exit code, resources, the tool's WRAPAGENT_SESSION_ID, the commit, the log."""
    script = tmp_path / "tool.sh"
    script.write_text('printf "%s" "$WRAPAGENT_SESSION_ID" > id.txt; echo tool-ran; sleep 0.3; exit 3\n')
    write_hooks(f'[post_run]\ncommand = "echo {{exit_code}} > {tmp_path}/post.txt"\n')
    child = run_wrapagent("sh", str(script), cwd=tmp_path)
    child.expect(b"tool-ran")
    assert child.finish() == 3
    record, path = only_record()
    assert record["state"] == "finished" and record["exit_code"] == 3
    assert (tmp_path / "id.txt").read_text() == record["id"] == path.parent.name
    assert record["started_at"] < record["ended_at"] and record["duration_s"] >= 0.3
    assert record["checkpoints"] == {"status": "skipped", "note": "not a git repository"}
    assert (tmp_path / "post.txt").read_text().strip() == "3"
    assert [h["name"] for h in record["hooks"]] == ["post_run", "session_complete"]
    root = path.parent.parent
    log = subprocess.run(["git", "-C", str(root), "log", "--format=%s"], capture_output=True,
                         text=True, check=True).stdout
    assert record["id"] in log
    assert not list((root / ".running").glob("*.lock"))


def test_a_tool_that_cannot_start_still_gets_its_record(tmp_path: Path, run_wrapagent) -> None:
    script = tmp_path / "tool"
    script.write_text("#!/nonexistent/interpreter\n")
    script.chmod(0o755)
    child = run_wrapagent(str(script), cwd=tmp_path)
    assert child.finish() == 127
    assert b"missing #! interpreter" in child.output
    record, _ = only_record()
    assert record["state"] == "finished" and record["exit_code"] == 127


# An unwritable state folder, in either order: tests/security/test_full_disk.py (the tool runs
# without a record and wrapagent says so once).


HEAVY_BEFORE_THE_TOOL = ("signal", "enum", "re", "json", "pathlib", "typing", "dataclasses", "subprocess",
                         "threading", "datetime", "functools", "collections", "struct", "select", "fcntl",
                         "__future__", "_queue", "wrapagent.errors", "wrapagent.portable", "wrapagent.history",
                         "wrapagent.inject.adapters", "wrapagent.history.records", "wrapagent.session.tool_version",
                         "wrapagent.session.starting", "wrapagent.hooks.config_loader", "wrapagent.hooks.config_model",
                         "wrapagent.hooks.hook_runner", "wrapagent.history.recording", "wrapagent.proxy.pty_loop")
"""Milliseconds each (enum ~8, re ~10, json ~12, pathlib ~20 on the development machine; a small
module of wrapagent's own ~0.2): none of it may come between a full-mode launch and the tool's start."""

HEAVY_BEFORE_THE_FIRST_BYTE = ("signal", "enum", "re", "json", "pathlib", "typing", "dataclasses", "subprocess",
                               "threading", "datetime", "struct", "_queue", "__future__",
                               "wrapagent.inject.adapters", "wrapagent.history.records",
                               "wrapagent.history.private_files", "wrapagent.session.live",
                               "wrapagent.session.tool_version", "wrapagent.session.starting",
                               "wrapagent.hooks.config_loader", "wrapagent.hooks.config_model",
                               "wrapagent.hooks.events", "wrapagent.hooks.hook_runner", "wrapagent.proxy.job_control")
"""What the session needs only once the tool runs (the record, the config's defaults, the recording's
file, job control): loaded after the tool's first output is on the screen, never before it."""


def test_full_mode_starts_the_tool_before_loading_the_session_machinery(tmp_path: Path, run_wrapagent) -> None:
    """The default session outside a git project: only what decides the order runs before the tool,
    and only the copy loop before its first byte reaches the terminal."""
    probe = tmp_path / "probe.py"
    import sys

    root = str(Path(__file__).resolve().parents[2])
    later = [p for p in sys.path if p and p != root]  # site-packages: -S keeps site's own imports out
    probe.write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {root!r})\n"
        "from wrapagent.proxy import session_leader\n"
        "start = session_leader.start\n"
        "def spy(*args, **kwargs):\n"
        f"    heavy = [m for m in {HEAVY_BEFORE_THE_TOOL!r} if m in sys.modules]\n"
        "    sys.stderr.write('HEAVY=' + ','.join(heavy) + ';\\n')\n"
        f"    sys.path.extend({later!r})\n"
        "    return start(*args, **kwargs)\n"
        "session_leader.start = spy\n"
        "write, seen = os.write, []\n"
        "def first_write(fd, data):\n"  # the output thread's copy of the tool's first bytes
        "    if fd == 1 and not seen and b'FIRST' in bytes(data):\n"
        f"        seen.append([m for m in {HEAVY_BEFORE_THE_FIRST_BYTE!r} if m in sys.modules])\n"
        "    return write(fd, data)\n"
        "os.write = first_write\n"
        "sys.argv = ['wrapagent', 'sh', '-c', 'printf FIRST; sleep 0.3']\n"
        "from wrapagent.__main__ import main\n"
        "code = main()\n"
        "sys.stderr.write('LATE=' + ','.join(seen[0] if seen else ['(no first write seen)']) + ';\\n')\n"
        "raise SystemExit(code)\n")
    child = run_wrapagent(argv=[sys.executable, "-S", str(probe)], cwd=tmp_path)
    assert child.finish() == 0
    assert b"HEAVY=;" in child.output, child.output
    assert b"LATE=;" in child.output, child.output
    record, _ = only_record()  # the session itself is complete: record and recording made after the byte
    assert record["state"] == "finished" and record["recording"]["events"] >= 1
