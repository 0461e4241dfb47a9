"""`config check` and the loader as a user meets them.

Failed before: a file changed since it was trusted said "NOT TRUSTED",
errors came out in reverse line order, an unknown built-in did not list the
known names, and one invalid [[prompt_guard]] entry disabled every hook of
its file, waiting_for_input included.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import wrapagent_argv
from wrapagent.hooks import config_loader
from wrapagent.hooks.builtins import BUILTIN_NAMES
from wrapagent.hooks.trust import TrustStore


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*wrapagent_argv(), *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def global_hooks(isolated_home: Path, text: str) -> Path:
    path = isolated_home / "config" / "wrapagent" / "hooks.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_changed_since_trusted_is_said_so(tmp_path):
    hooks = tmp_path / ".wrapagent" / "hooks.toml"
    hooks.parent.mkdir()
    hooks.write_text('[pre_run]\ncommand = "true"\n')
    TrustStore().trust(hooks, hooks.read_bytes())
    assert "trusted" in run("config", "check", cwd=tmp_path).stdout
    hooks.write_text('[pre_run]\ncommand = "false"\n')
    text = run("config", "check", cwd=tmp_path).stdout
    assert "CHANGED SINCE TRUSTED" in text and "NOT TRUSTED" not in text
    layers = json.loads(run("config", "check", "--json", cwd=tmp_path).stdout)["layers"]
    assert layers[2]["state"] == "changed-since-trusted"
    (tmp_path / "other").mkdir()
    other = tmp_path / "other" / ".wrapagent"
    other.mkdir()
    (other / "hooks.toml").write_text('[pre_run]\ncommand = "true"\n')
    assert "NOT TRUSTED" in run("config", "check", cwd=tmp_path / "other").stdout  # never trusted


def test_errors_in_line_order(tmp_path, isolated_home):
    global_hooks(isolated_home, '[pre_run]\ntimeout_secs = "x"\n\n[post_run]\ncommand = 5\n')
    text = run("config", "check", cwd=tmp_path).stdout
    lines = [l for l in text.splitlines() if l.startswith("  error:")]
    numbers = [int(l.split("hooks.toml:", 1)[1].split(":", 1)[0]) for l in lines]
    assert numbers == sorted(numbers) and len(numbers) == 3, lines


def test_unknown_builtin_lists_the_known_names(tmp_path, isolated_home):
    global_hooks(isolated_home, '[[prompt_guard]]\nname = "x"\nbuiltin = "nosuch"\n')
    text = run("config", "check", cwd=tmp_path).stdout
    assert "unknown built-in guard 'nosuch' (known: " + ", ".join(BUILTIN_NAMES) + ")" in text
    global_hooks(isolated_home, '[[prompt_guard]]\nname = "x"\nbuiltin = "git_statuz"\n')
    assert "did you mean 'git_status'?" in run("config", "check", cwd=tmp_path).stdout


BROKEN_ENTRY = '''\
[waiting_for_input]
command = "echo waiting"

[pre_run]
command = "echo pre"

[[prompt_guard]]
name = "bad"
builtin = "nosuch"

[[prompt_guard]]
name = "good"
builtin = "date"
'''


def test_one_invalid_guard_entry_disables_only_that_entry(tmp_path, isolated_home):
    global_hooks(isolated_home, BROKEN_ENTRY)
    cfg = config_loader.load_config(tmp_path)
    assert [g.name for g in cfg.guards] == ["good"]
    assert cfg.hook_for("waiting_for_input").command == "echo waiting"
    assert cfg.hook_for("pre_run").command == "echo pre"
    assert cfg.has_errors  # still an error: config check exits 1, --strict refuses
    text = run("config", "check", cwd=tmp_path)
    assert text.returncode == 1 and "invalid prompt guard entries skipped (1 error(s))" in text.stdout
    launched = subprocess.run([*wrapagent_argv(), "sh", "-c", "true"], cwd=tmp_path, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert launched.returncode == 0
    assert "(that prompt guard is skipped)" in launched.stderr
    assert "this file's hooks are not used" not in launched.stderr
    strict = subprocess.run([*wrapagent_argv(), "--strict", "sh", "-c", "true"], cwd=tmp_path,
                            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert strict.returncode == 2


def test_a_file_level_error_still_disables_the_file(tmp_path, isolated_home):
    global_hooks(isolated_home, BROKEN_ENTRY + '\n[post_run]\ncommand = 5\n')
    cfg = config_loader.load_config(tmp_path)
    assert cfg.guards == () and cfg.hook_for("waiting_for_input") is None
    assert "NOT USED" in run("config", "check", cwd=tmp_path).stdout
