"""The runner's contract with the user's configuration: fail open, say what to fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def write_global(name: str, text: str) -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def wrapagent(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wrapagent", *args], cwd=cwd, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=30)


def test_broken_config_fails_open_with_file_line_and_key(tmp_path: Path) -> None:
    path = write_global("hooks.toml", '[pre_run]\ncommand = "echo x"\ntimeout_secs = "soon"\n')
    proc = wrapagent("sh", "-c", "echo tool ran; exit 3", cwd=tmp_path)
    assert proc.returncode == 3 and proc.stdout == "tool ran\n"
    assert f"{path}:3: pre_run.timeout_secs" in proc.stderr
    assert "this file's hooks are not used" in proc.stderr


def test_invalid_toml_names_the_line(tmp_path: Path) -> None:
    path = write_global("hooks.toml", '[pre_run]\ncommand = "echo x\n')
    proc = wrapagent("sh", "-c", "exit 0", cwd=tmp_path)
    assert proc.returncode == 0
    assert f"{path}:2:" in proc.stderr


def test_strict_refuses_to_start(tmp_path: Path) -> None:
    write_global("hooks.toml", "[pre_run\n")
    marker = tmp_path / "ran"
    proc = wrapagent("--strict", "sh", "-c", f"touch {marker}", cwd=tmp_path)
    assert proc.returncode == 2
    assert not marker.exists()
    assert "--strict" in proc.stderr


def test_unknown_key_is_a_warning_and_hooks_still_run(tmp_path: Path) -> None:
    out = tmp_path / "pre_run.out"
    write_global("hooks.toml", f'[pre_run]\ncommand = "echo ran > {out}"\ncolour = "blue"\n')
    proc = wrapagent("sh", "-c", "exit 0", cwd=tmp_path)
    assert proc.returncode == 0
    assert "warning" in proc.stderr and "colour" in proc.stderr
    assert out.read_text() == "ran\n"


def test_failed_hook_gives_one_summary_line_after_the_tool(tmp_path: Path) -> None:
    write_global("hooks.toml", '[post_run]\ncommand = "exit 9"\n')
    proc = wrapagent("sh", "-c", "echo out", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == "out\n"
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "post_run: exit 9" in lines[0] and "session.log" in lines[0]


def test_config_check_shows_layers(tmp_path: Path) -> None:
    path = write_global("hooks.toml", '[[prompt_guard]]\nname = "g"\nbuiltin = "date"\n')
    proc = wrapagent("config", "check", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert str(path) in proc.stdout and "date" in proc.stdout
