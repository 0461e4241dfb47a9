"""codex's adapter: its composer's marker on every recorded release, its argv, its keys."""

from __future__ import annotations

import pytest

from recorded_screens import markers_show, screens
from wrapagent.inject.adapters import adapter_for
from wrapagent.inject.adapters.codex import ADAPTER


def test_the_name_picks_it() -> None:
    assert adapter_for("codex") is ADAPTER


@pytest.mark.parametrize("name", ["empty-start", "empty-mode-key-once", "empty-after-lookalike-reply"])
def test_the_marker_shows_on_its_ready_screens(name: str) -> None:
    found = screens("codex", name)
    assert found and all(markers_show(ADAPTER.ready_patterns, text) for _, text in found)


def test_the_folder_trust_question_is_not_ready() -> None:
    found = screens("codex", "dialog-folder-trust")
    assert found and not any(markers_show(ADAPTER.ready_patterns, text) for _, text in found)


@pytest.mark.parametrize("args,resume", [(["resume"], True), (["resume", "--last"], True), (["hello"], False),
                                         (["exec", "resume"], False), ([], False)])
def test_resume_is_a_subcommand(args: list[str], resume: bool) -> None:
    assert ADAPTER.is_resume(args) is resume


def test_its_blocks_are_pasted_and_a_fresh_conversation_is_new() -> None:
    assert ADAPTER.delivery == "paste" and ADAPTER.reset_commands == ("/new",)
