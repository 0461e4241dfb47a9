"""claude's adapter: its composer's markers on every recorded release, its argv, its keys."""

from __future__ import annotations

import pytest

from recorded_screens import markers_show, screens
from wrapagent.inject.adapters import adapter_for
from wrapagent.inject.adapters.claude import ADAPTER


def test_the_name_and_its_alias_pick_it() -> None:
    assert adapter_for("/usr/local/bin/claude") is ADAPTER and adapter_for("claude-code") is ADAPTER


@pytest.mark.parametrize("name", ["empty-start", "empty-after-reset", "empty-up-key"])
def test_the_markers_show_on_its_ready_screens(name: str) -> None:
    found = screens("claude", name)
    assert found and all(markers_show(ADAPTER.ready_patterns, text) for _, text in found)


def test_a_dialog_over_the_composer_does_not_show_them_all() -> None:
    """The composer glyph shows behind a dialog; the footer's key hint does not: not ready."""
    found = screens("claude", "dialog-folder-trust")
    assert found and not any(markers_show(ADAPTER.ready_patterns, text) for _, text in found)


@pytest.mark.parametrize("args,resume", [(["-c"], True), (["--resume", "abc"], True), (["-r"], True),
                                         (["hello"], False), ([], False), (["-p", "hi"], False)])
def test_a_resumed_conversation_is_told_from_a_new_one(args: list[str], resume: bool) -> None:
    assert ADAPTER.is_resume(args) is resume


def test_its_blocks_are_typed_and_a_fresh_conversation_is_clear() -> None:
    assert ADAPTER.delivery == "typed"
    assert ADAPTER.reset_commands == ("/clear",) and ADAPTER.compact_commands == ("/compact",)
