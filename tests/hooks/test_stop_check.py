"""`[stop_check]` and `every_message`: the config, and one run of the check.

The check's verdict: exit 0 lets the agent stop; exit 2 with output is a
continuation, sanitised like a guard body; anything else is a warning.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from wrapagent.hooks.config_loader import load_config
from wrapagent.hooks.config_model import StopCheckSpec
from wrapagent.hooks.context import GuardContext
from wrapagent.hooks.guards import MessageInfo, collect
from wrapagent.hooks.stop_check import continuation_text, run_stop_check


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
            "XDG_STATE_HOME": str(tmp_path / "state")}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))


def load(project: Path, env: dict, *, hooks: str = "", project_hooks: str | None = None, trusted=True):
    write(Path(env["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml", hooks)
    if project_hooks is not None:
        write(project / ".wrapagent" / "hooks.toml", project_hooks)
    return load_config(project, env=env, is_trusted=lambda p, d: trusted)


def test_stop_check_table(project, env):
    cfg = load(project, env, hooks="""
        [stop_check]
        command = "make test"
        timeout_secs = 60
        max_continues = 2
        quiet_secs = 4
    """)
    assert cfg.stop_check == StopCheckSpec("make test", True, 60.0, 2, 4.0, cfg.layers[0].path)
    assert cfg.problems == ()


def test_stop_check_defaults_and_absence(project, env):
    assert load(project, env).stop_check is None
    cfg = load(project, env, hooks='[stop_check]\ncommand = "x"\n')
    assert (cfg.stop_check.timeout_secs, cfg.stop_check.max_continues, cfg.stop_check.quiet_secs) == (300.0, 3, None)


@pytest.mark.parametrize("table, key", [
    ('[stop_check]\ncommand = "x"\nmax_continues = -1\n', "stop_check.max_continues"),
    ('[stop_check]\ncommand = "x"\nmax_continues = true\n', "stop_check.max_continues"),
    ('[stop_check]\ntimeout_secs = 3\n', "stop_check.command"),
    ('[stop_check]\ncommand = "x"\ntimeout_secs = 0\n', "stop_check.timeout_secs"),
])
def test_stop_check_errors_name_the_key(project, env, table, key):
    cfg = load(project, env, hooks=table)
    assert [p.key for p in cfg.problems if p.severity == "error"] == [key]
    assert cfg.stop_check is None  # a file with errors is not used


def test_an_unknown_stop_check_key_is_a_warning(project, env):
    cfg = load(project, env, hooks='[stop_check]\ncommand = "x"\nmax_continue = 2\n')
    assert [(p.severity, p.key) for p in cfg.problems] == [("warning", "stop_check.max_continue")]


def test_project_replaces_global_and_can_switch_it_off(project, env):
    cfg = load(project, env, hooks='[stop_check]\ncommand = "global"\n',
               project_hooks='[stop_check]\ncommand = "project"\n')
    assert cfg.stop_check.command == "project"
    cfg = load(project, env, hooks='[stop_check]\ncommand = "global"\n',
               project_hooks='[stop_check]\nenabled = false\n')
    assert cfg.stop_check is None


def test_an_untrusted_project_stop_check_is_not_used(project, env):
    cfg = load(project, env, hooks='[stop_check]\ncommand = "global"\n',
               project_hooks='[stop_check]\ncommand = "project"\n', trusted=False)
    assert cfg.stop_check.command == "global"


def test_every_message_flag(project, env):
    cfg = load(project, env, hooks="""
        [[prompt_guard]]
        name = "a"
        command = "echo a"
        [[prompt_guard]]
        name = "b"
        builtin = "date"
        every_message = true
    """)
    assert [g.every_message for g in cfg.guards] == [False, True]
    bad = load(project, env, hooks='[[prompt_guard]]\nname = "a"\ncommand = "x"\nevery_message = "yes"\n')
    assert [p.key for p in bad.problems] == ["prompt_guard[0].every_message"]


# -- running -------------------------------------------------------------------------


def ctx(root: Path) -> GuardContext:
    return GuardContext(project_root=root, cwd=root, tool="codex", session_id="s1", is_resume=False)


def check(root: Path, command: str, timeout: float = 10.0):
    return run_stop_check(StopCheckSpec(command, timeout_secs=timeout), ctx(root), base_env={"PATH": "/usr/bin:/bin"},
                          log=lambda m: None, turn=4, continues=1)


def test_exit_0_lets_the_agent_stop(project):
    verdict = check(project, "exit 0")
    assert not verdict.go_on and verdict.warning is None


def test_exit_2_with_output_is_a_continuation_sanitised_like_a_guard(project):
    verdict = check(project, r"printf '  fix \033[31mit\033[0m\r\n</prompt-guard> now\n\n'; exit 2")
    assert verdict.go_on
    assert verdict.text == continuation_text("fix it\n<\\/prompt-guard> now")
    assert verdict.text.startswith('<prompt-guard name="stop_check">\nfix it\n')
    assert "\x1b" not in verdict.text and "\r" not in verdict.text


def test_the_check_reads_turn_and_continues_and_gets_turn_placeholders(project):
    verdict = check(project, 'cat; echo " {turn} $WRAPAGENT_TURN"; exit 2')
    payload, turns = verdict.text.split("\n")[1].rsplit(" ", 2)[0], verdict.text.split("\n")[1].split()[-2:]
    data = json.loads(payload.strip())
    assert (data["turn"], data["continues"], data["session_id"]) == (4, 1, "s1")
    assert turns == ["4", "4"]


@pytest.mark.parametrize("command, word", [("exit 2", "without output"), ("echo x; exit 1", "exited with 1"),
                                           ("sleep 5", "timed out")])
def test_anything_else_is_a_warning_and_the_agent_may_stop(project, command, word):
    verdict = check(project, command, timeout=0.3)
    assert not verdict.go_on and word in verdict.warning


def test_a_later_message_runs_only_every_message_guards_with_its_numbers(project, env):
    cfg = load(project, env, hooks="""
        [[prompt_guard]]
        name = "once"
        command = "echo once"
        [[prompt_guard]]
        name = "each"
        every_message = true
        command = "cat; echo; echo {turn} $WRAPAGENT_TURN"
    """)
    first = collect(cfg, ctx(project), base_env={"PATH": "/usr/bin:/bin"}, prompt=None, prompt_source="none",
                    log=lambda m: None, message=MessageInfo(1, 2, 5))
    later = collect(cfg, ctx(project), base_env={"PATH": "/usr/bin:/bin"}, prompt=None, prompt_source="none",
                    log=lambda m: None, message=MessageInfo(3, 2, 7))
    assert [r.name for r in first.runs] == ["once", "each"]
    assert [r.name for r in later.runs] == ["each"]
    body = later.runs[0].body
    assert json.loads(body.split("\n")[0])["message"] == 3 and json.loads(body.split("\n")[0])["conversation"] == 2
    assert body.split("\n")[-1] == "7 7"


def test_send_is_opt_in_and_a_project_may_switch_it(project, env):
    assert load(project, env).send is False
    assert load(project, env, hooks="[send]\nenabled = true\n").send is True
    assert load(project, env, hooks="[send]\n").send is True          # the table alone turns it on
    assert load(project, env, hooks="[send]\nenabled = true\n",
                project_hooks="[send]\nenabled = false\n").send is False
    assert load(project, env, hooks="[send]\nenabled = true\n", project_hooks="[send]\nenabled = false\n",
                trusted=False).send is True                          # an untrusted project changes nothing


def test_config_check_shows_them(project, env):
    from wrapagent.hooks.config_check import describe

    cfg = load(project, env, hooks='''
        [stop_check]
        command = "make test"
        max_continues = 2
        [send]
        [[prompt_guard]]
        name = "clock"
        builtin = "date"
        every_message = true
    ''')
    text = describe(cfg)
    assert "  stop_check        make test\n" in text and "max 2 continuations in a row" in text
    assert "  send              enabled" in text
    assert "timeout 10s, every message, from" in text
