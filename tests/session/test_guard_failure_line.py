"""A failing guard's line after the session says what the guard said, not only its exit code."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import wrapagent_argv


def test_the_line_after_the_session_quotes_the_guards_error(tmp_path, isolated_home):
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent"
    config.mkdir(parents=True)
    (config / "hooks.toml").write_text('[[prompt_guard]]\nname = "todo"\ncommand = "cat {project_root}/TODO.md"\n')
    project = tmp_path / "project"
    project.mkdir()
    result = subprocess.run([*wrapagent_argv(), "demo", "hi"], cwd=project, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=60)
    assert result.returncode == 0, result.stderr
    [line] = [l for l in result.stderr.splitlines() if l.startswith("wrapagent: guard todo:")]
    assert line.startswith(f"wrapagent: guard todo: exited with 1 (cat: {project}/TODO.md: No such file or directory)")

    (project / "TODO.md").write_text("ship it\n")
    result = subprocess.run([*wrapagent_argv(), "demo", "hi"], cwd=project, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=60)
    assert result.returncode == 0 and "guard todo" not in result.stderr
    assert '<prompt-guard name="todo">\nship it\n</prompt-guard>' in result.stdout
