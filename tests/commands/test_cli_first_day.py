"""What a new user types on day one: demo --help, -V, --help texts, usage errors, shims output.

Each test runs the installed command as a user would (a subprocess, no
terminal) or calls the one function that decides, and fails on the code
before: `demo --help` went to the demo agent as a message, `-V`
was an unknown option, `trust --help` had options without descriptions, a
sub-action's usage error printed the parent's usage, `shims install`
printed `updated -; unchanged -` and never mentioned `hash -r`.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
from pathlib import Path

import pytest

import wrapagent
from wrapagent import cli
from wrapagent.commands import shims
from wrapagent.hooks import config_loader
from wrapagent.hooks.starter_config import STARTER_HOOKS_TOML
from tests.conftest import wrapagent_argv


def run(*args: str, cwd: Path | None = None, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([*wrapagent_argv(), *args], input=stdin, capture_output=True, text=True,
                          cwd=cwd, timeout=60)


def test_demo_help_is_help_not_a_message(tmp_path, isolated_home):
    result = run("demo", "--help", cwd=tmp_path, stdin="")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: wrapagent demo")
    assert "config init" in result.stdout and "sessions list" in result.stdout
    # The demo agent never ran: no session was recorded anywhere.
    assert not (isolated_home / "state" / "wrapagent" / "projects").exists()


def test_dash_dash_still_sends_help_to_the_demo_agent(tmp_path, isolated_home):
    result = run("demo", "--", "--help", cwd=tmp_path, stdin="")
    assert not result.stdout.startswith("usage: wrapagent demo")
    assert (isolated_home / "state" / "wrapagent" / "projects").is_dir()


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version_flags(flag):
    result = run(flag)
    assert (result.returncode, result.stdout) == (0, f"wrapagent {wrapagent.__version__}\n")


def _starter_guard_names(tmp: Path) -> list[str]:
    (tmp / "cfg" / "wrapagent").mkdir(parents=True)
    (tmp / "cfg" / "wrapagent" / "hooks.toml").write_text(STARTER_HOOKS_TOML)
    cfg = config_loader.load_config(tmp, env={"XDG_CONFIG_HOME": str(tmp / "cfg"), "HOME": str(tmp)})
    return [g.name for g in cfg.guards]


def test_demo_in_a_git_repository_uses_exactly_the_config_init_guards(tmp_path, capsys):
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    cfg = cli._demo_config(project, dict(os.environ))
    names = [g.name for g in cfg.guards]
    assert names == _starter_guard_names(tmp_path / "starter")
    message = capsys.readouterr().err
    assert "config init" in message and "date" not in message


def test_demo_outside_git_adds_date_and_says_so(tmp_path, capsys):
    project = tmp_path / "plain"
    project.mkdir()
    cfg = cli._demo_config(project, dict(os.environ))
    names = [g.name for g in cfg.guards]
    assert names == [*_starter_guard_names(tmp_path / "starter"), "date"]
    assert "adds `date`" in capsys.readouterr().err


def test_trust_help_describes_every_option():
    result = run("trust", "--help")
    assert result.returncode == 0
    options = [line for line in result.stdout.splitlines() if re.match(r"\s+(-|PATH)", line)]
    assert options, result.stdout
    for line in options:
        assert re.match(r"\s+\S.*?\s{2,}\S", line), f"no description: {line!r}"


@pytest.mark.parametrize("args, usage", [
    (["config", "init", "--bogus"], "usage: wrapagent config init"),
    (["config", "check", "extra"], "usage: wrapagent config check"),
    (["shims", "install", "--bogus"], "usage: wrapagent shims install"),
    (["shims", "status", "--bogus"], "usage: wrapagent shims status"),
])
def test_sub_action_usage_error_prints_its_own_usage(args, usage):
    result = run(*args)
    assert result.returncode == 2
    assert result.stderr.startswith(usage), result.stderr


def test_shims_dir_before_or_after_the_action(tmp_path):
    for args in (["shims", "--dir", str(tmp_path / "a"), "install", "codex"],
                 ["shims", "install", "codex", "--dir", str(tmp_path / "b")]):
        assert run(*args).returncode == 0
    assert (tmp_path / "a" / "codex").is_file() and (tmp_path / "b" / "codex").is_file()


def test_install_summary_names_only_what_happened(tmp_path):
    report = shims.InstallReport(tmp_path, created=["codex"], unchanged=["claude"])
    assert shims.install_summary(report) == f"shims in {tmp_path}: created codex; unchanged claude"
    report = shims.InstallReport(tmp_path, unchanged=["codex", "claude"])
    assert shims.install_summary(report) == f"shims in {tmp_path}: all up to date (codex, claude)"


@pytest.mark.parametrize("shell, hint", [("/bin/bash", True), ("/usr/bin/zsh", True), ("/usr/bin/fish", False)])
def test_hash_r_hint_when_new_shims_are_already_on_path(tmp_path, shell, hint):
    folder = tmp_path / "shims"
    env = {"HOME": str(tmp_path), "PATH": f"{folder}:/usr/bin:/bin", "SHELL": shell}
    out = io.StringIO()
    shims.cmd_shims("install", ["codex"], str(folder), out, env=env)
    assert ("hash -r" in out.getvalue()) == hint
    out = io.StringIO()
    shims.cmd_shims("install", ["codex"], str(folder), out, env=env)
    assert "hash -r" not in out.getvalue()  # nothing new: nothing for the shell to forget
