"""opencode's adapter: its start screen's markers, its argv, and the paste summary turned off for it."""

from __future__ import annotations

import json

import pytest

from recorded_screens import markers_show, screens
from wrapagent.inject.adapters import adapter_for
from wrapagent.inject.adapters.opencode import ADAPTER, quote_join


def test_the_name_picks_it() -> None:
    assert adapter_for("opencode") is ADAPTER


def test_the_markers_show_on_its_start_screen_of_every_release() -> None:
    found = screens("opencode", "empty-start")
    assert len(found) >= 2 and all(markers_show(ADAPTER.ready_patterns, text) for _, text in found)


def test_they_do_not_show_while_it_works() -> None:
    found = screens("opencode", "working-thinking")
    assert found and not any(markers_show(ADAPTER.ready_patterns, text) for _, text in found)


def test_the_paste_summary_is_turned_off_and_the_users_own_config_kept() -> None:
    env = ADAPTER.child_env({"OPENCODE_CONFIG_CONTENT": json.dumps({"model": "x", "experimental": {"a": 1}})})
    assert json.loads(env["OPENCODE_CONFIG_CONTENT"]) == {
        "model": "x", "experimental": {"a": 1, "disable_paste_summary": True}}
    assert json.loads(ADAPTER.child_env({})["OPENCODE_CONFIG_CONTENT"]) == {
        "experimental": {"disable_paste_summary": True}}
    mine = {"experimental": {"disable_paste_summary": False}}
    assert json.loads(ADAPTER.child_env({"OPENCODE_CONFIG_CONTENT": json.dumps(mine)})[
        "OPENCODE_CONFIG_CONTENT"]) == mine  # the user's own choice wins


def test_a_value_that_is_not_json_is_left_to_opencode() -> None:
    assert ADAPTER.child_env({"OPENCODE_CONFIG_CONTENT": "{oops"})["OPENCODE_CONFIG_CONTENT"] == "{oops"


def test_run_joins_its_arguments_as_opencode_does() -> None:
    assert quote_join(["fix", "the bug", 'say "hi" now']) == 'fix "the bug" "say \\"hi\\" now"'


@pytest.mark.parametrize("args,resume", [(["-c"], True), (["--session", "s1"], True), (["run", "x"], False)])
def test_a_resumed_session_is_told_from_a_new_one(args: list[str], resume: bool) -> None:
    assert ADAPTER.is_resume(args) is resume
