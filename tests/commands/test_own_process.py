"""wrapagent's own code in a new process, never a `wrapagent` that the current folder ships."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import wrapagent
from wrapagent.commands.own_process import module_argv, package_parent


def test_the_package_parent_is_the_real_folder_of_the_running_wrapagent() -> None:
    assert Path(package_parent()) / "wrapagent" == Path(os.path.realpath(wrapagent.__file__)).parent


def test_a_cloned_repository_shipping_wrapagent_does_not_run(tmp_path: Path) -> None:
    """The folder holds `wrapagent/__main__.py` that would write a file: `python -m wrapagent` there runs it."""
    planted = tmp_path / "wrapagent"
    planted.mkdir()
    (planted / "__init__.py").write_text("")
    (planted / "__main__.py").write_text(f"open({str(tmp_path / 'pwned')!r}, 'w').close()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(tmp_path)  # -I leaves PYTHON* variables out too
    done = subprocess.run([*module_argv("wrapagent", "--version")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() and not (tmp_path / "pwned").exists()


def test_arguments_reach_the_module(tmp_path: Path) -> None:
    done = subprocess.run(module_argv("json.tool", "--compact"), input='{"a": [1, 2]}', cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, '{"a":[1,2]}\n')
