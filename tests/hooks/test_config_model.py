"""The effective configuration as values: which hook runs for an event, problems across layers, tool names."""

from __future__ import annotations

import pytest

from wrapagent.hooks.config_model import (DEFAULT_LIFECYCLE_TIMEOUT, DEFAULT_SESSION_COMPLETE, Config, Layer,
                                          LifecycleHook, Problem, normalize_tool)


def hook(event: str, enabled: bool = True) -> LifecycleHook:
    return LifecycleHook(event, f"echo {event}", enabled, 5.0, "/c/hooks.toml")


def test_an_unconfigured_session_complete_commits_the_session_by_default() -> None:
    default = Config().hook_for("session_complete")
    assert (default.command, default.enabled, default.timeout_secs) == (DEFAULT_SESSION_COMPLETE, True,
                                                                   DEFAULT_LIFECYCLE_TIMEOUT)
    assert Config().hook_for("pre_run") is None


def test_a_configured_hook_runs_and_a_disabled_one_does_not_not_even_the_default() -> None:
    config = Config(lifecycle={"pre_run": hook("pre_run"), "session_complete": hook("session_complete", False)})
    assert config.hook_for("pre_run").command == "echo pre_run"
    assert config.hook_for("session_complete") is None


def test_problems_of_every_layer_and_whether_any_is_an_error() -> None:
    warn = Problem("/c/hooks.toml", "warning", "unknown key, ignored", 3, "x")
    err = Problem("/p/.wrapagent/hooks.toml", "error", "expected a string", None, "command")
    layers = (Layer("global-hooks", "/c/hooks.toml", True, True, None, (warn,)),
              Layer("project-hooks", "/p/.wrapagent/hooks.toml", True, False, False, (err,)))
    config = Config(layers=layers)
    assert config.problems == (warn, err) and config.has_errors
    assert not Config(layers=layers[:1]).has_errors
    assert str(warn) == "/c/hooks.toml:3: x: unknown key, ignored"
    assert str(err) == "/p/.wrapagent/hooks.toml: command: expected a string"


def test_the_configuration_cannot_be_changed_once_made() -> None:
    config = Config(send=False)
    with pytest.raises((AttributeError, TypeError)):
        config.send = True  # type: ignore[misc]
    with pytest.raises(TypeError):  # the default table of hooks is read-only
        config.lifecycle["post_run"] = hook("post_run")  # type: ignore[index]


@pytest.mark.parametrize("name,canonical", [("Codex", "codex"), (" claude-code ", "claude"), ("gemini-cli", "gemini"),
                                            ("aider", "aider")])
def test_tool_names_are_canonical(name: str, canonical: str) -> None:
    assert normalize_tool(name) == canonical
