"""`doctor`'s judgement, read from plain report data alone: each rule with the facts that trigger it."""

from __future__ import annotations

import copy

import pytest

from wrapagent.commands.doctor_findings import ERROR, INFO, WARNING, findings

HEALTHY = {
    "layers": [{"kind": "global-hooks", "path": "/c/hooks.toml", "exists": True, "used": True, "trusted": None,
                "problems": []}],
    "hooks": {"guards": [{"name": "g"}], "pre_session": None},
    "tools": [{"name": "codex", "found": True, "wrapped": "shim", "shim": {"installed": True, "active": True},
               "alias": {}}],
    "sessions": {"root": "/s", "exists": True, "git": {"repo": True}},
    "last_session": None,
}


def with_(**changes) -> dict:
    report = copy.deepcopy(HEALTHY)
    report.update(changes)
    return report


def said(report: dict, env: dict | None = None) -> list[tuple[str, str]]:
    return [(f["level"], f["message"]) for f in findings(report, env or {})]


def test_a_healthy_setup_has_nothing_to_say() -> None:
    assert said(HEALTHY) == []


def test_a_broken_file_is_an_error_and_says_none_of_it_is_used() -> None:
    layer = dict(HEALTHY["layers"][0], used=False, problems=[{"severity": "error", "text": "line 3: bad"}])
    (level, message), = said(with_(layers=[layer]))
    assert level == ERROR and "has 1 error(s), so none of it is used; first: line 3: bad" in message


def test_an_untrusted_or_changed_project_file_is_named_with_the_command_to_trust_it() -> None:
    layer = {"kind": "project-hooks", "path": "/p/.wrapagent/hooks.toml", "exists": True, "used": False,
             "trusted": False, "trust": "changed", "problems": []}
    (level, message), = said(with_(layers=[layer]))
    assert level == WARNING and "is changed since you trusted it" in message
    assert "`wrapagent trust /p/.wrapagent/hooks.toml`" in message


def test_nothing_to_inject_and_no_cli_installed() -> None:
    report = with_(hooks={"guards": [], "pre_session": None},
                   tools=[{"name": "codex", "found": False}, {"name": "claude", "found": False}])
    messages = [m for _, m in said(report)]
    assert any(m.startswith("no prompt guards and no pre_session hook in effect") for m in messages)
    assert any(m.startswith("none of the coding CLIs is installed (codex, claude)") for m in messages)


def test_a_tool_typed_without_wrapagent_and_the_kill_switch() -> None:
    tool = dict(HEALTHY["tools"][0], wrapped="no", shim={}, alias={"shell": "zsh"})
    messages = [m for _, m in said(with_(tools=[tool]), {"WRAPAGENT_DISABLE": "1"})]
    assert messages[0].startswith("WRAPAGENT_DISABLE=1 is set")
    assert "`wrapagent init zsh` in your shell rc" in messages[1]


@pytest.mark.parametrize("last,level,start", [
    ({"id": "01K", "tool": "codex", "injection": {"status": "lost", "notes": ["typed too early"]}},
     ERROR, "the last session (01K, codex) did not get the blocks: typed too early"),
    ({"id": "01K", "tool": "codex", "state": "finished", "injection": {"status": "pending"}},
     WARNING, "the last session (01K) ended with the injection still pending"),
    ({"id": "01K", "tool": "codex", "injection": {"status": "submitted"},
      "hooks": [{"kind": "lifecycle", "name": "pre_run", "timed_out": True}]},
     ERROR, "the last session's lifecycle 'pre_run' failed (timed out)"),
])
def test_the_last_session(last: dict, level: str, start: str) -> None:
    found = said(with_(last_session=last))
    assert found and found[0][0] == level and found[0][1].startswith(start)


def test_sessions_not_yet_committed_are_listed_three_at_most() -> None:
    sessions = {"root": "/s", "exists": True, "git": {"repo": True, "uncommitted_sessions": ["a", "b", "c", "d"]}}
    (level, message), = said(with_(sessions=sessions))
    assert level == INFO and message.startswith("4 session folder(s) not committed to the sessions repository "
                                                "(a, b, c …)")
