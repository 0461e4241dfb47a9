"""The `[waiting_for_input]` event: parsing, defaults, validation, `{turn}` and WRAPAGENT_TURN."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from wrapagent.hooks.config_check import describe
from wrapagent.hooks.config_loader import DEFAULT_WAITING_TIMEOUT, load_config
from wrapagent.hooks.context import GuardContext
from wrapagent.hooks.hook_runner import run_lifecycle


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
            "XDG_STATE_HOME": str(tmp_path / "state")}


def load(tmp_path: Path, env: dict[str, str], text: str):
    path = Path(env["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    return load_config(project, env=env, is_trusted=lambda p, d: True)


def test_parsed_with_quiet_secs(tmp_path: Path, env: dict[str, str]) -> None:
    cfg = load(tmp_path, env, """
        [waiting_for_input]
        command = "notify-send 'agent waiting' 'turn {turn}'"
        quiet_secs = 4.5
    """)
    hook = cfg.hook_for("waiting_for_input")
    assert hook is not None and cfg.problems == ()
    assert hook.quiet_secs == 4.5
    assert hook.timeout_secs == DEFAULT_WAITING_TIMEOUT
    assert "quiet 4.5s, timeout 10s" in describe(cfg)


def test_quiet_secs_defaults_to_the_tool(tmp_path: Path, env: dict[str, str]) -> None:
    cfg = load(tmp_path, env, '[waiting_for_input]\ncommand = "true"\n')
    hook = cfg.hook_for("waiting_for_input")
    assert hook is not None and hook.quiet_secs is None


@pytest.mark.parametrize("value, message", [
    ("0", "positive"), ('"3"', "number of seconds"), ("-1", "positive"),
])
def test_bad_quiet_secs_is_an_error(tmp_path: Path, env: dict[str, str], value: str, message: str) -> None:
    cfg = load(tmp_path, env, f'[waiting_for_input]\ncommand = "true"\nquiet_secs = {value}\n')
    errors = [p for p in cfg.problems if p.severity == "error"]
    assert errors and message in errors[0].message and errors[0].key == "waiting_for_input.quiet_secs"


def test_quiet_secs_only_belongs_to_waiting_for_input(tmp_path: Path, env: dict[str, str]) -> None:
    cfg = load(tmp_path, env, '[post_run]\ncommand = "true"\nquiet_secs = 3\n')
    assert any(p.key == "post_run.quiet_secs" for p in cfg.problems)


def test_disabled_or_missing_means_no_hook(tmp_path: Path, env: dict[str, str]) -> None:
    assert load(tmp_path, env, "").hook_for("waiting_for_input") is None
    cfg = load(tmp_path, env, '[waiting_for_input]\nenabled = false\n')
    assert cfg.hook_for("waiting_for_input") is None and cfg.problems == ()


def test_turn_placeholder_is_quoted_and_in_the_environment(tmp_path: Path, env: dict[str, str]) -> None:
    out = tmp_path / "out"
    cfg = load(tmp_path, env, f"""
        [waiting_for_input]
        command = "echo turn {{turn}} env $WRAPAGENT_TURN > {out}"
    """)
    hook = cfg.hook_for("waiting_for_input")
    assert hook is not None
    ctx = GuardContext(project_root=tmp_path, cwd=tmp_path, tool="demo", session_id="01JT")
    result = run_lifecycle(hook, ctx, base_env=dict(os.environ), log=lambda m: None, turn=7)
    assert result.ok() and result.name == "waiting_for_input"
    assert out.read_text().strip() == "turn 7 env 7"
    post = run_lifecycle(hook, ctx, base_env=dict(os.environ), log=lambda m: None)
    assert post.ok() and out.read_text().strip() == "turn  env"   # no turn: empty, never literal braces


def test_reason_placeholder_environment_and_stdin_json(tmp_path: Path, env: dict[str, str]) -> None:
    out, stdin_copy = tmp_path / "out", tmp_path / "stdin.json"
    cfg = load(tmp_path, env, f"""
        [waiting_for_input]
        command = "cat > {stdin_copy}; echo {{reason}} $WRAPAGENT_REASON > {out}"
    """)
    hook = cfg.hook_for("waiting_for_input")
    assert hook is not None
    ctx = GuardContext(project_root=tmp_path, cwd=tmp_path, tool="demo", session_id="01JT")
    for reason in ("idle", "dialog"):
        result = run_lifecycle(hook, ctx, base_env=dict(os.environ), log=lambda m: None, turn=3,
                               reason=reason)
        assert result.ok()
        assert out.read_text().split() == [reason, reason]
        assert json.loads(stdin_copy.read_text()) == {"session_id": "01JT", "tool": "demo", "turn": 3,
                                                      "reason": reason}
    post = run_lifecycle(hook, ctx, base_env=dict(os.environ), log=lambda m: None)
    assert post.ok() and out.read_text().strip() == "" and stdin_copy.read_text() == ""
