"""`wrapagent doctor`: the report on a real recorded session, and `--probe` on the demo and fake TUIs.

The module fixture records one interactive demo session (guard "g" injected),
then breaks the global config.toml, adds an untrusted project hooks file, a
fake `codex` printing a version and a bash alias for it. PATH holds only the
fake tools and `git`/`sh`, so the other agents are "not found".
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from wrapagent.commands import doctor, doctor_probe, doctor_report
from wrapagent import paths
from wrapagent.hooks.trust import TrustStore

from demo_sessions import WRAPAGENT, interactive_demo_session
GUARD_TOML = '[[prompt_guard]]\nname = "g"\ncommand = "echo guard says hi"\n'
BROKEN_CONFIG = '[hooks.pre_session]\ncommand = "echo x"\ntransports = [codex]\n'  # line 3: bare word
PROJECT_HOOKS = '[[prompt_guard]]\nname = "proj-guard"\ncommand = "echo from the project"\n'


def write_exe(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def isolated_env(base: Path, path_dirs: list[Path]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WRAPAGENT_", "XDG_"))}
    env.update(HOME=str(base / "home"), XDG_CONFIG_HOME=str(base / "config"),
               XDG_STATE_HOME=str(base / "state"), XDG_DATA_HOME=str(base / "data"),
               TERM="xterm", GIT_CONFIG_NOSYSTEM="1", SHELL="/bin/bash",
               PATH=os.pathsep.join(str(d) for d in path_dirs))
    for key in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    return env


def system_bin(base: Path) -> Path:
    """A PATH folder with just what wrapagent needs around the agents: git and sh."""
    folder = base / "sysbin"
    folder.mkdir()
    for name in ("git", "sh"):
        found = shutil.which(name)
        assert found, f"{name} is needed for these tests"
        (folder / name).symlink_to(found)
    return folder


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("doctor_world")
    fakebin = base / "fakebin"
    fakebin.mkdir()
    write_exe(fakebin / "codex", '#!/bin/sh\necho "codex-cli 9.9.9"\necho "second line"\n')
    env = isolated_env(base, [fakebin, system_bin(base)])
    cfg_dir = Path(env["XDG_CONFIG_HOME"]) / "wrapagent"
    cfg_dir.mkdir()
    (cfg_dir / "hooks.toml").write_text(GUARD_TOML)
    project = base / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True, env=env)
    project = project.resolve()
    interactive_demo_session(env, project)
    # Now break things the way users do.
    (cfg_dir / "config.toml").write_text(BROKEN_CONFIG)
    (project / ".wrapagent").mkdir()
    (project / ".wrapagent" / "hooks.toml").write_text(PROJECT_HOOKS)
    Path(env["HOME"], ".bashrc").write_text("# my rc\nalias ll='ls -l'\nalias codex='wrapagent codex'\n")
    from wrapagent.commands.sessions import project_records

    (last,) = project_records(project, env)
    return {"env": env, "project": project, "cfg_dir": cfg_dir, "fakebin": fakebin, "last": last,
            "base": base}


@pytest.fixture(scope="module")
def report(world: dict) -> dict:
    return doctor.collect(cwd=world["project"], env=world["env"])


@pytest.fixture(scope="module")
def text(report: dict) -> str:
    return doctor_report.render(report)


def section(text: str, title: str) -> str:
    return text.split(f"\n{title}", 1)[1].split("\n\n", 1)[0]


# --------------------------------------------------------------------------- config layers


def test_layers_with_problems_and_trust(world: dict, text: str) -> None:
    layers = section(text, "Config layers:")
    cfg_dir, project = world["cfg_dir"], world["project"]
    assert f"global hooks   {cfg_dir / 'hooks.toml'}\n                 used\n" in layers
    assert f"global config  {cfg_dir / 'config.toml'}\n                 not used: 1 error(s)\n" in layers
    assert f"error: {cfg_dir / 'config.toml'}:3: invalid TOML: Invalid value (at line 3" in layers
    assert f"project hooks  {project / '.wrapagent' / 'hooks.toml'}\n" \
           "                 not used: untrusted (trust: untrusted)" in layers


def test_merged_hooks_and_guards_per_tool(text: str) -> None:
    lifecycle = section(text, "Lifecycle hooks (all tools):")
    assert "pre_run           (none)" in lifecycle
    assert "session_complete  cd {sessions_root}" in lifecycle and "from built-in default" in lifecycle
    assert "pre_session       (none)" in lifecycle  # its file is broken, so none is in effect
    guards = section(text, "Prompt guards (all tools, into the first message):")
    assert "1. g: command echo guard says hi" in guards
    for tool in ("codex", "claude", "gemini", "opencode"):
        assert f"    {tool:<9} guards g\n" in guards + "\n"


def test_tools_found_missing_version_alias(world: dict, text: str) -> None:
    tools = section(text, "Tools:")
    assert f"  codex     {world['fakebin'] / 'codex'}\n            version: 9.9.9\n" in tools
    assert "shim: none" in tools
    assert "alias: alias codex='wrapagent codex'  (~/.bashrc:3)" in tools
    assert "wrapped when you type `codex`: yes in interactive shells (alias)" in tools
    for missing in ("claude", "gemini", "opencode"):
        assert f"  {missing:<9} not found on PATH\n" in tools + "\n"


def test_sessions_repo_and_last_session(world: dict, text: str) -> None:
    sessions = section(text, "Sessions (this project):")
    root = paths.sessions_root(world["project"], world["env"])
    assert f"root      {root}" in sessions
    assert "git       repository, 2 commit(s), clean" in sessions
    assert "sessions  1" in sessions
    last = section(text, "Last session: ")
    from wrapagent import __version__

    assert last.startswith(f"{world['last']['id']} (demo {__version__}, ")  # the release that ran
    assert "injection: submitted (path interactive, tool ready after" in last
    rows = [line.split() for line in last.split("hooks:\n", 1)[1].splitlines()]
    assert rows[0][:3] == ["NAME", "KIND", "EXIT"]
    assert [r[:3] for r in rows[1:]] == [["g", "guard", "0"], ["session_complete", "lifecycle", "0"]]


def test_findings_name_the_causes(world: dict, text: str) -> None:
    findings = text.split("\nFindings:\n", 1)[1]
    lines = findings.splitlines()
    assert any(line.startswith(f"  error: global config {world['cfg_dir'] / 'config.toml'} has 1 error(s)")
               and ":3: invalid TOML" in line for line in lines)
    hooks_file = world["project"] / ".wrapagent" / "hooks.toml"
    assert any(line.startswith(f"  warning: project hooks {hooks_file} is not trusted")
               and f"`wrapagent trust {hooks_file}`" in line for line in lines)
    assert not any("claude" in line for line in lines)  # a tool that is not installed is no problem


def test_trusting_the_project_file_changes_the_report(world: dict) -> None:
    hooks_file = world["project"] / ".wrapagent" / "hooks.toml"
    store = TrustStore(env=world["env"])
    store.trust(hooks_file, hooks_file.read_bytes())
    try:
        rep = doctor.collect(cwd=world["project"], env=world["env"])
    finally:
        store.revoke(hooks_file)
    project_layer = rep["layers"][2]
    assert (project_layer["status"], project_layer["trust"], project_layer["used"]) == ("used", "trusted", True)
    assert [g["name"] for g in rep["hooks"]["guards"]] == ["proj-guard"]  # the project list replaces
    assert not any("not trusted" in f["message"] for f in rep["findings"])


def test_json_through_the_cli(world: dict) -> None:
    proc = subprocess.run([*WRAPAGENT, "doctor", "--json"], env=world["env"], cwd=world["project"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1, proc.stderr  # config errors
    data = json.loads(proc.stdout)
    assert data["project_root"] == str(world["project"])
    kinds = [(layer["kind"], layer["exists"], layer["used"]) for layer in data["layers"]]
    assert kinds == [("global-hooks", True, True), ("global-config", True, False),
                     ("project-hooks", True, False)]
    problem = data["layers"][1]["problems"][0]
    assert (problem["severity"], problem["line"]) == ("error", 3)
    assert data["layers"][2]["trust"] == "untrusted"
    assert [g["name"] for g in data["hooks"]["guards"]] == ["g"]
    assert data["hooks"]["guards"][0]["tools"] == "all"
    tools = {t["name"]: t for t in data["tools"]}
    assert tools["codex"]["found"] and tools["codex"]["version"] == "9.9.9"
    assert tools["codex"]["alias"]["state"] == "alias" and tools["codex"]["wrapped"] == "alias"
    assert not tools["claude"]["found"] and "command not found" in tools["claude"]["error"]
    assert data["sessions"]["git"]["repo"] and data["sessions"]["git"]["commits"] == 2
    assert data["last_session"]["id"] == world["last"]["id"]
    assert data["last_session"]["injection"]["status"] == "submitted"
    assert {f["level"] for f in data["findings"]} >= {"error", "warning"}


def test_fresh_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = isolated_env(tmp_path, [system_bin(tmp_path)])
    rep = doctor.collect(cwd=tmp_path, env=env)
    assert rep["last_session"] is None and rep["sessions"]["exists"] is False
    # nothing to inject; no coding CLI installed: what to install, or the demo
    assert [f["level"] for f in rep["findings"]] == ["warning", "warning"]
    assert "wrapagent demo" in rep["findings"][1]["message"] and "npm install" in rep["findings"][1]["message"]
    text = doctor_report.render(rep)
    assert "Last session: (none for this project)" in text
    assert "(the folder does not exist yet" in text
    assert "Prompt guards: (none)" in text
    # warnings only: exit 0
    for key in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "PATH", "SHELL"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    assert doctor.main([], out=out) == 0
    assert out.getvalue() == text


# --------------------------------------------------------------------------- aliases, versions


def test_alias_detection(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "SHELL": "/usr/bin/zsh"}
    (home / ".zshrc").write_text('# alias codex=nope\neval "$(wrapagent init zsh)"\nalias gemini="gemini --yolo"\n')
    found = doctor.find_aliases(["codex", "gemini"], env)
    assert found["codex"]["state"] == "init" and found["codex"]["line"] == 2
    assert found["gemini"]["state"] == "alias" and found["gemini"]["wraps"] is False
    assert doctor._wrapped({"shim": {}, "alias": found["gemini"]}) == "no"

    fish = tmp_path / "home" / ".config" / "fish"
    fish.mkdir(parents=True)
    (fish / "config.fish").write_text("alias codex 'wrapagent codex'\n")
    found = doctor.find_aliases(["codex"], {"HOME": str(home), "SHELL": "/usr/bin/fish"})
    assert found["codex"]["state"] == "alias" and found["codex"]["wraps"]

    unknown = doctor.find_aliases(["codex"], {"HOME": str(home), "SHELL": "/bin/tcsh"})
    assert unknown["codex"]["state"] == "unknown"
    assert doctor_report._alias_text(unknown["codex"]) == "unknown (aliases live in your shell)"


def test_version_of_a_hanging_tool_times_out(tmp_path: Path) -> None:
    tool = write_exe(tmp_path / "gemini", f"#!/bin/sh\necho $$ > {tmp_path}/gemini.pid\nexec sleep 120\n")
    result = doctor.tool_version(str(tool), dict(os.environ), timeout=0.5)
    # The timeout ended it, not the `sleep 120`: the hanging tool is gone.
    pid = int((tmp_path / "gemini.pid").read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert result == {"version": None, "source": None, "error": "`gemini --version` did not finish within 0.5s"}
    broken = write_exe(tmp_path / "claude", "#!/bin/sh\necho 'oops: no such flag' >&2\nexit 2\n")
    assert doctor.tool_version(str(broken), dict(os.environ)) == {
        "version": None, "source": None, "error": "`claude --version` printed no version number (exit 2)"}


# --------------------------------------------------------------------------- --probe


def test_probe_demo_json_through_the_cli() -> None:
    proc = subprocess.run([*WRAPAGENT, "doctor", "--probe", "demo", "--json"], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ready"] is True
    assert 0 < data["ready_after_s"] < 10
    assert data["markers"] == [{"pattern": "(?m)^demo>", "on_screen": True}]
    assert data["bracketed_paste"] is True
    quit_info = data["quit"]
    assert quit_info["keys_sent"] == 1 and quit_info["exit_code"] == 0
    assert not quit_info["sigterm"] and not quit_info["sigkill"]


def test_probe_demo_text() -> None:
    out = io.StringIO()
    assert doctor.main(["--probe", "demo"], out=out) == 0
    text = out.getvalue()
    assert text.startswith("Probe: demo\n")
    assert "  readiness     FIRED after " in text
    assert "  marker        '(?m)^demo>': on screen" in text
    assert "  quit          sent '\\x04'; exit code 0" in text


def test_probe_says_which_kind_of_program() -> None:
    """The demo agent gets typed input; a shell does not (its readiness may fire all the same)."""
    out = io.StringIO()
    assert doctor.main(["--probe", "demo"], out=out) == 0
    assert "  kind          agent (built in): wrapagent types its blocks" in out.getvalue()
    result = doctor_probe.probe("sh", timeout=5)
    assert result["kind"] == "shell, REPL or editor" and result["types_input"] is False
    text = doctor_report.render_probe(result)
    assert "nothing typed into it" in text
    assert "wrapagent would inject" not in text


FAKE_GEMINI = r'''#!{python}
import os, select, sys, tty
fd = sys.stdin.fileno()
tty.setraw(fd)
os.write(1, b"abc\x1b[6n")          # where is the cursor? (a terminal must answer)
reply = b""
while not reply.endswith(b"R"):
    if not select.select([fd], [], [], 3)[0]:
        break
    reply += os.read(fd, 32)
os.write(1, b"\r\ncursor reply: " + repr(reply).encode() + b"\r\n")
os.write(1, b"\x1b[?2004h> Type your message or @path/to/file\r\n")
seen = 0
while seen < 2:
    seen += os.read(fd, 64).count(b"\x03")
os.write(1, b"\x1b[?2004l")
sys.exit(0)
'''


def test_probe_answers_terminal_queries_and_quits_with_the_adapter_keys(tmp_path: Path) -> None:
    write_exe(tmp_path / "gemini", FAKE_GEMINI.replace("{python}", sys.executable))
    env = {**os.environ, "PATH": str(tmp_path)}
    result = doctor_probe.probe("gemini", timeout=60, env=env)  # returns once ready
    assert result["error"] is None and result["ready"] is True, result["screen"]
    assert result["queries_answered"] == 1
    assert r"cursor reply: b'\x1b[1;4R'" in result["screen"]  # row 1, after "abc"
    assert result["quit"]["keys_sent"] == 2 and result["quit"]["exit_code"] == 0
    assert not result["quit"]["sigterm"]


def test_probe_not_ready_shows_the_screen_and_terminates(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    write_exe(tmp_path / "opencode",
              "#!/bin/sh\ntrap '' INT\nprintf 'Loading opencode, please wait...\\r\\n'\n"
              "while :; do sleep 0.1; done\n")
    monkeypatch.setattr(doctor_probe, "QUIT_WAIT_SECS", 0.3)
    env = {**os.environ, "PATH": f"{tmp_path}:/usr/bin:/bin"}
    result = doctor_probe.probe("opencode", ["--some-arg"], timeout=1.0, env=env)
    assert result["argv"] == [str(tmp_path / "opencode"), "--some-arg"]
    assert result["ready"] is False and result["ready_after_s"] is None
    assert "Loading opencode, please wait..." in result["screen"]
    assert result["markers"] == [{"pattern": "Ask anything", "on_screen": False}]
    assert result["bracketed_paste"] is False
    q = result["quit"]
    assert q["keys_sent"] == 1 and q["sigterm"] and not q["sigkill"]
    assert (q["exit_code"], q["signal"]) == (143, 15)
    text = doctor_report.render_probe(result)
    assert "  readiness     NOT FIRED (within 1s" in text
    assert "  marker        'Ask anything': NOT on screen" in text
    assert "  paste mode    bracketed paste NEVER enabled" in text
    assert "still running: SIGTERM; exit code 143 (signal 15)" in text
    assert "  | Loading opencode, please wait..." in text


def test_probe_tool_exiting_before_ready_keeps_its_last_words(tmp_path: Path) -> None:
    write_exe(tmp_path / "codex", "#!/bin/sh\necho 'error: not logged in'\nexit 4\n")
    result = doctor_probe.probe("codex", timeout=60, env={**os.environ, "PATH": str(tmp_path)})
    assert result["ready"] is False
    assert result["quit"]["exited_before_quit"] and result["quit"]["exit_code"] == 4
    assert result["screen"].splitlines()[0] == "error: not logged in"
    text = doctor_report.render_probe(result)
    assert "  readiness     NOT FIRED (the tool exited first)" in text
    assert "  exit          the tool exited by itself with code 4" in text
    assert "  | error: not logged in" in text


def test_probe_survives_output_the_emulator_chokes_on(tmp_path: Path) -> None:
    # gemini 0.61 writes `CSI > 4 ; ? m` (XTQMODKEYS query) at start-up.
    write_exe(tmp_path / "weirdtool",
              "#!/bin/sh\nprintf '\\033[>4;?m\\033[?2004hready> '\nexec sleep 30\n")
    env = {**os.environ, "PATH": f"{tmp_path}:/usr/bin:/bin"}
    result = doctor_probe.probe("weirdtool", timeout=60, env=env)
    assert result["started"] and result["quit"]["exit_code"] is not None
    if result["emulator_error"] is not None:
        assert result["ready"] is False and "TypeError" in result["emulator_error"]
        assert "screen emulator failed" in doctor_report.render_probe(result)
    else:
        assert result["ready"] is True


def test_probe_missing_tool(tmp_path: Path) -> None:
    result = doctor_probe.probe("claude", env={**os.environ, "PATH": str(tmp_path)})
    assert result["started"] is False and result["ready"] is False
    assert result["error"].startswith("claude: command not found")
    assert doctor_report.render_probe(result).startswith("Probe: claude\n  error         claude: command not found")


def test_option_errors() -> None:
    for args in (["--timeout", "5"], ["--", "x"], ["--probe", "demo", "--timeout", "0"]):
        with pytest.raises(SystemExit) as exc:
            doctor.main(args, out=io.StringIO())
        assert exc.value.code == 2


# --------------------------------------------------------------------------- whole-session settings

GLOBAL_WHOLE_SESSION = """
[stop_check]
command = "make test"
max_continues = 2
quiet_secs = 4.5

[send]
enabled = true
"""
PROJECT_WHOLE_SESSION = """
[stop_check]
command = "./ci-check --fast"

[send]
enabled = false
"""


def test_stop_check_and_send_per_layer_global_and_untrusted_project(tmp_path: Path) -> None:
    env = isolated_env(tmp_path, [system_bin(tmp_path)])
    cfg_dir = Path(env["XDG_CONFIG_HOME"]) / "wrapagent"
    cfg_dir.mkdir()
    (cfg_dir / "hooks.toml").write_text(GLOBAL_WHOLE_SESSION)
    project = tmp_path / "proj"
    (project / ".wrapagent").mkdir(parents=True)
    (project / ".wrapagent" / "hooks.toml").write_text(PROJECT_WHOLE_SESSION)
    subprocess.run(["git", "init", "-q", str(project)], check=True, env=env)
    rep = doctor.collect(cwd=project.resolve(), env=env)
    glob, _, proj = rep["layers"]
    assert glob["stop_check"] == {"enabled": True, "command": "make test", "max_continues": 2,
                                  "quiet_secs": 4.5, "timeout_secs": 300.0}
    assert glob["send"] is True
    assert proj["stop_check"]["command"] == "./ci-check --fast" and proj["stop_check"]["max_continues"] == 3
    assert proj["stop_check"]["quiet_secs"] is None and proj["send"] is False
    assert (proj["used"], proj["trusted"]) == (False, False)
    layers = section(doctor_report.render(rep), "Config layers:")
    pad = " " * 17
    assert (f"{pad}used\n{pad}[stop_check] make test\n"
            f"{pad}  max_continues 2, quiet_secs 4.5s, timeout 300s\n{pad}[send] enabled\n") in layers + "\n"
    assert (f"{pad}not used: untrusted (trust: untrusted)\n"
            f"{pad}[stop_check] ./ci-check --fast (not applied: the file is not trusted)\n"
            f"{pad}  max_continues 3, quiet_secs the tool's default, timeout 300s\n"
            f"{pad}[send] disabled (not applied: the file is not trusted)") in layers
    proc = subprocess.run([*WRAPAGENT, "doctor", "--json"], env=env, cwd=project, capture_output=True,
                          text=True, timeout=30)
    data = json.loads(proc.stdout)
    assert [(layer["stop_check"] or {}).get("command") for layer in data["layers"]] == \
        ["make test", None, "./ci-check --fast"]
    assert [layer["send"] for layer in data["layers"]] == [True, None, False]


def test_last_session_counts_continuations_and_sends() -> None:
    record = {
        "id": "01JZ", "tool": "claude", "started_at": "2026-11-23T10:00:00+00:00", "exit_code": 0,
        "injection": {"status": "none"}, "hooks": [],
        "stop_check": {"command": "make test", "max_continues": 2, "runs": [{}, {}, {}],
                       "continuations": [{}, {}], "not_sent": [{"status": "cancelled"}],
                       "interrupted": [4], "still_failing": {"turn": 3, "after_continues": 2}},
        "sent": [{"status": "delivered"}, {"status": "not delivered", "reason": "the session ended"},
                 {"status": "delivered"}],
    }
    last = doctor._last_session_facts(record)
    assert last["stop_check"] == {"runs": 3, "continuations": 2, "not_sent": 1, "interrupted": 1,
                                  "still_failing": True}
    assert last["sends"] == {"total": 3, "delivered": 2, "not_delivered": 1, "reasons": ["the session ended"]}
    rep = {"wrapagent": "x", "python": "3", "project_root": "/p", "layers": [],
           "hooks": {"lifecycle": {}, "pre_session": None, "guards": [], "injects": {}}, "tools": [],
           "sessions": {"root": "/r", "exists": False}, "last_session": last, "findings": []}
    from wrapagent.commands.doctor_findings import findings

    rep["sessions"]["git"] = {}
    warned = [f["message"] for f in findings(rep, {}) if f["level"] == "warning"]
    assert any("did not deliver 1 message(s) from `wrapagent send` (the session ended)" in m for m in warned)
    text = doctor_report.render(rep)
    assert ("  stop check: 3 run(s), 2 continuation(s), 1 not sent, 1 stop(s) after the user interrupted, "
            "still failing when let stop\n") in text
    assert "  sends: 3 message(s), 2 delivered, 1 NOT delivered (the session ended)\n" in text
    quiet = doctor._last_session_facts({"id": "01K", "injection": {}})
    assert (quiet["stop_check"], quiet["sends"]) == (None, None)
