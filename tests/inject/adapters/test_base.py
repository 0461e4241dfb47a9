"""Each adapter finds the prompt in its tool's argv, or says it is unsure."""

from __future__ import annotations

import json

import pytest

from wrapagent.inject.adapters import adapter_for
from wrapagent.inject.adapters.opencode import quote_join


def plan(tool: str, *args: str, piped: bool = False):
    return adapter_for(tool).plan_prompt(list(args), stdin_piped=piped)


@pytest.mark.parametrize("tool, args, kind, index, oneshot", [
    ("codex", ["hello"], "argv", 1, False),
    ("codex", ["-m", "o3", "--no-daemon", "hello"], "argv", 4, False),
    ("codex", ["--model=o3", "hello"], "argv", 2, False),
    ("codex", [], "interactive", None, False),
    ("codex", ["exec", "hello"], "argv", 2, True),
    ("codex", ["exec", "--skip-git-repo-check", "-m", "x", "hi"], "argv", 5, True),
    ("codex", ["e", "hi"], "argv", 2, True),
    ("codex", ["login"], "none", None, False),
    ("codex", ["resume", "abc"], "interactive", None, False),   # the resumed composer gets them
    ("codex", ["resume", "--last"], "interactive", None, False),
    ("codex", ["resume"], "interactive", None, False),
    ("codex", ["-i", "img.png", "hello"], "none", None, False),   # variadic: unsure
    ("codex", ["--", "--not-an-option"], "argv", 2, False),
    ("claude", ["hello"], "argv", 1, False),
    ("claude", ["-p", "hello"], "argv", 2, True),
    ("claude", ["--print", "--model", "opus", "hello"], "argv", 4, True),
    ("claude", ["--add-dir", "a", "b", "hello"], "none", None, False),  # variadic: unsure
    ("claude", ["mcp", "list"], "none", None, False),
    ("claude", ["-c"], "interactive", None, False),
    ("gemini", ["hello"], "argv", 1, False),
    ("gemini", ["-p", "hello"], "argv", 2, False),
    ("gemini", ["-i", "hello"], "argv", 2, False),
    ("gemini", ["-m", "flash", "--prompt-interactive", "hi"], "argv", 4, False),
    ("gemini", [], "interactive", None, False),
    ("gemini", ["-e", "ext"], "none", None, False),
    ("opencode", [], "interactive", None, False),
    ("opencode", ["--prompt", "hi"], "argv", 2, False),
    ("opencode", ["some/project"], "interactive", None, False),  # positional is a project dir
    ("opencode", ["auth", "login"], "none", None, False),
])
def test_plan(tool, args, kind, index, oneshot) -> None:
    p = plan(tool, *args)
    assert (p.kind, p.index, p.oneshot) == (kind, index, oneshot), p


def test_stdin_plans() -> None:
    assert plan("codex", "exec", "-", piped=True).kind == "stdin"
    assert plan("codex", "exec", piped=True).kind == "stdin"
    assert plan("claude", "-p", piped=True).kind == "stdin"
    assert plan("opencode", "run", piped=True).kind == "stdin"


def test_opencode_run_args_move_to_stdin() -> None:
    p = plan("opencode", "run", "-m", "mock/x", "hello world", "again")
    assert p.kind == "stdin-args" and p.args == (4, 5) and p.oneshot


def test_quote_join_matches_opencode() -> None:
    assert quote_join(["a b", "c", 'say "hi" now']) == '"a b" c "say \\"hi\\" now"'


@pytest.mark.parametrize("tool, args, resume", [
    ("codex", ["resume", "--last"], True),
    ("codex", ["hello"], False),
    ("claude", ["-c"], True),
    ("claude", ["--resume=abc"], True),
    ("claude", ["-p", "hi"], False),
    ("gemini", ["--resume", "latest"], True),
    ("opencode", ["-s", "ses_1"], True),
    ("opencode", ["--continue"], True),
    ("opencode", [], False),
])
def test_is_resume(tool, args, resume) -> None:
    assert adapter_for(tool).is_resume(args) is resume


def test_opencode_child_env_merges_user_config() -> None:
    env = adapter_for("opencode").child_env({"OPENCODE_CONFIG_CONTENT": '{"theme": "x"}'})
    assert json.loads(env["OPENCODE_CONFIG_CONTENT"]) == {
        "theme": "x", "experimental": {"disable_paste_summary": True}}
    env = adapter_for("opencode").child_env({})
    assert json.loads(env["OPENCODE_CONFIG_CONTENT"]) == {
        "experimental": {"disable_paste_summary": True}}


def test_unknown_tool_gets_generic_adapter() -> None:
    a = adapter_for("/usr/local/bin/aider")
    assert a.name == "aider" and a.requires_bracketed_paste and a.ready_patterns == ()
    assert a.plan_prompt(["hello"], stdin_piped=False).kind == "interactive"


def test_csa_aliases() -> None:
    assert adapter_for("claude-code").name == "claude"
    assert adapter_for("gemini-cli").name == "gemini"
