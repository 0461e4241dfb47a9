"""Hooks can always be stopped, and none outlives wrapagent.

* The proxy's copy threads block HUP, INT, QUIT, TERM, WINCH; a guard thread
  started from one (after a conversation reset) handed that mask to every
  hook it ran: TERM could not stop them. The mask is read from
  /proc/<pid>/status of the hook itself (Linux).
* A guard still running when the tool exits was orphaned without a timeout
  (its thread dies with wrapagent's `os._exit`): its group is killed at exit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pexpect
import pytest

from pty_session import DemoWorld, say, type_text, wait_for
from wrapagent.hooks.hook_runner import run_command, start_hook_thread

LINUX_PROC = os.path.exists("/proc/self/status")
needs_proc = pytest.mark.skipif(not LINUX_PROC, reason="reads /proc/<pid>/status (Linux)")

# The hook process itself writes its blocked-signal mask: `exec`, because dash
# clears the mask of the children it forks (not its own), bash and git do not.
SIGBLK = "exec awk '/^SigBlk:/ {{print $2}}' /proc/self/status >> {out}"
EMPTY_MASK = "0000000000000000"


class World(DemoWorld):
    def spawn(self) -> pexpect.spawn:  # type: ignore[override]
        return super().spawn("demo", WRAPAGENT_DEMO_THINK_SECS="0.2")


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


@needs_proc
def test_hooks_started_after_a_reset_have_no_signal_blocked(tmp_path: Path) -> None:
    world = World(tmp_path)
    guard_masks = tmp_path / "guard-masks"
    waiting_masks = tmp_path / "waiting-masks"
    world.hooks(
        '[[prompt_guard]]\nname = "mask"\n'
        f'command = "{SIGBLK.format(out=guard_masks)}"\n'
        '[waiting_for_input]\n'
        f'command = "{SIGBLK.format(out=waiting_masks)}"\nquiet_secs = 0.5\n'
    )
    child = world.spawn()
    child.expect("demo> ")
    wait_for(lambda: len(lines(guard_masks)) == 1, "the first conversation's guard ran")
    say(child, "first", 1)
    type_text(child, "/clear")
    time.sleep(0.1)
    child.send("\r")
    child.expect_exact("(new conversation 2)")
    child.expect("demo> ")
    # The reset's guards run on a thread started from the proxy's input thread.
    wait_for(lambda: len(lines(guard_masks)) == 2, "the guard ran again after the reset")
    say(child, "second", 2)
    # waiting_for_input runs on a thread started from the proxy's output thread.
    wait_for(lambda: len(lines(waiting_masks)) >= 1, "waiting_for_input fired")
    child.send("/quit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert lines(guard_masks) == [EMPTY_MASK, EMPTY_MASK]
    assert set(lines(waiting_masks)) == {EMPTY_MASK}


@needs_proc
def test_a_hook_run_from_a_thread_that_blocks_signals_starts_with_none_blocked(tmp_path: Path) -> None:
    """run_command empties the mask for the spawn whichever thread calls it."""
    out = tmp_path / "mask"
    blocked = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGWINCH)
    results = []

    def masked() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        results.append(run_command(SIGBLK.format(out=out), name="t", kind="lifecycle", cwd=tmp_path,
                                   env=os.environ, timeout=60, log=lambda line: None))
        results.append(signal.pthread_sigmask(signal.SIG_BLOCK, ()))  # the caller's mask is restored

    thread = threading.Thread(target=masked)
    thread.start()
    thread.join(60)
    assert results[0].ok(), results[0]
    assert lines(out) == [EMPTY_MASK]
    assert set(blocked) <= set(results[1])


@needs_proc
def test_hook_threads_leave_signals_to_the_main_thread_and_what_they_start_blocks_none(tmp_path: Path) -> None:
    """A signal sent to wrapagent must wake its main thread: one the kernel gave to a helper
    thread only set Python's flag, and a main thread asleep in a system call slept on (a
    `kill -INT` never reached the tool). Hook threads block the main thread's signals whatever
    their creator's mask; the hooks and the git they start block none."""
    from wrapagent import gitcmd
    from wrapagent.child_process import MAIN_THREAD_SIGNALS

    out = tmp_path / "mask"
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    seen: list = []
    done = threading.Event()

    def creator() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, ())

        def work() -> None:
            try:
                seen.append(signal.pthread_sigmask(signal.SIG_BLOCK, ()))
                seen.append(run_command(SIGBLK.format(out=out), name="t", kind="lifecycle", cwd=tmp_path,
                                        env=os.environ, timeout=60, log=lambda line: None).ok())
                seen.append(gitcmd.run(repo, ["-c", "alias.mask=!" + SIGBLK.format(out=out), "mask"],
                                       timeout=60).code)
            finally:
                done.set()

        start_hook_thread(work, "test-hook-thread")

    thread = threading.Thread(target=creator)
    thread.start()
    thread.join(60)
    assert done.wait(60)
    assert seen == [set(MAIN_THREAD_SIGNALS), True, 0]
    assert lines(out) == [EMPTY_MASK, EMPTY_MASK]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return False
    except OSError:  # not Linux
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False


@pytest.mark.parametrize("kind", ["guard", "pre_session"])
def test_hooks_still_running_when_the_tool_exits_are_killed(tmp_path: Path, kind: str) -> None:
    world = World(tmp_path)
    pids = tmp_path / "pids"
    # The shell and a child of it, both in the hook's group; they would run for 10 minutes.
    command = f"sleep 600 & echo $$ $! > {pids}; wait"
    if kind == "guard":
        world.hooks(f'[[prompt_guard]]\nname = "slow"\ncommand = "{command}"\ntimeout_secs = 600\n')
    else:
        world.global_config(f'[hooks.pre_session]\ncommand = "{command}"\ntimeout_seconds = 600\n')
    child = world.spawn()
    found: list[int] = []
    try:
        child.expect("demo> ")
        wait_for(lambda: len(lines(pids)) == 2, f"the {kind} started")
        found = [int(p) for p in lines(pids)]
        assert all(_alive(pid) for pid in found)
        child.send("/quit\r")
        child.expect(pexpect.EOF)
        child.close()
        wait_for(lambda: not any(_alive(pid) for pid in found), f"the {kind}'s processes ended", timeout=60)
        log = "".join(p.read_text() for p in world.state.glob("wrapagent/projects/*/*/session.log"))
        assert "killed" in log and ("slow" if kind == "guard" else "pre_session") in log
    finally:
        for pid in found:  # never leave them behind, whatever the outcome
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if child.isalive():
            child.terminate(force=True)


def test_kill_running_needs_no_hook_runner_before_the_tool(tmp_path: Path) -> None:
    """A session without hooks never loads the hook runner just to find nothing to kill."""
    code = ("import sys; from wrapagent.session import finishing; finishing.end_running_hooks(None); "
            "print('wrapagent.hooks.hook_runner' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr
