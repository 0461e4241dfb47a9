"""Any tool wrapagent has no adapter for: ready by the generic rule, and no prompt taken from its argv."""

from __future__ import annotations

from wrapagent.inject.adapters import adapter_for
from wrapagent.inject.adapters.generic import generic_adapter


def test_an_unknown_tool_gets_the_generic_rule_under_its_own_name() -> None:
    adapter = adapter_for("/opt/bin/aider")
    assert adapter == generic_adapter("aider") and adapter.name == "aider"
    assert adapter.ready_patterns == () and adapter.requires_bracketed_paste


def test_its_argv_is_never_read_as_a_prompt() -> None:
    plan = generic_adapter("aider").plan_prompt(["--model", "x", "fix the bug"], stdin_piped=False)
    assert plan.kind != "argv"
