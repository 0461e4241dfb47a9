"""The demo agent's adapter: the prompt it draws, its quit key, both reset commands."""

from __future__ import annotations

import re

from wrapagent.inject.adapters import adapter_for
from wrapagent.inject.adapters.demo import ADAPTER


def test_the_demo_name_picks_it() -> None:
    assert adapter_for("demo") is ADAPTER


def test_its_markers_show_on_the_demo_agents_prompt() -> None:
    screen = "wrapagent demo agent\n\ndemo> "
    assert ADAPTER.ready_patterns and all(re.search(p, screen) for p in ADAPTER.ready_patterns)
    assert not all(re.search(p, "thinking...") for p in ADAPTER.ready_patterns)


def test_it_quits_on_ctrl_d_and_resets_like_both_kinds_of_cli() -> None:
    assert ADAPTER.quit_keys == (b"\x04",) and set(ADAPTER.reset_commands) == {"/clear", "/new"}
    assert ADAPTER.is_resume(["--resume"]) and not ADAPTER.is_resume([])
