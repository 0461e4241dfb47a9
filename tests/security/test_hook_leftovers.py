"""No hook outlives wrapagent, and a hook that starts wrapagent cannot start it without end.

* SIGTERM (or a hang-up) while wrapagent waits on pre_run: with the default
  action wrapagent died on the spot and the hook's process group (a session of
  its own) ran on with no timeout. Now the group is killed and wrapagent still
  dies of the signal.
* A pre_run that runs `wrapagent …` (a shimmed `claude -p` for a summary):
  the hook's wrapagent ran the same pre_run, which ran wrapagent again, with
  no end (the depth guard counted only tools). Each level is nested now, so
  at WRAPAGENT_DEPTH 4 the tool runs directly and the chain ends.

Waits are for conditions (a pid file appears, a process group is gone) with
generous limits; nothing measures a duration.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import default_signals, wrapagent_argv
from waiting import wait_for

pytestmark = pytest.mark.timeout(180)

QUIET = "[session_complete]\nenabled = false\n[checkpoints]\nenabled = false\ntranscripts = false\n"


def write_hooks(text: str) -> None:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(QUIET + text)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie leader waiting for its reaper does not count (Linux: its state in /proc).
    try:
        return any(Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
                   for pid in os.listdir("/proc") if pid.isdigit() and _pgid(pid) == pgid)
    except OSError:
        return True


def _pgid(pid: str) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[2])
    except (OSError, IndexError, ValueError):
        return None


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads process states from /proc (Linux)")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_signal_while_pre_run_runs_kills_the_hook_group(tmp_path: Path, sig: int) -> None:
    pid_file = tmp_path / "hook.pid"
    write_hooks(f'[pre_run]\ncommand = "echo $$ > {pid_file}; sleep 300"\ntimeout_secs = 600\n')
    project = tmp_path / "project"
    project.mkdir()
    proc = subprocess.Popen([*wrapagent_argv(), "sh", "-c", "echo tool ran"], cwd=project,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=default_signals)
    pgid = None
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text().strip().isdigit(), "pre_run started")
        pgid = int(pid_file.read_text())
        proc.send_signal(sig)
        proc.wait(timeout=60)
        assert proc.returncode == -sig  # wrapagent still ends by that signal
        wait_for(lambda: not group_alive(pgid), "pre_run's process group gone with wrapagent", 30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if pgid is not None and group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)


def test_a_hook_starting_wrapagent_ends_at_the_nesting_limit(tmp_path: Path) -> None:
    """Each level's pre_run appends its WRAPAGENT_DEPTH and starts wrapagent again.
    (The test itself stops after 12 levels, so the code before the change ends too.)"""
    levels = tmp_path / "levels"
    levels.write_text("")
    bindir = Path(wrapagent_argv()[0]).parent if len(wrapagent_argv()) == 1 else Path(sys.executable).parent
    again = " ".join(wrapagent_argv()) + " sh -c 'exit 0'"
    write_hooks(
        '[pre_run]\ntimeout_secs = 120\n'
        f'command = "echo $WRAPAGENT_DEPTH >> {levels}; [ $(wc -l < {levels}) -lt 12 ] && {again}; true"\n')
    project = tmp_path / "project"
    project.mkdir()
    proc = subprocess.run([*wrapagent_argv(), "sh", "-c", "echo tool ran; exit 7"], cwd=project,
                          env=dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=150,
                          preexec_fn=default_signals)
    assert proc.stdout == "tool ran\n" and proc.returncode == 7, proc.stderr
    depths = levels.read_text().split()
    assert depths == ["1", "2", "3", "4"], depths


class _Stop(Exception):
    pass


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads process states from /proc (Linux)")
def test_a_signal_during_the_hooks_spawn_still_kills_its_group(tmp_path: Path, monkeypatch) -> None:
    """TERM delivered while `Popen` is still returning (the child forked, its pid not yet known to
    wrapagent): the session's handler raises only once the group is registered, so it is killed."""
    from wrapagent.hooks import hook_runner

    pid_file = tmp_path / "hook.pid"
    real_popen = subprocess.Popen

    def popen_then_term(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        wait_for(lambda: pid_file.exists() and pid_file.read_text().strip().isdigit(), "the hook started")
        os.kill(os.getpid(), signal.SIGTERM)  # handled at the next bytecode: still inside "Popen"
        return proc

    def handler(signum, frame):
        raise _Stop()

    old = signal.signal(signal.SIGTERM, handler)
    monkeypatch.setattr(subprocess, "Popen", popen_then_term)
    try:
        with pytest.raises(_Stop):
            hook_runner.run_command(f"echo $$ > {pid_file}; exec sleep 300", name="pre_run", kind="lifecycle",
                                    cwd=tmp_path, env=dict(os.environ), timeout=600, log=lambda line: None)
    finally:
        signal.signal(signal.SIGTERM, old)
    pgid = int(pid_file.read_text())
    try:
        wait_for(lambda: not group_alive(pgid), "the hook's group gone after the signal", 30)
    finally:
        if group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)
