"""A project file may extend the global prompt guards (`[extend] prompt_guard = true`) instead of replacing them."""

from __future__ import annotations

from pathlib import Path

from wrapagent.commands.trust import describe_content
from wrapagent.hooks.config_check import as_json, describe
from tests.hooks.test_config_loader import env, global_hooks, layer, load, project, project_hooks  # noqa: F401

GLOBAL = """
[[prompt_guard]]
name = "branch"
builtin = "branch_protection"

[[prompt_guard]]
name = "git"
builtin = "git_status"
"""

PROJECT = """
[extend]
prompt_guard = true

[[prompt_guard]]
name = "git"
builtin = "git_status"
args = { max_bytes = 100 }

[[prompt_guard]]
name = "todo"
command = "cat {project_root}/TODO.md"
"""


def test_project_guards_come_after_the_global_ones_and_replace_a_namesake(project, env):  # noqa: F811
    global_hooks(env, GLOBAL)
    file = project_hooks(project, PROJECT)
    config = load(project, env)
    assert [(g.name, g.source) for g in config.guards] == [
        ("branch", str(Path(env["XDG_CONFIG_HOME"]) / "wrapagent" / "hooks.toml")),
        ("git", str(file)),
        ("todo", str(file)),
    ]
    assert dict(config.guards[1].args) == {"max_bytes": 100}
    assert layer(config, "project-hooks").problems == ()


def test_without_extend_the_project_list_replaces(project, env):  # noqa: F811
    global_hooks(env, GLOBAL)
    project_hooks(project, PROJECT.replace("[extend]\nprompt_guard = true\n", ""))
    assert [g.name for g in load(project, env).guards] == ["git", "todo"]


def test_extend_with_an_empty_list_keeps_the_global_guards(project, env):  # noqa: F811
    global_hooks(env, GLOBAL)
    project_hooks(project, "prompt_guard = []\n[extend]\nprompt_guard = true\n")
    assert [g.name for g in load(project, env).guards] == ["branch", "git"]


def test_config_check_shows_the_extension(project, env):  # noqa: F811
    global_hooks(env, GLOBAL)
    file = project_hooks(project, PROJECT)
    config = load(project, env)
    text = describe(config)
    assert "Prompt guards (the global ones extended by the project's, [extend] prompt_guard = true):" in text
    assert f"from {file}" in text
    assert [g["source"] for g in as_json(config)["guards"]][-1] == str(file)


def test_extend_in_the_global_file_is_a_warning(project, env):  # noqa: F811
    global_hooks(env, "[extend]\nprompt_guard = true\n" + GLOBAL)
    config = load(project, env)
    problems = layer(config, "global-hooks").problems
    assert [(p.severity, p.key) for p in problems] == [("warning", "extend.prompt_guard")]
    assert [g.name for g in config.guards] == ["branch", "git"]


def test_wrong_type_or_unknown_key_is_reported(project, env):  # noqa: F811
    project_hooks(project, '[extend]\nprompt_guard = "yes"\nhooks = true\n')
    problems = layer(load(project, env), "project-hooks").problems
    keys = {(p.severity, p.key) for p in problems}
    assert ("error", "extend.prompt_guard") in keys and ("warning", "extend.hooks") in keys


def test_the_trust_review_says_the_guards_are_added(tmp_path):
    text = describe_content(tmp_path / "p" / ".wrapagent" / "hooks.toml", PROJECT.encode())
    assert "extend.prompt_guard = true: the guards above come after your global prompt guards" in text
    assert "replace your global prompt guards" not in text
