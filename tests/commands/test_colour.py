"""Output that fits the shell: colour rules, --json that parses, guard args as TOML, probe status.

Each case failed before: wrapagent printed no colour at all (so no
terminal case could pass), had no --color, `config check`/`shims status`/
`trust --list` had no --json, guard args printed as Python reprs, and with
no coding CLI installed doctor said "no problems found".
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

from tests.conftest import wrapagent_argv
from wrapagent.commands import colour
from wrapagent.commands import trust as trust_cmd
from wrapagent.hooks.starter_config import STARTER_HOOKS_TOML
from wrapagent.hooks.tomlvalue import toml_table, toml_value

ESC = "\x1b["


@pytest.fixture(autouse=True)
def auto_mode():
    colour.set_mode("auto")
    yield
    colour.set_mode("auto")


def run(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*wrapagent_argv(), *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=120)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    env = {k: v for k, v in env.items() if not k.startswith(("XDG_", "WRAPAGENT_"))}
    env.update({"TERM": "xterm", "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", **extra})
    return env


# --------------------------------------------------------------------------- colour rules


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("mode, env, tty, expected", [
    ("auto", {}, True, True),
    ("auto", {}, False, False),
    ("auto", {"NO_COLOR": "1"}, True, False),
    ("auto", {"NO_COLOR": ""}, True, True),  # no-color.org: set *and not empty*
    ("auto", {"TERM": "dumb"}, True, False),
    ("always", {"NO_COLOR": "1"}, False, True),  # an explicit flag wins
    ("never", {}, True, False),
])
def test_colour_decision(mode, env, tty, expected):
    colour.set_mode(mode)
    assert colour.enabled(_Tty() if tty else io.StringIO(), env) is expected


def test_color_option_is_taken_from_any_position_before_dashdash():
    assert colour.take_option(["list", "--color=never", "--json"]) == ["list", "--json"]
    assert colour.mode() == "never"
    assert colour.take_option(["x", "--color", "always"]) == ["x"] and colour.mode() == "always"
    assert colour.take_option(["resume", "last", "--", "--color=never"]) == ["resume", "last", "--", "--color=never"]
    assert colour.mode() == "always"
    with pytest.raises(ValueError):
        colour.take_option(["--color=sometimes"])


def test_git_gets_the_decision():
    assert colour.git_color_args(None, {"NO_COLOR": "1"}) == ["--no-color"]
    assert colour.git_color_args(None, {}) == []
    colour.set_mode("always")
    assert colour.git_color_args(None, {"NO_COLOR": "1"}) == ["--color=always"]
    colour.set_mode("never")
    assert colour.git_color_args(None, {}) == ["--no-color"]


def test_doctor_findings_coloured_on_request_plain_when_piped(tmp_path):
    env = clean_env(HOME=str(tmp_path), PATH="/usr/bin:/bin")
    piped = run("doctor", env=env, cwd=tmp_path)
    assert ESC not in piped.stdout and "warning: " in piped.stdout
    forced = run("doctor", "--color=always", env=env, cwd=tmp_path)
    assert f"{ESC}33mwarning{ESC}0m: " in forced.stdout
    top = run("--color=always", "doctor", env=env, cwd=tmp_path)
    assert f"{ESC}33mwarning" in top.stdout
    assert run("doctor", "--color=sometimes", env=env, cwd=tmp_path).returncode == 2


@pytest.mark.parametrize("no_color", [False, True])
def test_doctor_at_a_terminal(tmp_path, no_color):
    env = clean_env(HOME=str(tmp_path), PATH="/usr/bin:/bin")
    if no_color:
        env["NO_COLOR"] = "1"
    argv = wrapagent_argv()
    child = pexpect.spawn(argv[0], [*argv[1:], "doctor"], env=env, cwd=str(tmp_path), encoding="utf-8",
                          timeout=120, dimensions=(50, 200))
    child.expect(pexpect.EOF)
    child.close()
    assert "Findings:" in child.before
    assert (f"{ESC}33mwarning" in child.before) is (not no_color)


# --------------------------------------------------------------------------- --json


@pytest.mark.parametrize("args", [
    ["config", "check", "--json"],
    ["shims", "status", "--json"],
    ["trust", "--list", "--json"],
    ["doctor", "--json"],
    ["sessions", "list", "--json"],
])
def test_every_json_parses(tmp_path, args):
    home = tmp_path / "home"
    env = clean_env(HOME=str(home))
    assert run("config", "init", env=env, cwd=tmp_path).returncode == 0
    result = run(*args, env=env, cwd=tmp_path)
    json.loads(result.stdout)
    assert ESC not in result.stdout


def test_json_shapes(tmp_path):
    home = tmp_path / "home"
    env = clean_env(HOME=str(home))
    run("config", "init", env=env, cwd=tmp_path)
    check = json.loads(run("config", "check", "--json", env=env, cwd=tmp_path).stdout)
    assert check["ok"] is True and [g["name"] for g in check["guards"]] == ["branch_protection", "dirty_tree",
                                                                           "git_status"]
    assert check["guards"][2]["args"] == {"max_bytes": 4000}
    assert check["layers"][0]["state"] == "used"
    run("shims", "install", "codex", env=env, cwd=tmp_path)
    shims = json.loads(run("shims", "status", "--json", env=env, cwd=tmp_path).stdout)
    codex = next(s for s in shims["shims"] if s["tool"] == "codex")
    assert codex["installed"] is True and shims["on_path"] is False and shims["path_position"] is None

    project = tmp_path / "project"
    (project / ".wrapagent").mkdir(parents=True)
    hooks = project / ".wrapagent" / "hooks.toml"
    hooks.write_text('[pre_run]\ncommand = "true"\n')
    from wrapagent.hooks.trust import TrustStore

    TrustStore(env={"HOME": str(home)}).trust(hooks, hooks.read_bytes())
    hooks.write_text('[pre_run]\ncommand = "false"\n')
    listed = json.loads(run("trust", "--list", "--json", env=env, cwd=tmp_path).stdout)
    assert [(f["path"], f["state"]) for f in listed["files"]] == [(str(hooks), "changed since trusted")]
    assert run("trust", "--json", env=env, cwd=tmp_path).returncode == 2  # --json goes with --list


# --------------------------------------------------------------------------- TOML args


@pytest.mark.parametrize("value", [("main", "master"), False, {"max_bytes": 4000}, "a \"b\" \\ c",
                                   {"x y": [1, 2.5, True]}])
def test_toml_value_round_trips(value):
    parsed = tomllib.loads(f"v = {toml_value(value)}")["v"]
    assert parsed == (list(value) if isinstance(value, tuple) else value)


def test_config_check_prints_args_a_user_can_paste_back(tmp_path):
    env = clean_env(HOME=str(tmp_path / "home"))
    run("config", "init", env=env, cwd=tmp_path)
    text = run("config", "check", env=env, cwd=tmp_path).stdout
    line = next(l for l in text.splitlines() if "branch_protection: builtin" in l)
    args = line.split(" args = ", 1)[1]
    assert tomllib.loads(f"args = {args}")["args"] == {"branches": ["main", "master", "dev", "develop"]}
    assert "('main'" not in text and "False" not in text and "{'max_bytes'" not in text
    doctor_text = run("doctor", env=env, cwd=tmp_path).stdout
    assert "args = { max_bytes = 4000 }" in doctor_text and "max_bytes=4000" not in doctor_text


def test_trust_review_prints_args_as_toml(tmp_path):
    text = trust_cmd.describe_content(tmp_path / "hooks.toml", STARTER_HOOKS_TOML.encode())
    assert "built-in git_status with args = { max_bytes = 4000 }" in text
    assert toml_table([("always", False)]) == "{ always = false }"


# --------------------------------------------------------------------------- doctor


def test_probe_exit_status_says_whether_readiness_fired(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "codex"
    fake.write_text("#!/bin/sh\necho 'not a TUI'\nexit 0\n")
    fake.chmod(0o755)
    env = clean_env(HOME=str(tmp_path / "home"), PATH=f"{bin_dir}:/usr/bin:/bin")
    not_ready = run("doctor", "--probe", "codex", "--timeout", "30", env=env, cwd=tmp_path)
    assert not_ready.returncode == 1 and "NOT FIRED" in not_ready.stdout
    missing = run("doctor", "--probe", "claude", env=env, cwd=tmp_path)
    assert missing.returncode == 1
    ready = run("doctor", "--probe", "demo", env=env, cwd=tmp_path)
    assert ready.returncode == 0 and "FIRED" in ready.stdout


def test_doctor_without_any_cli_says_what_to_install_or_try(tmp_path):
    env = clean_env(HOME=str(tmp_path / "home"), PATH="/usr/bin:/bin")
    run("config", "init", env=env, cwd=tmp_path)
    text = run("doctor", env=env, cwd=tmp_path).stdout
    findings = text.split("Findings:", 1)[1]
    assert "no problems found" not in findings
    assert "npm install -g @openai/codex" in findings and "wrapagent demo" in findings
