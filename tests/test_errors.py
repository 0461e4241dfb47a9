"""The user-facing failures carry the shell's exit codes and print as their message alone."""

from __future__ import annotations

import pytest

from wrapagent.errors import ToolNotExecutable, ToolNotFound, WrapagentError


def test_a_failure_prints_as_its_message_with_exit_code_1_by_default() -> None:
    exc = WrapagentError("no such session: 01ABC")
    assert (str(exc), exc.message, exc.exit_code) == ("no such session: 01ABC", "no such session: 01ABC", 1)
    assert WrapagentError("config is broken", 2).exit_code == 2


@pytest.mark.parametrize("exc,code", [(ToolNotFound("codex: not found"), 127),
                                      (ToolNotExecutable("codex: permission denied"), 126)])
def test_a_tool_that_cannot_run_exits_as_a_shell_would(exc: WrapagentError, code: int) -> None:
    assert isinstance(exc, WrapagentError) and exc.exit_code == code and str(exc).startswith("codex: ")


def test_only_the_path_lookup_says_it_searched_the_path() -> None:
    """A typo'd subcommand is suggested only when the PATH lookup itself failed."""
    assert ToolNotFound("x").searched_path is False
    assert ToolNotFound("x", searched_path=True).searched_path is True
