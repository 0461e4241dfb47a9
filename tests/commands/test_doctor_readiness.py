"""Which readiness rule fired (`ready_by`) and the tool's version, as `sessions show`, `doctor` and
`doctor --probe` tell them, from records and probe results made for the purpose.

A `generic` for a known tool means its own ready markers did not show (its
screen changed) and the fallback rule still delivered the blocks: doctor
says so, with the release, and what to do (nothing; report it).
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from wrapagent import paths
from wrapagent.commands import doctor, doctor_readiness, doctor_report
from wrapagent.commands import sessions as sessions_cmd
from wrapagent.commands.sessions import render_show


def injection(ready_by: str | None, after: float | None = 1.2, conversation: int = 1) -> dict:
    return {"status": "submitted", "path": "interactive", "text": "<prompt-guard name=\"g\">\nhi\n</prompt-guard>\n",
            "at": "2026-11-23T10:00:01+00:00", "attempts": 1, "ready_after_s": after, "ready_by": ready_by,
            "first_key_delay_ms": 50.0, "notes": [], "conversation": conversation, "message": 1}


def make_record(session_id: str, tool: str, ready_by: str | None, version: str | None,
                project: Path, later: list[dict] | None = None) -> dict:
    first = injection(ready_by)
    return {"id": session_id, "tool": tool, "transport": tool, "argv": [tool], "executable": f"/usr/bin/{tool}",
            "cwd": str(project), "project_root": str(project), "mode": "pty", "state": "finished",
            "started_at": "2026-11-23T10:00:00+00:00", "ended_at": "2026-11-23T10:01:00+00:00",
            "duration_s": 60.0, "exit_code": 0, "signal": None, "hooks": [], "warnings": [],
            "injection": first, "injections": [first, *(later or [])] if later else [],
            "tool_version": version, "turns": []}


def store(record: dict, env: dict[str, str]) -> Path:
    folder = paths.sessions_root(Path(record["project_root"]), env) / record["id"]
    folder.mkdir(parents=True)
    (folder / "session.json").write_text(json.dumps(record))
    return folder


# --------------------------------------------------------------------------- sessions show


def test_show_names_the_generic_rule_and_the_version(tmp_path: Path) -> None:
    text = render_show(make_record("01JX", "codex", "generic", "0.140.0", tmp_path), None)
    assert "  version     0.140.0\n" in text
    assert ("Injection: submitted (path interactive, attempts 1, ready after 1.20s "
            "(generic rule: codex's own markers did not show), first key held 50.0 ms)") in text


def test_show_names_the_marker_rule(tmp_path: Path) -> None:
    text = render_show(make_record("01JX", "claude", "marker", "2.1.330", tmp_path), None)
    assert "  version     2.1.330\n" in text
    assert "ready after 1.20s (its own screen markers)" in text
    assert "generic" not in text


def test_show_a_reset_that_fell_back_and_an_unknown_version(tmp_path: Path) -> None:
    later = [injection("generic", after=0.5, conversation=2), injection("quiet", after=0.3, conversation=3)]
    record = make_record("01JX", "gemini", "marker", None, tmp_path, later=later)
    text = render_show(record, None)
    assert "  version     unknown\n" in text
    assert "Injection after reset, conversation 2: submitted, ready after 0.50s (generic rule: gemini's own " \
           "markers did not show)" in text
    assert "conversation 3: submitted, ready after 0.30s (output quiet after the reset)" in text


def test_show_of_a_running_session_says_the_version_comes_at_its_end(tmp_path: Path) -> None:
    record = make_record("01JX", "codex", None, None, tmp_path)
    record["state"] = "running"
    assert "  version     (recorded when it ends)\n" in render_show(record, None)


def test_show_of_a_tool_without_an_adapter_does_not_blame_its_markers(tmp_path: Path) -> None:
    text = render_show(make_record("01JX", "mytui", "generic", None, tmp_path), None)
    assert "ready after 1.20s (generic rule)," in text


def test_show_escapes_what_the_record_says(tmp_path: Path) -> None:
    """A record edited by hand (or written by a wrapagent with a bug) cannot drive the terminal."""
    record = make_record("01JX", "codex", "gen\x1b]0;x\x07", "1.0\x1b[2J", tmp_path)
    text = render_show(record, None)
    assert "\x1b" not in text and "\x07" not in text
    assert "1.0\\x1b[2J" in text and "rule gen\\x1b]0;x\\x07" in text


def test_show_and_list_json_carry_both(tmp_path: Path) -> None:
    env = dict(os.environ)
    store(make_record("01JX0000000000000000000001", "codex", "generic", "0.140.0", tmp_path), env)
    out, err = io.StringIO(), io.StringIO()
    assert sessions_cmd.main(["show", "01JX0000000000000000000001", "--json"], out=out, err=err, env=env) == 0
    data = json.loads(out.getvalue())
    assert data["tool_version"] == "0.140.0" and data["injection"]["ready_by"] == "generic"
    out = io.StringIO()
    assert sessions_cmd.main(["list", "--json"], out=out, err=err, env=env) == 0
    (entry,) = json.loads(out.getvalue())
    assert (entry["ready_by"], entry["tool_version"]) == ("generic", "0.140.0")


# --------------------------------------------------------------------------- doctor


def write_exe(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture
def history(tmp_path: Path) -> dict:
    """codex: an older session by its markers, the newest by the generic rule; claude: by its markers;
    gemini: its newest session never saw the ready screen, the one before fell back after a reset."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool, version in (("codex", "0.141.0"), ("claude", "2.1.330"), ("gemini", "0.61.0")):
        write_exe(bindir / tool, f'#!/bin/sh\necho "{tool} {version}"\n')
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    project = tmp_path / "proj"
    project.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    store(make_record("01JX0000000000000000000001", "codex", "marker", "0.139.0", project), env)
    store(make_record("01JX0000000000000000000002", "claude", "marker", "2.1.330", project), env)
    store(make_record("01JX0000000000000000000003", "gemini", "marker", "0.60.0", project,
                      later=[injection("generic", conversation=2)]), env)
    store(make_record("01JX0000000000000000000004", "codex", "generic", "0.140.0", other), env)  # another project
    never = make_record("01JX0000000000000000000005", "gemini", None, "0.61.0", project)
    never["injection"].update(status="lost", ready_after_s=None)
    store(never, env)
    return {"env": env, "project": project}


def test_recent_readiness_takes_each_tools_newest_session_that_saw_it_ready(history: dict) -> None:
    found = doctor_readiness.recent_readiness(["codex", "claude", "gemini", "opencode"], history["env"])
    assert found["codex"]["id"] == "01JX0000000000000000000004"
    assert (found["codex"]["ready_by"], found["codex"]["tool_version"]) == ("generic", "0.140.0")
    assert found["claude"]["ready_by"] == "marker"
    assert found["gemini"]["id"] == "01JX0000000000000000000003"
    assert (found["gemini"]["ready_by"], found["gemini"]["conversations"]) == ("generic", [2])
    assert found["opencode"] is None


def test_doctor_says_a_known_tool_was_only_recognised_by_the_fallback(history: dict) -> None:
    report = doctor.collect(cwd=history["project"], env=history["env"])
    tools = {t["name"]: t for t in report["tools"]}
    assert tools["codex"]["version"] == "0.141.0"  # what is installed now
    assert tools["codex"]["last_ready"]["ready_by"] == "generic"
    fallbacks = [f for f in report["findings"] if "screen changed" in f["message"]]
    assert [f["level"] for f in fallbacks] == ["info", "info"]
    codex, gemini = fallbacks
    assert codex["message"].startswith("your codex's screen changed (codex 0.140.0): wrapagent did not see "
                                       "the ready markers it knows for codex in your last session with it "
                                       "(01JX0000000000000000000004), and injection still worked through the "
                                       "generic rule")
    assert "Nothing to do" in codex["message"] and "`wrapagent doctor --probe codex`" in codex["message"]
    assert gemini["message"].startswith("your gemini's screen changed (gemini 0.60.0): wrapagent did not see "
                                        "the ready markers it knows for gemini after a reset")
    assert not any("claude" in f["message"] for f in fallbacks)
    text = doctor_report.render(report)
    tools_text = text.split("\nTools:\n", 1)[1].split("\n\n", 1)[0]
    assert ("            last seen ready: by the generic rule (its own markers did not show) (0.140.0, "
            "session 01JX0000000000000000000004, ") in tools_text
    assert "            last seen ready: by its own screen markers (2.1.330, session 01JX0000000000000000000002, " \
           in tools_text
    assert "  info: your codex's screen changed (codex 0.140.0)" in text


def test_doctor_is_quiet_once_the_markers_are_seen_again(history: dict) -> None:
    store(make_record("01JX0000000000000000000009", "codex", "marker", "0.142.0", history["project"]),
          history["env"])
    report = doctor.collect(cwd=history["project"], env=history["env"])
    assert not any("codex's screen changed" in f["message"] for f in report["findings"])
    last = doctor_report.render(report).split("\nLast session: ", 1)[1]
    assert last.startswith("01JX0000000000000000000009 (codex 0.142.0, ")
    assert "  injection: submitted (path interactive, tool ready after 1.20s (its own screen markers))" in last


# --------------------------------------------------------------------------- doctor --probe


def probe_result(ready_by: str | None, adapter: str = "codex", version: str | None = "0.140.0") -> dict:
    return {"tool": adapter, "argv": [f"/usr/bin/{adapter}"], "executable": f"/usr/bin/{adapter}",
            "adapter": adapter, "rows": 40, "cols": 120, "timeout_s": 30.0, "started": True, "error": None,
            "ready": ready_by is not None, "ready_after_s": 2.5 if ready_by else None, "ready_by": ready_by,
            "tool_version": version, "markers": [{"pattern": "Ask Codex to do anything", "on_screen": False}],
            "bracketed_paste": True, "bracketed_paste_required": True, "screen": "", "queries_answered": 0,
            "emulator_error": None,
            "quit": {"keys": ["\x03"], "keys_sent": 1, "exited_before_quit": False, "sigterm": False,
                     "sigkill": False, "exit_code": 0, "signal": None, "seconds": 0.1}}


def test_probe_text_for_the_generic_rule() -> None:
    text = doctor_report.render_probe(probe_result("generic"))
    assert "  version       0.140.0\n" in text
    assert "  readiness     FIRED after 2.50s by the generic rule (wrapagent would inject" in text
    assert "  note          your codex's screen changed (codex 0.140.0): wrapagent did not see the ready " \
           "markers it knows for codex on this start" in text


def test_probe_text_for_the_markers() -> None:
    text = doctor_report.render_probe(probe_result("marker"))
    assert "  readiness     FIRED after 2.50s by its own screen markers (wrapagent would inject" in text
    assert "screen changed" not in text


def test_probe_text_for_a_tool_without_an_adapter() -> None:
    """For a tool wrapagent has no adapter for, the generic rule is the only one: nothing changed."""
    text = doctor_report.render_probe(probe_result("generic", adapter="mytui", version=None))
    assert "FIRED after 2.50s by the generic rule" in text and "screen changed" not in text
    assert "  version       unknown\n" in text


# --------------------------------------------------------------------------- end to end


def fake_codex(folder: Path, version: str = "0.140.0") -> Path:
    """A `codex` that is really the demo agent: bracketed paste on, never codex's own markers
    (as codex releases before 0.150 show). Installed as npm does (`.bin/codex` -> the package's
    script, its package.json says the release): the version is known without running anything."""
    import sys

    package = folder / "node_modules" / "@openai" / "codex"
    (package / "bin").mkdir(parents=True, exist_ok=True)
    (package / "package.json").write_text(json.dumps({"name": "@openai/codex", "version": version,
                                                      "bin": {"codex": "bin/codex.js"}}))
    write_exe(package / "bin" / "codex.js",
              f'#!/bin/sh\nexec {sys.executable} -m wrapagent.commands.demo_agent "$@"\n')
    bindir = folder / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    (bindir / "codex").symlink_to(package / "bin" / "codex.js")
    return bindir


def test_a_session_by_the_generic_rule_is_shown_and_reported(tmp_path: Path) -> None:
    """A real session of a known tool whose markers never show: the record names the rule and the
    release; `sessions show` and `doctor` say what it means."""
    import subprocess
    import sys
    import time

    import pexpect

    from demo_sessions import wait_until_armed

    bindir = fake_codex(tmp_path / "npm")
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "wrapagent"
    config.mkdir(parents=True)
    (config / "hooks.toml").write_text('[[prompt_guard]]\nname = "g"\ncommand = "echo guard says hi"\n')
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "TERM": "xterm"}
    child = pexpect.spawn(sys.executable, ["-m", "wrapagent", "codex"], env=env, cwd=str(project),
                          dimensions=(30, 100), timeout=30)
    try:
        child.expect("demo> ")
        wait_until_armed(Path(env["XDG_STATE_HOME"]))
        child.send("hello")
        time.sleep(0.2)
        child.send("\r")
        child.expect("end of message 1")
        child.send("/quit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    (record,) = sessions_cmd.all_records(env)
    assert record["transport"] == "codex" and record["injection"]["status"] == "submitted"
    assert record["injection"]["ready_by"] == "generic"
    assert record["tool_version"] == "0.140.0"
    shown = render_show(record, None)
    assert "  version     0.140.0\n" in shown
    assert "(generic rule: codex's own markers did not show)" in shown
    report = doctor.collect(cwd=project, env=env)
    (finding,) = [f for f in report["findings"] if "screen changed" in f["message"]]
    assert finding["level"] == "info"
    assert finding["message"].startswith(f"your codex's screen changed (codex 0.140.0): wrapagent did not see the "
                                         f"ready markers it knows for codex in your last session with it "
                                         f"({record['id']})")


def test_probe_of_a_known_tool_recognised_only_by_the_generic_rule(tmp_path: Path) -> None:
    from wrapagent.commands import doctor_probe

    bindir = fake_codex(tmp_path / "npm", "0.139.2")
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    result = doctor_probe.probe("codex", timeout=60, env=env)
    assert result["ready"] is True, result["screen"]
    assert (result["ready_by"], result["tool_version"]) == ("generic", "0.139.2")
    text = doctor_report.render_probe(result)
    assert "  version       0.139.2\n" in text
    assert "by the generic rule (wrapagent would inject" in text
    assert "  note          your codex's screen changed (codex 0.139.2): " in text


def test_probe_of_the_demo_names_its_markers() -> None:
    from wrapagent.commands import doctor_probe

    result = doctor_probe.probe("demo", timeout=60)
    assert (result["ready"], result["ready_by"], result["tool_version"]) == (True, "marker", None)
    text = doctor_report.render_probe(result)
    assert "by its own screen markers" in text and "\n  version " not in text  # the demo is wrapagent itself


def test_the_demo_records_wrapagents_release_and_an_unknown_tool_none(tmp_path: Path) -> None:
    """The demo agent is wrapagent's own; `sh` (no adapter, no package) is never asked `--version`."""
    import subprocess
    import sys

    import wrapagent

    env = dict(os.environ)
    subprocess.run([sys.executable, "-m", "wrapagent", "demo", "-p"], input=b"hi\n", env=env, cwd=tmp_path,
                   capture_output=True, timeout=60, check=True)
    subprocess.run([sys.executable, "-m", "wrapagent", "sh", "-c", "exit 3"], env=env, cwd=tmp_path,
                   stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    sh, demo = sessions_cmd.all_records(env)
    assert (demo["tool"], demo["tool_version"]) == ("demo", wrapagent.__version__)
    assert (sh["tool"], sh["tool_version"], sh["exit_code"]) == ("sh", None, 3)
