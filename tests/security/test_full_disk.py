"""The tool's exit code survives anything that happens to wrapagent's own records.

The state folder is a small tmpfs (mounted here when the tests run as root;
skipped otherwise, see `state_tmpfs`): the tool fills it while it runs, or
it is full before wrapagent starts. The exit code must be the tool's (0 and
7), no traceback, one line saying what was lost; the record must not stay
`running` once there is room again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import default_signals, wrapagent_argv
from wrapagent.history import records

FILL = """
import os, sys
with open(os.path.join(os.environ["XDG_STATE_HOME"], "fill"), "wb", buffering=0) as f:
    try:
        while True:
            f.write(bytes(65536))
    except OSError:
        pass
"""
"""Fills the filesystem of the state folder (the tool does it while it runs, or the test before)."""


@pytest.fixture
def state_tmpfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A 1 MiB tmpfs as XDG_STATE_HOME (root only: mount(2) needs it; unmounted at the end)."""
    mount = tmp_path / "state"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root here")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode(errors='replace').strip()}")
    monkeypatch.setenv("XDG_STATE_HOME", str(mount))
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(mount: Path) -> None:
    subprocess.run([sys.executable, "-c", FILL], check=True)
    assert os.statvfs(mount).f_bavail == 0


def free(mount: Path) -> None:
    (mount / "fill").unlink()


def tool(exit_code: int, *, fills: bool) -> list[str]:
    code = (FILL if fills else "") + f"\nimport sys; sys.exit({exit_code})\n"
    return [sys.executable, "-c", code]


def wrapagent_lines(stderr: bytes) -> list[str]:
    return [line for line in stderr.decode(errors="replace").splitlines() if line.startswith("wrapagent")]


def session_records(mount: Path) -> list[dict]:
    roots = list((mount / "wrapagent" / "projects").glob("*"))
    return records.iter_records(roots)


def run_piped(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*wrapagent_argv(), *argv], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=120, preexec_fn=default_signals)


def test_the_tool_fills_the_disk_and_keeps_its_exit_code(state_tmpfs: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    for code in (0, 7):
        proc = run_piped(tool(code, fills=True), work)
        stderr = proc.stderr.decode(errors="replace")
        assert proc.returncode == code, stderr
        assert "Traceback" not in stderr, stderr
        lines = wrapagent_lines(proc.stderr)
        assert len(lines) == 1 and stderr.strip() == lines[0], stderr  # nothing else (no git noise)
        assert "No space left on device" in lines[0] or "could not be written" in lines[0], stderr
        free(state_tmpfs)
    # With room again, no record says `running`: finished in place, or closed by the next session.
    run_piped(["true"], work)
    states = [r["state"] for r in session_records(state_tmpfs)]
    assert len(states) == 3 and "running" not in states, states


@pytest.mark.parametrize("hooks", ["", '[pre_run]\ncommand = "true"\n'], ids=["no-hooks", "pre_run"])
def test_a_full_disk_at_start_runs_the_tool_without_a_record(state_tmpfs: Path, tmp_path: Path, hooks: str) -> None:
    if hooks:
        config = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(hooks)
    work = tmp_path / "work"
    work.mkdir()
    fill(state_tmpfs)
    proc = run_piped(tool(7, fills=False), work)
    stderr = proc.stderr.decode(errors="replace")
    assert proc.returncode == 7, stderr
    assert "Traceback" not in stderr, stderr
    lines = wrapagent_lines(proc.stderr)
    assert len(lines) == 1 and "without a session record" in lines[0], stderr
    free(state_tmpfs)
    assert [r for r in session_records(state_tmpfs) if r.get("state") == "running"] == []


@pytest.mark.parametrize("hooks", ["", '[pre_run]\ncommand = "true"\n'], ids=["tool-first", "usual-order"])
def test_an_unwritable_state_folder_runs_the_tool_and_says_so_once(tmp_path: Path, run_wrapagent,
                                                                   hooks: str) -> None:
    """No tmpfs needed: a state folder under a plain file cannot be made, even by root."""
    if hooks:
        config = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(hooks)
    blocker = tmp_path / "state-is-a-file"
    blocker.write_text("")
    env = dict(os.environ, XDG_STATE_HOME=str(blocker))
    child = run_wrapagent("sh", "-c", f"touch {tmp_path}/tool.ran; exit 7", cwd=tmp_path, env=env)
    assert child.finish() == 7
    text = child.output.decode(errors="replace")
    assert "Traceback" not in text
    assert (tmp_path / "tool.ran").exists()
    assert text.count("wrapagent:") == 1 and "without a session record" in text, text


@pytest.mark.parametrize("hooks", ["", '[pre_run]\ncommand = "true"\n'], ids=["tool-first", "usual-order"])
def test_on_a_terminal_the_tool_fills_the_disk_and_keeps_its_exit_code(state_tmpfs: Path, tmp_path: Path,
                                                                      run_wrapagent, hooks: str) -> None:
    if hooks:
        config = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(hooks)
    work = tmp_path / "work"
    work.mkdir()
    child = run_wrapagent(*tool(7, fills=True), cwd=work)
    assert child.finish() == 7, child.output
    text = child.output.decode(errors="replace")
    assert "Traceback" not in text
    # Tool first, the record is written while the tool starts: it may find the disk full already.
    assert text.count("wrapagent:") == 1, text
    assert "could not be written" in text or "without a session record" in text, text


def test_no_write_fits_any_more_and_the_next_session_closes_the_record(tmp_path: Path) -> None:
    """No root needed: the tool sets wrapagent's file-size limit to 0 (RLIMIT_FSIZE, Linux prlimit).

    Then not even the record's in-place rewrite fits: the exit code is still
    the tool's, one line says the record was not written, and the running
    marker stays, so the next session closes the record as `abandoned`.
    """
    resource = pytest.importorskip("resource")
    if not hasattr(resource, "prlimit"):
        pytest.skip("prlimit(2) is Linux only")
    work = tmp_path / "work"
    work.mkdir()
    code = ("import os, resource, sys\n"
            "soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)\n"
            "resource.prlimit(os.getppid(), resource.RLIMIT_FSIZE, (0, hard))\n"
            "sys.exit(7)\n")
    proc = run_piped([sys.executable, "-c", code], work)
    stderr = proc.stderr.decode(errors="replace")
    assert proc.returncode == 7, stderr
    assert "Traceback" not in stderr, stderr
    lines = wrapagent_lines(proc.stderr)
    assert len(lines) == 1 and "the session record" in lines[0] and "abandoned" in lines[0], stderr
    state = Path(os.environ["XDG_STATE_HOME"])
    [first] = records.iter_records(list((state / "wrapagent" / "projects").glob("*")))
    assert first["state"] == "running"  # what the disk holds: the first record
    assert run_piped(["true"], work).returncode == 0
    closed = {r["id"]: r for r in records.iter_records(list((state / "wrapagent" / "projects").glob("*")))}
    assert closed[first["id"]]["state"] == "abandoned"
