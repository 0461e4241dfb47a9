"""gemini's adapter: its composer's marker on every recorded release, its argv, its keys."""

from __future__ import annotations

import pytest

from recorded_screens import markers_show, screens
from wrapagent.inject.adapters import adapter_for
from wrapagent.inject.adapters.gemini import ADAPTER


def test_the_name_and_its_alias_pick_it() -> None:
    assert adapter_for("gemini") is ADAPTER and adapter_for("gemini-cli") is ADAPTER


@pytest.mark.parametrize("name", ["empty-start", "empty-after-reset", "empty-up-key"])
def test_the_marker_shows_on_its_ready_screens(name: str) -> None:
    found = screens("gemini", name)
    assert found and all(markers_show(ADAPTER.ready_patterns, text) for _, text in found)


def test_a_composer_holding_text_is_not_the_empty_ready_one() -> None:
    found = screens("gemini", "text-typed")
    assert found and not any(markers_show(ADAPTER.ready_patterns, text) for _, text in found)


@pytest.mark.parametrize("args,resume", [(["-r", "latest"], True), (["--resume"], True), (["-p", "hi"], False)])
def test_a_resumed_conversation_is_told_from_a_new_one(args: list[str], resume: bool) -> None:
    assert ADAPTER.is_resume(args) is resume


def test_its_compaction_is_compress() -> None:
    assert ADAPTER.compact_commands == ("/compress",) and ADAPTER.reset_commands == ("/clear",)
