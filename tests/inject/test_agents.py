"""Which programs get typed input: the agent list, config names, and what is not an agent."""

from __future__ import annotations

import pytest

from wrapagent.inject.agents import BUILTIN_AGENTS, is_agent, kind_of, program_name


@pytest.mark.parametrize("program", ["codex", "claude", "gemini", "opencode", "demo", "aider",
                                     "qwen", "goose", "crush", "cursor-agent", "amp",
                                     "/usr/local/bin/codex", "/opt/x/Claude", "aider3", "goose-1.2",
                                     "opencode.exe"])
def test_known_agents_are_agents(program: str) -> None:
    assert is_agent(program)
    assert kind_of(program).startswith("agent")


@pytest.mark.parametrize("program", ["bash", "/bin/sh", "python3", "python3.12", "vim", "node",
                                     "less", "zsh", "", "/"])
def test_shells_repls_editors_are_not(program: str) -> None:
    assert not is_agent(program)
    assert not kind_of(program).startswith("agent")


def test_unknown_program_is_not_an_agent_until_configured() -> None:
    assert not is_agent("mytui")
    assert kind_of("mytui") == "not an agent"
    assert is_agent("mytui", configured=["mytui"])
    assert is_agent("/home/u/bin/mytui", configured=["/elsewhere/mytui"])
    assert kind_of("mytui", ["mytui"]) == "agent (configured)"
    assert not is_agent("mytui", configured=["", "  ", "other"])


def test_kind_names_shells() -> None:
    assert kind_of("bash") == "shell, REPL or editor"
    assert kind_of("python3") == "shell, REPL or editor"


def test_every_builtin_name_is_stable_under_normalising() -> None:
    for name in BUILTIN_AGENTS:
        assert program_name(name) == name, name
